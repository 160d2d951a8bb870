"""AppTest: the home page and meeting browser render what the test database holds."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture
def app(bundled_sqlite: str, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("DATABASE_URL", bundled_sqlite)
    return AppTest.from_file(APP, default_timeout=120)


def test_home_shows_counts(app: AppTest) -> None:
    app.run()
    assert not app.exception
    metrics = {m.label: m.value for m in app.metric}
    assert metrics == {"Meetings": "18", "Questions": "271", "Runs": "50",
                       "Responses": "6,775", "Scores": "7,945", "Transcripts": "0"}
    assert "18 of 18 transcripts missing" in app.warning[0].value
    evaluators = app.dataframe[1].value
    assert dict(zip(evaluators["evaluator"], evaluators["scores"], strict=True)) == {
        "gold-human": 390, "gpt-4": 6775, "prometheus": 390, "silver-human": 390}


def test_meeting_browser(app: AppTest) -> None:
    app.run()
    app.switch_page("pages/meeting.py").run()
    assert not app.exception
    app.selectbox(key="meeting.selected").set_value("meeting_en_test2_001").run()
    assert "Preparation for a workshop" in app.success[0].value
    table = app.dataframe[0].value
    # test2 Q1 has QA-st (9 models), QA-mt and Conv-mt (8 each) responses
    assert len(table) == 25
    assert {"gpt-4", "gold-human", "silver-human", "prometheus"} <= set(table.columns)


def test_unreachable_database_is_a_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://nobody@127.0.0.1:9/x")
    app = AppTest.from_file(APP, default_timeout=60).run()
    assert not app.exception
    assert "cannot reach the database" in app.error[0].value


def _add_runs(url: str) -> None:
    """A retrieval variant of model A (``A (bm25)``) and a summary run of A, 6 responses each."""
    from sqlmodel import select

    from db.keyed import upsert
    from db.models import NO_SEED, Meeting, Question, Response, Run
    from elitr_core.data.database import open_database, writing

    with writing(open_database(url)) as session:
        keys = ["model", "setting", "mode", "split", "seed", "variant", "language"]
        upsert(session=session, table=Run, keys=keys, rows=[
            {"model": "A", "setting": setting, "mode": "st", "split": "test2", "seed": NO_SEED,
             "variant": variant, "language": "en", "backend": "import", "config": {},
             "status": "done"} for setting, variant in (("qa", "bm25"), ("summary", ""))])
        test2 = [q.id for q, m in session.exec(select(Question, Meeting).where(
            Question.meeting_id == Meeting.id, Meeting.split == "test2"))]
        runs = session.exec(select(Run).where(
            (Run.variant == "bm25") | (Run.setting == "summary"))).all()
        upsert(session=session, table=Response, keys=["run_id", "question_id"], rows=[
            {"run_id": run.id, "question_id": q, "meta": {}, "text": "an answer"}
            for run in runs for q in test2])


def test_home_lists_summary_runs_and_keeps_variants_apart(
        small_sqlite: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _add_runs(small_sqlite)
    monkeypatch.setenv("DATABASE_URL", small_sqlite)
    app = AppTest.from_file(APP, default_timeout=120).run()
    assert not app.exception
    table = app.dataframe[0].value
    assert {"A", "A (bm25)", "B", "C"} <= set(table.index)
    # the bm25 run is its own row: model A's plain QA-st test2 count is not 6 + 6
    assert table.loc["A", "QA-st test2"] == 6 and table.loc["A (bm25)", "QA-st test2"] == 6
    assert table.loc["A", "summary-st test2"] == 6
    assert table.loc["B", "summary-st test2"] == 0
