"""build_table on a small seeded database: every table of the contract, its options, errors."""

from __future__ import annotations

from statistics import mean

import pandas as pd
import pytest
from scipy import stats

from db.models import Evaluator, Response
from db.runs import ScoreFilter
from elitr_core.data.database import open_database, reading, writing
from elitr_core.data.scores import scores_table
from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.export.groups import parse_groups
from elitr_core.export.judge_audit import AUDIT_TABLES
from elitr_core.export.tables import TABLE_NAMES, build_table
from elitr_core.vocab import EXPORT_COLUMNS, SCORE_COLUMNS
from tests import small_db
from tests.small_db import MEETINGS, MODELS, QUESTIONS, gold, upsert_score

# the judge-audit tables need judge samples and lengths: tests/elitr_core/export/test_judge_audit.py
STATS = [n for n in TABLE_NAMES if n not in ("scores", "unscored", *AUDIT_TABLES)]
TEST2 = "meeting_en_test2_901"


def _build(url: str, name: str, flt: ScoreFilter | None = None, **kw: object) -> pd.DataFrame:
    with reading(open_database(url)) as session:
        return build_table(name, session, flt or ScoreFilter(), **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["scores", *STATS])
def test_every_table_has_its_contract_columns_and_takes_held_scores(small_sqlite: str,
                                                                    name: str) -> None:
    flt = ScoreFilter(split="test2")
    with reading(open_database(small_sqlite)) as session:
        read = build_table(name, session, flt)
        held = scores_table(session, flt)
        given = build_table(name, session, flt, scores=held)
    assert tuple(read.columns) == EXPORT_COLUMNS[name]
    assert len(read) > 0
    pd.testing.assert_frame_equal(given, read)  # `scores=` gives the same frame as reading


def test_scores_table_holds_every_planted_score(small_sqlite: str) -> None:
    table = _build(small_sqlite, "scores")
    # 72 responses x (gold, gpt-4, two silver annotators)
    assert len(table) == 72 * 4
    row = table[(table["evaluator"] == "gold-human") & (table["model"] == "B")
                & (table["meeting"] == TEST2) & (table["question_id"] == 3)
                & (table["setting"] == "qa")].iloc[0]
    assert row["score"] == gold("B", TEST2, 3, "qa") and row["split"] == "test2"
    assert row["question_type"] == "when" and row["answer_position"] == "E"


def test_leaderboard_mean_by_hand(small_sqlite: str) -> None:
    table = _build(small_sqlite, "leaderboard", ScoreFilter(evaluators=("gold-human",)))
    row = table[(table["model"] == "A") & (table["setting"] == "qa")
                & (table["split"] == "test2")].iloc[0]
    assert row["n"] == QUESTIONS
    assert row["mean"] == pytest.approx(mean(gold("A", TEST2, q, "qa")
                                             for q in range(1, QUESTIONS + 1)))
    assert set(table["evaluator"]) == {"gold-human"}


def test_filters_reach_the_statistic(small_sqlite: str) -> None:
    table = _build(small_sqlite, "evaluator-means",
                   ScoreFilter(split="dev", setting="qa", models=("A", "C")))
    assert set(table["model"]) == {"A", "C"}
    assert set(table["n"]) == {QUESTIONS}  # only QA dev responses


def test_breakdown_groups(small_sqlite: str) -> None:
    flt = ScoreFilter(evaluators=("gold-human",))
    plain = _build(small_sqlite, "breakdown", flt)
    grouped = _build(small_sqlite, "breakdown", flt, groups=parse_groups(["AB=A,B"]))
    assert "AB" not in set(plain["model"])
    ab = grouped[(grouped["model"] == "AB") & (grouped["level"] == "what")].iloc[0]
    members = plain[plain["model"].isin(["A", "B"]) & (plain["level"] == "what")]
    assert ab["n"] == members["n"].sum()
    assert ab["mean"] == pytest.approx((members["mean"] * members["n"]).sum() / ab["n"])


def test_differentiating_reads_the_questions_from_the_database(small_sqlite: str) -> None:
    table = _build(small_sqlite, "differentiating", ScoreFilter(evaluators=("gold-human",)))
    # only question 1 of each meeting is phrased differently in Conv
    assert set(table["n"]) == {len(MEETINGS)}
    row = table[(table["model"] == "C") & (table["setting_mode"] == "QA-st")].iloc[0]
    assert row["mean"] == pytest.approx(mean(gold("C", m, 1, "qa") for m in MEETINGS))


def test_calibration_reference(small_sqlite: str) -> None:
    default = _build(small_sqlite, "calibration")
    other = _build(small_sqlite, "calibration", reference="gpt-4")
    assert set(default["reference"]) == {"gold-human"}
    assert set(other["reference"]) == {"gpt-4"}
    assert "gpt-4" not in set(other["evaluator"])


def test_icc_of_the_annotator_pool(small_sqlite: str) -> None:
    table = _build(small_sqlite, "icc")
    # the evaluators as raters first (all six forms), then the pool's annotators
    assert list(table["raters"]) == ["evaluators"] * 6 + ["silver-human annotators"] * 3
    pool = table[table["raters"] == "silver-human annotators"]
    assert list(pool["group"]) == [*sorted(MEETINGS), "all"]
    assert list(pool["icc_type"]) == ["ICC(2,k)", "ICC(2,k)", "ICC(1,k)"]
    assert set(pool["n_raters"]) == {2}
    assert set(table.loc[table["raters"] == "evaluators", "n_raters"]) == {3}
    # without individual annotator scores: evaluators are the raters
    across = _build(small_sqlite, "icc", ScoreFilter(evaluators=("gold-human", "gpt-4")))
    assert set(across["group"]) == {"all"} and set(across["n_raters"]) == {2}
    assert set(across["n_targets"]) == {72}


def test_given_scores_are_used_instead_of_the_database(small_sqlite: str) -> None:
    with reading(open_database(small_sqlite)) as session:
        held = scores_table(session, ScoreFilter())
        only_a = held[held["model"] == "A"]
        table = build_table("evaluator-means", session, ScoreFilter(), scores=only_a)
    assert set(table["model"]) == {"A"}


def test_unknown_table(small_sqlite: str) -> None:
    with pytest.raises(UserError, match="unknown table 'nope': choose one of scores, unscored"):
        _build(small_sqlite, "nope")


def test_no_matching_scores_is_a_clear_error(small_sqlite: str) -> None:
    with pytest.raises(DegenerateDataError, match="no scores match the current filters"):
        _build(small_sqlite, "leaderboard", ScoreFilter(models=("No-Such-Model",)))
    assert _build(small_sqlite, "scores", ScoreFilter(models=("No-Such-Model",))).empty


def test_unscored_lists_unparsed_outputs(small_sqlite: str) -> None:
    from sqlmodel import select

    engine = open_database(small_sqlite)
    with writing(engine) as session:
        judge = session.exec(select(Evaluator.id).where(Evaluator.slug == "gpt-4")).one()
        response = session.exec(select(Response.id).order_by(Response.id)).first()
        upsert_score(session=session, response_id=response, evaluator_id=judge, value=None,
                     sample=1, status="unparsed", reason="no score found", raw="hmm")
    table = _build(small_sqlite, "unscored")
    assert list(table.columns) == [c for c in SCORE_COLUMNS if c != "score"] + ["status",
                                                                             "reason"]
    assert len(table) == 1 and table.loc[0, "status"] == "unparsed"
    assert table.loc[0, "reason"] == "no score found" and table.loc[0, "sample"] == 1
    assert len(_build(small_sqlite, "scores")) == 72 * 4  # not among the scored rows


def test_parse_groups() -> None:
    assert parse_groups([" GPT = GPT-4 , GPT-3.5 ", "L=Llama"]) == (
        ("GPT", ("GPT-4", "GPT-3.5")), ("L", ("Llama",)))
    assert parse_groups([]) == ()


@pytest.mark.parametrize("spec", ["GPT", "=GPT-4", "GPT=", "GPT= , ", " =A"])
def test_parse_groups_refuses(spec: str) -> None:
    with pytest.raises(UserError, match=r"write NAME=MODEL,MODEL \(e\.g\. GPT=GPT-4,GPT-3\.5\)"):
        parse_groups([spec])


def test_elo_reports_the_median_rating(small_sqlite: str) -> None:
    table = _build(small_sqlite, "elo")
    assert sorted(table["model"].unique()) == list(MODELS)
    # the median over permutations always lies inside their percentile interval
    assert ((table["ci_low"] <= table["rating"]) & (table["rating"] <= table["ci_high"])).all()


def test_model_difference_clusters_by_meeting_on_both_databases(db_url: str) -> None:
    """The small benchmark's two meetings (one per split) are the pair's two clusters; the
    gold-human differences are planted, so every number is known by hand."""
    small_db.build(db_url)
    table = _build(db_url, "model-difference",
                   ScoreFilter(setting="qa", evaluators=("gold-human",), models=("A", "B")))
    assert tuple(table.columns) == EXPORT_COLUMNS["model-difference"] and len(table) == 1
    row = table.iloc[0]
    diff = {m: [gold("B", m, q, "qa") - gold("A", m, q, "qa") for q in range(1, QUESTIONS + 1)]
            for m in MEETINGS}
    every = [d for values in diff.values() for d in values]
    assert (row["n"], row["n_meetings"]) == (2 * QUESTIONS, 2)
    assert row["difference"] == pytest.approx(mean(every), abs=1e-12)
    sums = [sum(values) for values in diff.values()]
    # 2 meetings: 4 sign patterns, of which those as far from 0 as the observed total
    flips = [abs(s1 * sums[0] + s2 * sums[1]) for s1 in (-1, 1) for s2 in (-1, 1)]
    assert row["p"] == pytest.approx(mean(f >= abs(sum(sums)) - 1e-9 for f in flips))
    assert row["p_naive"] == pytest.approx(stats.wilcoxon(every).pvalue, abs=1e-12)
    assert "cannot go below p = 0.5" in row["note"]
