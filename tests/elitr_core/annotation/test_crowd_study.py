"""A live crowd study (issue 31): pools enforced on every way in, and the study's reports
(close count, exclusions) on both databases."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import func, select

from db.models import Annotator, Evaluator, Score
from db.transaction import reading, writing
from elitr_core.annotation.admin import add_annotator, add_study_annotator, close_study
from elitr_core.annotation.auth import AccessDenied
from elitr_core.annotation.quality import exclude_annotator, exclusion_report
from elitr_core.annotation.studies import (
    StudySpec,
    create_study,
    enter_with_token,
    join_prolific,
    queue_view,
    submit,
)
from elitr_core.cli.main import main
from elitr_core.data.database import open_database
from elitr_core.errors import UserError
from tests.elitr_core.annotation_data import build

PID, STUDY, SESSION = "a" * 24, "b" * 24, "c" * 24


@pytest.fixture
def url(db_url: str) -> str:
    build(db_url, questions=3)
    return db_url


def _create(url: str, name: str, pool: str, **kw: object) -> None:
    spec = StudySpec(**{"name": name, "pool": pool, "per_item": 2, **kw})  # type: ignore[arg-type]
    with writing(open_database(url)) as session:
        create_study(session, spec)


def _count(url: str, what: object) -> int:
    with reading(open_database(url)) as session:
        return int(session.execute(select(func.count()).select_from(what)).scalar_one())


def test_a_gold_study_refuses_prolific_joins_on_every_way_in(url: str) -> None:
    _create(url, "experts", "gold")
    engine = open_database(url)
    for _attempt in range(2):  # a first join and a retry (a resume or a second tab) alike
        with pytest.raises(AccessDenied, match="not open to Prolific participants"):
            join_prolific(engine, "experts", PID, STUDY, SESSION)
    assert _count(url, Annotator) == 0  # nothing was created on the way to the refusal
    with writing(engine) as session:
        silver_token = add_annotator(session, "crowd", "silver")
        gold_token, pool = add_study_annotator(session, "expert", "experts")
    assert pool == "gold"
    with pytest.raises(AccessDenied, match="does not give access"):
        enter_with_token(engine, silver_token, "experts")
    entry = enter_with_token(engine, gold_token, "experts")
    assert entry == enter_with_token(engine, gold_token)  # resuming without study= alike
    _create(url, "crowd", "silver")
    assert join_prolific(engine, "crowd", PID, STUDY, SESSION).prolific


def test_study_create_gold_prints_no_prolific_url(
        url: str, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--per-item", "2", "--split", "test2", "--db", url]
    assert main(["study", "create", "--name", "experts", "--pool", "gold", *base]) == 0
    out = capsys.readouterr().out
    assert "PROLIFIC_PID" not in out and "Prolific URL:" not in out
    assert "--study experts" in out
    assert main(["annotator", "add", "--name", "e1", "--study", "experts", "--db", url]) == 0
    out = capsys.readouterr().out
    assert "(gold pool)" in out and "study experts" in out
    token = re.search(r"\?token=([\w-]+)&study=experts", out).group(1)  # type: ignore[union-attr]
    assert enter_with_token(open_database(url), token).study_name == "experts"
    assert main(["annotator", "add", "--name", "e2", "--study", "experts", "--pool", "silver",
                 "--db", url]) == 2
    assert "gold study" in capsys.readouterr().err


def _finish(url: str, entry: object) -> None:
    engine = open_database(url)
    view = queue_view(engine, entry)  # type: ignore[arg-type]
    for position in range(view.total):
        submit(engine, entry, position, 5 + position % 3, seconds=9.0)  # type: ignore[arg-type]


def test_close_reports_the_aggregates_it_stored(url: str) -> None:
    _create(url, "crowd", "silver", per_item=1)
    engine = open_database(url)
    entries = [join_prolific(engine, "crowd", p * 24, STUDY, s * 24)
               for p, s in (("1", "2"), ("3", "4"))]
    for entry in entries:
        _finish(url, entry)
    with writing(engine) as session:
        stored = close_study(session, "crowd")
    with reading(engine) as session:
        rows = session.execute(select(func.count()).select_from(Score).join(Evaluator).where(
            Evaluator.slug == "silver-human:crowd", Score.annotator_key == 0)).scalar_one()
    assert stored == rows == 18  # PostgreSQL reported -1 (an INSERT ... SELECT's rowcount)


def test_excluding_twice_is_refused_and_a_closed_study_promises_no_replacement(
        url: str) -> None:
    _create(url, "crowd", "silver", per_item=1)
    engine = open_database(url)
    _finish(url, join_prolific(engine, "crowd", PID, STUDY, SESSION))
    name = f"prolific-{PID}"
    with writing(engine) as session:
        assert exclude_annotator(session, "crowd", name) == 9
        assert "open for a replacement" in exclusion_report(session, "crowd", name, 9)
    with pytest.raises(UserError, match="excluded in study crowd already"), \
            writing(engine) as session:
        exclude_annotator(session, "crowd", name)
    _create(url, "closed", "silver", per_item=1)
    _finish(url, join_prolific(engine, "closed", "d" * 24, STUDY, "e" * 24))
    with writing(engine) as session:
        close_study(session, "closed")
    with writing(engine) as session:
        assert exclude_annotator(session, "closed", "prolific-" + "d" * 24) == 9
        report = exclusion_report(session, "closed", "prolific-" + "d" * 24, 9)
    assert "replacement" not in report.split(".")[0] and "nobody replaces them" in report
    with pytest.raises(UserError, match="already"), writing(engine) as session:
        exclude_annotator(session, "closed", "prolific-" + "d" * 24)


def test_an_open_study_s_aggregate_holds_unfinished_tasks(url: str) -> None:
    """Answers of a task not yet finished are in the aggregate at once (it was refreshed only
    when a whole task was finished: 18 of 120 behind), and revising an answer moves it."""
    _create(url, "crowd", "silver", per_item=2, attention_rate=0.0)
    engine = open_database(url)
    first = join_prolific(engine, "crowd", "1" * 24, STUDY, "2" * 24)
    submit(engine, first, 0, 4)
    submit(engine, first, 1, 8)
    assert _aggregates(url) == [4.0, 8.0]
    submit(engine, first, 1, 6)  # a revision
    assert _aggregates(url) == [4.0, 6.0]


def _aggregates(url: str) -> list[float]:
    with reading(open_database(url)) as session:
        return sorted(session.execute(
            select(Score.value).join(Evaluator).where(
                Evaluator.slug == "silver-human:crowd", Score.annotator_key == 0))
            .scalars().all())
