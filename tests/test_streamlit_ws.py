"""The websocket client of ``tests.streamlit_ws`` drives the real server's annotate page:
a token link logs in, the tour closes, a digit and Submit store a score and show the next item,
a comment typed into the text input is stored with its answer and shown again on the way back."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from db.models import Assignment, Score
from db.transaction import reading, writing
from elitr_core.annotation.admin import add_annotator
from elitr_core.annotation.studies import StudySpec, create_study
from elitr_core.data.database import open_database
from tests.browser.conftest import running_server
from tests.conftest import _init_bundled
from tests.streamlit_ws import Session


@pytest.fixture(params=["sqlite", "postgresql"])
def study_db(request: pytest.FixtureRequest) -> str:
    """The bundled data with one 12-item study, on SQLite and on PostgreSQL."""
    if request.param == "sqlite":
        url = str(request.getfixturevalue("bundled_sqlite"))
    else:
        url = str(request.getfixturevalue("pg_url"))
        _init_bundled(url)
    with writing(open_database(url)) as session:
        create_study(session, StudySpec(name="ws", per_item=1, split="test2", setting="qa",
                                        mode="st", models=("GPT-4",),
                                        meetings=("meeting_en_test2_001",)))
    return url


@pytest.fixture
def server(study_db: str, tmp_path: Path) -> Iterator[str]:
    with running_server(study_db, tmp_path / "streamlit.log") as url:
        yield url


def _scores(url: str) -> list[tuple[int, float | None]]:
    with reading(open_database(url)) as session:
        rows = session.execute(
            select(Assignment.position, Score.value)
            .join(Score, (Score.response_id == Assignment.response_id)
                  & (Score.annotator_key == Assignment.annotator_id))
            .order_by(Assignment.position)).all()
    return [(p, v) for p, v in rows]


async def _score_two(server: str, token: str) -> list[str]:
    async with await Session.open(server, query=f"token={token}") as s:
        assert "Scoring with the keyboard" in s.page.text()  # the first visit's walkthrough
        page = await s.click("annotate-tour-done")
        assert "Item 1 of 12 · Question" in page.text() and not page.exceptions
        assert "No score picked yet." in page.text()
        page = await s.click("annotate-submit")  # Enter before a digit: told to pick first
        assert "Pick a score from 1 to 10 first" in page.text()
        page = await s.click("annotate-pick-7")  # the pick clears that message
        assert "Your score: 7" in page.text() and "Pick a score" not in page.text()
        assert page.widget("annotate-pick-7").proto.type == "primary"
        page = await s.click("annotate-submit")
        seen = [page.text()]
        page = await s.set_value("annotate-comment-1", "too long")
        await s.click("annotate-pick-10")
        page = await s.click("annotate-submit")
        seen.append(page.text())
        page = await s.click("annotate-back")  # item 2 again: its answer and comment
        assert "Item 2 of 12 · Question" in page.text()
        assert page.widget("annotate-pick-10").proto.type == "primary"
        comment = page.widget("annotate-comment-1").proto
        assert (comment.value if comment.set_value else comment.default) == "too long"
        return seen


def test_client_scores_items_through_the_server(study_db: str, server: str) -> None:
    with writing(open_database(study_db)) as session:
        token = add_annotator(session, "ws-client", "silver")
    after_first, after_second = asyncio.run(_score_two(server, token))
    assert "Item 2 of 12 · Question" in after_first and "1 of 12 items scored" in after_first
    assert "Item 3 of 12 · Question" in after_second and "2 of 12 items scored" in after_second
    assert "GPT-4" not in after_first + after_second
    assert _scores(study_db) == [(0, 7.0), (1, 10.0)]
