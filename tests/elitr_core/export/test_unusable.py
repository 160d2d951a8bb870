"""A model whose only human scores in a study lapsed or were excluded (issue 40, "a model
whose only scores lapsed vanishes without a word"), made through the annotation API on SQLite
and PostgreSQL: ``export unscored`` lists its rows with the participation's reason, and the
leaderboard and evaluator means keep the model as a row with ``n`` 0 and a note saying why."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
import pytest
from sqlalchemy import select, update

from db.models import Annotator, Assignment, Participation, Response, Run, utcnow
from db.runs import ScoreFilter
from db.transaction import reading, writing
from elitr_core.annotation.quality import exclude_annotator
from elitr_core.annotation.studies import Entry, StudySpec, create_study, join_prolific, submit
from elitr_core.data.database import open_database
from elitr_core.export.tables import build_table
from tests.elitr_core.annotation_data import MEETINGS, build

STUDY, SESSION = "b" * 24, "c" * 24
FIRST, SECOND = "1" * 24, "2" * 24
LOST = "Gamma-70B"  # the model whose every study score is the first annotator's
POOL = "silver-human:leased"


def study_db(db_url: str) -> str:
    """The synthetic benchmark and study "leased" at ``db_url``."""
    build(db_url, questions=2, meetings=MEETINGS[:1])  # 3 models x 2 questions, one seat
    with writing(open_database(db_url)) as session:
        create_study(session, StudySpec(name="leased", per_item=1, lease_minutes=30,
                                        join_limit=0, attention_rate=0.0))
    return db_url


@pytest.fixture
def url(db_url: str) -> str:
    return study_db(db_url)


def _positions(url: str, entry: Entry) -> dict[int, str]:
    """The annotator's queue: position -> the model of the response there."""
    with reading(open_database(url)) as session:
        rows = session.execute(
            select(Assignment.position, Run.model)
            .join(Response, Response.id == Assignment.response_id)
            .join(Run, Run.id == Response.run_id)
            .where(Assignment.participation_id.in_(
                select(Participation.id).where(Participation.annotator_id == entry.annotator_id)),
                Assignment.kind == "item"))
        return {int(p): str(m) for p, m in rows}


def lose_first_annotator(url: str, how: str) -> None:
    """The first annotator scores both of LOST's responses (and one more), then lapses (idle
    past the lease, a second arrival takes the seat) or is excluded; the second scores every
    response but LOST's."""
    engine = open_database(url)
    first = join_prolific(engine, "leased", FIRST, STUDY, SESSION)
    queue = _positions(url, first)
    mine = [p for p, m in queue.items() if m == LOST]
    mine.append(next(p for p, m in queue.items() if m != LOST))
    for position in mine:
        submit(engine, first, position, 3)
    with writing(engine) as session:
        if how == "lapsed":
            session.execute(update(Participation).values(
                last_seen_at=utcnow() - timedelta(minutes=31)))
        else:
            name = session.get(Annotator, first.annotator_id).name
            exclude_annotator(session, "leased", name, reason="answered at random")
    second = join_prolific(engine, "leased", SECOND, STUDY, SESSION)
    for position, model in _positions(url, second).items():
        if model != LOST:
            submit(engine, second, position, 8)


def _table(url: str, name: str) -> pd.DataFrame:
    with reading(open_database(url)) as session:
        return build_table(name, session, ScoreFilter(evaluators=(POOL,)))


@pytest.mark.parametrize(("how", "reason"), [("lapsed", "idle past the study's lease"),
                                             ("excluded", "answered at random")])
def test_a_model_whose_only_scores_are_unusable_is_noted(url: str, how: str,
                                                         reason: str) -> None:
    lose_first_annotator(url, how)
    unscored = _table(url, "unscored")
    assert set(unscored["status"]) == {how} and set(unscored["reason"]) == {reason}
    assert len(unscored) == 3 and (unscored["model"] == LOST).sum() == 2  # and one other

    board = _table(url, "leaderboard").set_index("model")
    assert set(board.index) == {"Alpha-7B", "Beta-13B", LOST}
    lost = board.loc[LOST]
    assert lost["n"] == 0 and pd.isna(lost["mean"]) and lost["n_seeds"] == 0
    assert lost["note"] == f"no usable score: 2 scores {how} ({reason}); see export unscored"
    assert (board.drop(LOST)["note"] == "").all()
    assert (board.drop(LOST)["mean"] == 8.0).all()

    means = _table(url, "evaluator-means").set_index("model")
    assert means.loc[LOST, "n"] == 0 and pd.isna(means.loc[LOST, "mean"])
    assert means.loc[LOST, "note"] == lost["note"]
    assert list(_table(url, "evaluator-means").columns)[-1] == "note"


def test_tables_pooling_models_name_the_model_they_left_out(url: str) -> None:
    """Correlation, calibration and the ICC have no row of a model to give: the
    note of each row reading the pool names the model left out and why; the gold-only rows
    and a model with usable scores are not named."""
    lose_first_annotator(url, "lapsed")
    expected = (f"{LOST} left out, no usable score: 2 scores lapsed (idle past the study's "
                "lease); see export unscored")
    with reading(open_database(url)) as session:
        both = ScoreFilter(evaluators=(POOL, "gold-human"))
        correlation = build_table("evaluator-correlation", session, both)
        calibration = build_table("calibration", session, both)
        icc = build_table("icc", session, both)
    assert len(correlation) and all(expected in note for note in correlation["note"])
    assert len(calibration) and all(expected in note for note in calibration["note"])
    assert len(icc) and all(expected in note for note in icc["note"])
    assert not any("Alpha-7B left out" in note or "Beta-13B left out" in note
                   for note in [*correlation["note"], *calibration["note"], *icc["note"]])


def test_no_usable_score_at_all_is_a_table_of_notes(url: str) -> None:
    """Every study score lapsed: the table holds each model's note instead of refusing."""
    engine = open_database(url)
    first = join_prolific(engine, "leased", FIRST, STUDY, SESSION)
    submit(engine, first, min(_positions(url, first)), 5)
    with writing(engine) as session:
        session.execute(update(Participation).values(
            last_seen_at=utcnow() - timedelta(minutes=31)))
    join_prolific(engine, "leased", SECOND, STUDY, SESSION)  # takes the seat: the first lapses
    board = _table(url, "leaderboard")
    assert len(board) == 1 and board.loc[0, "n"] == 0
    assert board.loc[0, "note"].startswith("no usable score: 1 score lapsed")
