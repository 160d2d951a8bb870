"""A study with a stopping rule: the rule read and checked, stopping admission at the target
with every answer kept, and ``export study-monitor`` agreeing with the sequences computed
from the stored scores (SQLite and PostgreSQL)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from elitr_core.annotation.admin import add_study_annotator
from elitr_core.annotation.auth import AccessDenied
from elitr_core.annotation.stopping import monitor_inputs, parse_rule, parse_rules
from elitr_core.annotation.studies import (
    StudySpec,
    create_study,
    enter_with_token,
    queue_view,
    submit,
)
from elitr_core.cli.main import main
from elitr_core.data.database import open_database, reading, writing
from elitr_core.errors import UserError
from elitr_core.stats.confseq import betting_cs
from elitr_core.stats.monitor import study_monitor

MODELS = ("GPT-4", "LongAlpaca-7B")
FILTERS = dict(split="test2", setting="qa", mode="st", models=MODELS)
CLI = ["--split", "test2", "--setting", "qa", "--mode", "st", "--model", MODELS[0],
       "--model", MODELS[1]]


def test_rules_are_read_or_refused_in_one_sentence() -> None:
    assert parse_rule("half-width <= 0.5").text() == "human half-width <= 0.5"
    assert parse_rule(" PPI  half-width<=.75 ").text() == "ppi half-width <= 0.75"
    for text, message in (("width < 1", "cannot read"), ("half-width <= 0", "must lie in"),
                          ("bias half-width <= 12", "must lie in"), ("", "cannot read")):
        with pytest.raises(UserError, match=message):
            parse_rule(text)
    with pytest.raises(UserError, match="one stopping rule per target"):
        parse_rules(("half-width <= 1", "human half-width <= 2"))


def test_bad_rules_leave_no_study(bundled_db: str) -> None:
    engine = open_database(bundled_db)
    for spec, message in (
        (StudySpec(name="s", pool="gold", stop_when=("half-width <= 1",), **FILTERS),
         "needs --assignment random"),
        (StudySpec(name="s", pool="gold", assignment="random", batch=5, judge="nobody",
                   stop_when=("ppi half-width <= 1",), **FILTERS), "needs the judge nobody"),
        (StudySpec(name="s", pool="gold", assignment="random", batch=5,
                   stop_when=("half-width <= nine",), **FILTERS), "cannot read"),
    ):
        with pytest.raises(UserError, match=message), writing(engine) as session:
            create_study(session, spec)
    assert main(["study", "status", "--db", bundled_db, "--name", "s"]) == 2


def _score_until_refused(url: str, study: str, rng: np.random.Generator) -> tuple[int, int]:
    """Annotators join one after another, each scoring their batch, until one is refused;
    returns (answers submitted, annotators seated)."""
    engine = open_database(url)
    answers = 0
    for i in range(200):
        with writing(engine) as session:
            token, _ = add_study_annotator(session, f"a{i}", study)
        try:
            entry = enter_with_token(engine, token, study)
        except AccessDenied as refused:
            assert "collected the scores it needs" in str(refused)
            return answers, i
        view = queue_view(engine, entry)
        while view.first_open is not None:
            view = submit(engine, entry, view.first_open, int(rng.integers(1, 11)))
            answers += 1
    raise AssertionError("the study never stopped")


def test_a_study_stops_admitting_at_its_target(bundled_db: str,
                                               capsys: pytest.CaptureFixture) -> None:
    assert main(["study", "create", "--db", bundled_db, "--name", "watch", "--pool", "gold",
                 "--per-item", "1", "--assignment", "random", "--batch", "4", *CLI,
                 "--stop-when", "half-width <= 2.6", "--stop-when",
                 "ppi half-width <= 2.6"]) == 0
    assert "admits nobody new" in capsys.readouterr().out
    answers, seated = _score_until_refused(bundled_db, "watch", np.random.default_rng(0))
    capsys.readouterr()
    assert main(["export", "study-monitor", "--db", bundled_db, "--human",
                 "gold-human:watch", "--format", "csv"]) == 0
    summary = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert main(["export", "study-monitor-sequences", "--db", bundled_db, "--human",
                 "gold-human:watch", "--format", "csv"]) == 0
    sequences = pd.read_csv(io.StringIO(capsys.readouterr().out))
    with reading(open_database(bundled_db)) as session:
        from db import studies as sq
        from elitr_core.annotation.stopping import check_stop

        study = sq.study_by_name(session=session, name="watch")
        assert study is not None
        stop = check_stop(session, study)
        rows = sq.scores_in_order(session=session, study_id=study.id,
                                  evaluator_id=study.evaluator_id)
    # no answer lost or doubled: one score per answer, each response once
    assert len(rows) == answers and len({r["response_id"] for r in rows}) == answers
    assert stop is not None and f"after {answers} scored responses" in stop
    human = summary[summary["target"] == "human"].set_index("model")
    assert set(human.index) == set(MODELS)
    assert human["reached"].all() and (human["half_width"] <= 2.6).all()
    assert (summary.loc[summary["target"] == "ppi", "half_width"] <= 2.6).all()
    for model in MODELS:
        values = np.array([r["value"] for r in rows if r["model"] == model], float)
        lo, hi = betting_cs(values, 1, 10)
        assert human.loc[model, "n"] == values.size
        assert human.loc[model, "cs_low"] == pytest.approx(lo[-1], abs=1e-6)
        mine = sequences[(sequences["model"] == model) & (sequences["target"] == "human")]
        assert np.allclose(mine["cs_high"], hi, atol=1e-6)
        assert mine["n"].tolist() == list(range(1, values.size + 1))
    # the last one seated was admitted because, one batch earlier, a target was not met
    assert answers == 4 * seated
    with reading(open_database(bundled_db)) as session:
        obs, pop = monitor_inputs(session, study)
    wanted = {"human": 2.6, "ppi": 2.6}
    after = study_monitor(obs, pop, wanted, expected=False)
    assert after.loc[after["target"].isin(list(wanted)), "reached"].all()
    before = study_monitor(obs.iloc[:answers - 4], pop, wanted, expected=False)
    assert not before.loc[before["target"].isin(list(wanted)), "reached"].all()


def test_an_active_study_weights_each_score_by_its_stored_probability(
        bundled_db: str, capsys: pytest.CaptureFixture) -> None:
    """Active selection: the population stored at creation is the candidates' probabilities
    (recomputed here by selection.candidate_probabilities), and the exported human sequence
    is betting_cs on y * sum(pi) / (N pi) within the weights' bounds."""
    from elitr_core.annotation.selection import candidate_probabilities
    from elitr_core.stats.confseq import ipw_bounds

    assert main(["study", "create", "--db", bundled_db, "--name", "act", "--pool", "gold",
                 "--per-item", "1", "--assignment", "random", "--batch", "8", *CLI,
                 "--sample", "60", "--selection", "active", "--seed", "2",
                 "--stop-when", "half-width <= 1"]) == 0
    _score_until_refused_or(bundled_db, "act", participants=3)
    engine = open_database(bundled_db)
    with reading(engine) as session:
        from db import studies as sq

        study = sq.study_by_name(session=session, name="act")
        assert study is not None
        rows = sq.candidate_responses(session=session, **FILTERS)
        pi = candidate_probabilities(session, rows, sample=60, selection="active",
                                     judge="gpt-4")
        scored = sq.scores_in_order(session=session, study_id=study.id,
                                    evaluator_id=study.evaluator_id)
    stored = {p["model"]: p for p in study.filters["population"]}
    capsys.readouterr()
    assert main(["export", "study-monitor-sequences", "--db", bundled_db, "--human",
                 "gold-human:act"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    for model in MODELS:
        mine = np.array([p for p, r in zip(pi, rows, strict=True) if r["model"] == model])
        assert stored[model]["responses"] == mine.size
        assert stored[model]["pi_sum"] == pytest.approx(mine.sum(), rel=1e-12)
        assert stored[model]["judge_mean"] is not None
        got = [r for r in scored if r["model"] == model]
        y = np.array([r["value"] for r in got]) * mine.sum() / (
            mine.size * np.array([r["probability"] for r in got]))
        lo, hi = betting_cs(y, *ipw_bounds(1, 10, mine.min(), mine.max(), mine.sum(),
                                           mine.size))
        seq = table[(table["model"] == model) & (table["target"] == "human")]
        assert len(seq) == y.size > 0
        assert np.allclose(seq["cs_low"], lo, atol=1e-6)
        assert np.allclose(seq["estimate"], np.cumsum(y) / np.arange(1, y.size + 1))


def _score_until_refused_or(url: str, study: str, *, participants: int) -> None:
    """``participants`` annotators each score their whole batch (values 2..9 in turn)."""
    engine = open_database(url)
    for i in range(participants):
        with writing(engine) as session:
            token, _ = add_study_annotator(session, f"p{i}", study)
        entry = enter_with_token(engine, token, study)
        view = queue_view(engine, entry)
        while view.first_open is not None:
            view = submit(engine, entry, view.first_open, 2 + view.answered % 8)
