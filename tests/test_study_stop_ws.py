"""A study with a stopping rule, filled by Prolific participants over Streamlit's own websocket
protocol (``tests.streamlit_ws``, no browser), on SQLite and PostgreSQL (issue 42): it admits
participants until every model's confidence sequence meets the rule, then refuses the next
ones while those seated finish; every answer is stored once; the Studies page's Monitor
figure draws the sequences ``export study-monitor-sequences`` gives."""

from __future__ import annotations

import asyncio
import base64
import io
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import func, select

from db.models import Annotator, Participation, Score
from db.studies import study_by_name
from db.transaction import reading, writing
from elitr_core.annotation.stopping import monitor_inputs
from elitr_core.annotation.studies import StudySpec, create_study
from elitr_core.cli.main import main
from elitr_core.data.database import open_database
from elitr_core.stats.monitor import study_monitor
from tests.browser.conftest import running_server
from tests.elitr_core.annotation_data import MODELS, build
from tests.streamlit_ws import Session

QUESTIONS = 6  # 2 meetings x 6 questions x 3 models: 36 responses, 12 units of 3
RULE = 3.0  # about 5 scores of 5 and 6 per model
AT_ONCE = 2  # participants joining, then scoring, together


def _prolific(pid: str) -> str:
    return f"study=stop&PROLIFIC_PID={pid}&STUDY_ID={'b' * 24}&SESSION_ID={pid[::-1]}"


@pytest.fixture
def stop_db(db_url: str) -> str:
    build(db_url, questions=QUESTIONS)
    with writing(open_database(db_url)) as session:
        create_study(session, StudySpec(name="stop", per_item=1, assignment="random",
                                        batch=3, join_limit=0,
                                        stop_when=(f"half-width <= {RULE}",)))
    return db_url


@pytest.fixture
def server(stop_db: str, tmp_path: Path) -> Iterator[str]:
    with running_server(stop_db, tmp_path / "streamlit.log") as url:
        yield url


def _reached(url: str) -> bool:
    with reading(open_database(url)) as session:
        study = study_by_name(session=session, name="stop")
        assert study is not None
        obs, pop = monitor_inputs(session, study)
    now = study_monitor(obs, pop, {"human": RULE}, expected=False)
    return bool(now.loc[now["target"] == "human", "reached"].all())


async def _score(s: Session) -> int:
    """Answer every item of the participant's task (5, 6, 5, ...); the answers given."""
    page = await s.click("annotate-tour-done")
    given = 0
    while "Item " in page.text() and "Thank you" not in page.text():
        await s.click(f"annotate-pick-{5 + given % 2}")
        page = await s.click("annotate-submit")
        given += 1
    assert given == 3, page.text()
    return given


async def _fill(server: str, url: str) -> tuple[int, int, list[str]]:
    """Waves of participants until one is refused: (admitted, answers, refusals)."""
    admitted = answers = 0
    for wave in range(12):
        before = _reached(url)
        sessions = await asyncio.gather(*(
            Session.open(server, query=_prolific(f"{wave:012x}{i:012x}"))
            for i in range(AT_ONCE)))
        seated = [s for s in sessions if "Scoring with the keyboard" in s.page.text()]
        refused = [s.page.text() for s in sessions if s not in seated]
        # joins came before any of this wave's answers: all refused once reached, else none
        assert len(refused) == (AT_ONCE if before else 0), (wave, refused)
        answers += sum(await asyncio.gather(*(_score(s) for s in seated)))
        admitted += len(seated)
        await asyncio.gather(*(s.close() for s in sessions))
        if refused:
            return admitted, answers, refused
    raise AssertionError("the study never stopped admitting")


def _count(url: str, what: object, *where: object) -> int:
    with reading(open_database(url)) as session:
        return int(session.execute(select(func.count()).select_from(what).where(*where))
                   .scalar_one())


async def _monitor_figure(server: str) -> dict:  # type: ignore[type-arg]
    async with await Session.open(server, page="studies") as s:
        assert "Admits nobody new" in s.page.text()
        page = await s.set_value("studies.monitor.show", True)
        charts = [e for e in page.elements if e.kind == "plotly_chart"]
        assert len(charts) == 1, page.text()
        return json.loads(charts[0].proto.spec)  # type: ignore[no-any-return]


def test_a_study_stops_admitting_at_its_target_over_the_protocol(
        server: str, stop_db: str, capsys: pytest.CaptureFixture) -> None:
    admitted, answers, refused = asyncio.run(_fill(server, stop_db))
    assert all("has collected the scores it needs" in text for text in refused)
    assert _reached(stop_db) and 0 < answers < 36
    # every answer stored once, each response by one participant; nobody refused is left
    assert _count(stop_db, Score, Score.annotator_key != 0) == answers
    with reading(open_database(stop_db)) as session:
        per_response = session.execute(
            select(Score.response_id, func.count()).where(Score.annotator_key != 0)
            .group_by(Score.response_id)).all()
    assert {n for _, n in per_response} == {1} and len(per_response) == answers
    assert _count(stop_db, Participation) == admitted == answers // 3
    assert _count(stop_db, Annotator, Annotator.name.like("prolific-%")) == admitted
    # the page's figure draws the sequences of the export
    capsys.readouterr()
    assert main(["export", "study-monitor-sequences", "--db", stop_db, "--human",
                 "silver-human:stop"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    figure = asyncio.run(_monitor_figure(server))
    for model in MODELS:
        mine = table[(table["model"] == model) & (table["target"] == "human")]
        low, high = (_values(t["y"]) for t in figure["data"]
                     if t["name"] == f"{model}: sequence")  # the bounds, in that order
        assert len(mine) > 0
        assert low == pytest.approx(mine["cs_low"].tolist(), abs=1e-6)
        assert high == pytest.approx(mine["cs_high"].tolist(), abs=1e-6)


def _values(y: object) -> list[float]:
    """A trace's values: a list, or plotly's typed array ({"dtype", "bdata"} in base64)."""
    if isinstance(y, dict):
        return np.frombuffer(base64.b64decode(y["bdata"]), dtype=y["dtype"]).tolist()
    return [float(v) for v in y]  # type: ignore[union-attr]
