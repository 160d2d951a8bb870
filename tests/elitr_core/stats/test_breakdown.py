"""Breakdown, lost in the middle (Welch by hand) and the QA/Conv differentiating questions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats.breakdown import breakdown, differentiating_questions, lost_in_middle
from elitr_core.vocab import EXPORT_COLUMNS
from tests.elitr_core.stats.synthetic import bundled, frame, random_scores, row

TOL = 1e-12


def facet_frame() -> pd.DataFrame:
    """A: who 2, who 4, what 9; B: who 6. Positions: A B, M, B; B E."""
    return frame([
        row(model="A", question_id="1", question_type="who", answer_position="B", score=2.0),
        row(model="A", question_id="2", question_type="who", answer_position="M", score=4.0),
        row(model="A", question_id="3", question_type="what", answer_position="B", score=9.0),
        row(model="B", question_id="1", question_type="who", answer_position="E", score=6.0),
    ])


def pick(table: pd.DataFrame, model: str, facet: str, level: str) -> pd.Series:
    hit = table[(table["model"] == model) & (table["facet"] == facet) & (table["level"] == level)]
    assert len(hit) == 1
    return hit.iloc[0]


def test_breakdown_hand_means_and_contract() -> None:
    table = breakdown(facet_frame())
    assert tuple(table.columns) == EXPORT_COLUMNS["breakdown"]
    assert pick(table, "A", "question_type", "who")[["n", "mean"]].tolist() == [2, 3.0]
    assert pick(table, "A", "question_type", "what")[["n", "mean"]].tolist() == [1, 9.0]
    # A at B: (2 + 9) / 2 = 5.5
    assert pick(table, "A", "answer_position", "B")["mean"] == pytest.approx(5.5, abs=TOL)
    # levels come in the benchmark's order, whatever the data order
    a_types = table[(table["model"] == "A") & (table["facet"] == "question_type")]["level"]
    assert a_types.tolist() == ["who", "what"]


def test_breakdown_groups_pool_responses_of_their_members() -> None:
    table = breakdown(facet_frame(), {"AB": ["A", "B", "not-run-here"]})
    # pooled who: (2 + 4 + 6) / 3 = 4, not the mean of member means (3 + 6) / 2 = 4.5
    assert pick(table, "AB", "question_type", "who")[["n", "mean"]].tolist() == [3, 4.0]
    assert pick(table, "A", "question_type", "who")["mean"] == 3.0  # members keep their rows


def test_breakdown_group_errors() -> None:
    with pytest.raises(UserError, match="none of"):
        breakdown(facet_frame(), {"X": ["nobody"]})
    with pytest.raises(UserError, match="name of a model"):
        breakdown(facet_frame(), {"A": ["B"]})
    with pytest.raises(DegenerateDataError):
        breakdown(frame([]))


def middle_frame(middle: list[float], other: list[float], model: str = "A") -> list[dict]:
    rows = [row(model=model, question_id=f"m{i}", answer_position="M", score=s)
            for i, s in enumerate(middle)]
    positions = ["B", "E", "S"]
    rows += [row(model=model, question_id=f"o{i}", answer_position=positions[i % 3], score=s)
             for i, s in enumerate(other)]
    return rows


def test_welch_against_hand_arithmetic() -> None:
    # middle (1, 3): mean 2, var 2; other (4, 6, 8): mean 6, var 4
    # t = (2 - 6) / sqrt(2/2 + 4/3) = -4 / sqrt(7/3) = -2.618614...
    # Welch df = (1 + 4/3)^2 / (1^2 / 1 + (4/3)^2 / 2) = (49/9) / (17/9) = 49/17
    result = lost_in_middle(frame(middle_frame([1.0, 3.0], [4.0, 6.0, 8.0])))
    assert tuple(result.columns) == EXPORT_COLUMNS["lost-in-middle"]
    got = result.iloc[0]
    assert got["t"] == pytest.approx(-4 / np.sqrt(7 / 3), abs=1e-12)
    assert got["p"] == pytest.approx(stats.t.cdf(-4 / np.sqrt(7 / 3), 49 / 17), abs=1e-12)
    assert got[["n_middle", "n_other", "mean_middle", "mean_other"]].tolist() == [2, 3, 2.0, 6.0]


def test_welch_formula_on_random_data() -> None:
    df = random_scores(48, ["A", "B"], ["gpt-4"], seed=3)
    result = lost_in_middle(df).set_index("model")
    for model in ("A", "B"):
        rows = df[df["model"] == model]
        m = rows.loc[rows["answer_position"] == "M", "score"].to_numpy()
        o = rows.loc[rows["answer_position"] != "M", "score"].to_numpy()
        vm, vo = m.var(ddof=1) / len(m), o.var(ddof=1) / len(o)
        t = (m.mean() - o.mean()) / np.sqrt(vm + vo)
        dof = (vm + vo) ** 2 / (vm**2 / (len(m) - 1) + vo**2 / (len(o) - 1))
        assert result.loc[model, "t"] == pytest.approx(t, abs=1e-10)
        assert result.loc[model, "p"] == pytest.approx(stats.t.cdf(t, dof), abs=1e-10)


def test_untestable_pairs_keep_their_row_with_a_note() -> None:
    rows = middle_frame([1.0, 3.0], [4.0, 6.0, 8.0], "A")
    rows += middle_frame([5.0], [4.0, 6.0, 8.0], "B")  # one middle response
    rows += middle_frame([5.0, 5.0], [5.0, 5.0], "C")  # constant: t undefined
    result = lost_in_middle(frame(rows)).set_index("model")
    assert result.index.tolist() == ["A", "B", "C"]
    assert np.isfinite(result.loc["A", ["t", "p"]].to_numpy(dtype=float)).all()
    assert result.loc["A", "note"] == ""
    assert result.loc[["B", "C"], ["t", "p"]].isna().all().all()
    assert "1 middle" in result.loc["B", "note"] and "constant" in result.loc["C", "note"]
    assert result.loc["B", ["n_middle", "mean_middle"]].tolist() == [1, 5.0]
    skipped = {m: reason for m, _, reason in lost_in_middle(frame(rows)).attrs["skipped"]}
    assert skipped == {"B": result.loc["B", "note"], "C": result.loc["C", "note"]}


def test_nothing_testable_keeps_its_documented_row() -> None:
    """One model that cannot be tested is a row with empty t and p and its cause, not an
    error (it used to raise, although the README documents the row)."""
    result = lost_in_middle(frame(middle_frame([5.0], [4.0, 6.0])))
    assert len(result) == 1 and result["t"].isna().all() and result["p"].isna().all()
    assert result["note"].iloc[0] == "1 middle and 2 other responses (need 2 each)"
    constant = lost_in_middle(frame(middle_frame([7.0, 7.0], [7.0, 7.0, 7.0])))
    assert constant["note"].tolist() == ["both groups have constant scores: Welch's t is "
                                         "undefined"]


def test_alpha_keeps_significant_rows_only() -> None:
    rows = middle_frame([1.0, 2.0, 1.0, 2.0], [8.0, 9.0, 8.0, 9.0], "low")
    rows += middle_frame([8.0, 9.0, 8.0, 9.0], [1.0, 2.0, 1.0, 2.0], "high")
    assert lost_in_middle(frame(rows), alpha=0.05)["model"].tolist() == ["low"]


def test_differentiating_questions_pool_splits() -> None:
    rows = [
        row(meeting="m_dev", question_id="3", split="dev", setting="qa", mode="st", score=8.0),
        row(meeting="m_t2", question_id="5", split="test2", setting="qa", mode="st", score=6.0),
        row(meeting="m_t2", question_id="5", split="test2", setting="conv", mode="mt", score=2.0),
        row(meeting="m_t2", question_id="6", split="test2", setting="conv", mode="mt", score=9.0),
    ]
    out = differentiating_questions(frame(rows), [("m_dev", 3), ("m_t2", "5")])
    assert list(out.columns) == ["model", "evaluator", "setting_mode", "n", "mean"]
    got = out.set_index("setting_mode")
    # QA-st pools dev and test2: (8 + 6) / 2 = 7; question 6 is not differentiating
    assert got.loc["QA-st", ["n", "mean"]].tolist() == [2, 7.0]
    assert got.loc["Conv-mt", ["n", "mean"]].tolist() == [1, 2.0]
    with pytest.raises(DegenerateDataError):
        differentiating_questions(frame(rows), [("elsewhere", "1")])
    with pytest.raises(UserError):
        differentiating_questions(frame(rows), [])


# ---- bundled ELITR-Bench data -------------------------------------------------------------

def test_bundled_breakdown_counts_add_up() -> None:
    df = bundled().query("setting == 'qa' and mode == 'st' and evaluator == 'gpt-4'")
    table = breakdown(df)
    per_facet = table.groupby(["model", "facet"])["n"].sum()
    assert (per_facet == 271).all()  # 141 dev + 130 test2 questions per model
    assert set(table["level"]) == {"who", "what", "when", "howmany", "B", "M", "E", "S"}


def test_bundled_lost_in_middle_is_finite_for_nine_models() -> None:
    df = bundled().query("setting == 'qa' and mode == 'st' and evaluator == 'gpt-4'")
    result = lost_in_middle(df)
    assert len(result) == 9 and result.attrs["skipped"] == []
    assert ((result["n_middle"] + result["n_other"]) == 271).all()
    assert result["p"].between(0, 1).all()


def test_missing_keys_are_an_error_not_a_silent_drop() -> None:
    rows = middle_frame([1.0, 3.0], [4.0, 6.0, 8.0])
    rows.append(row(question_id="x", answer_position=None, score=1.0))
    with pytest.raises(UserError, match="1 scored response.* no answer_position"):
        lost_in_middle(frame(rows))
    with pytest.raises(UserError, match="no answer_position"):
        breakdown(frame(rows))
    with pytest.raises(UserError, match="no model"):
        breakdown(frame([row(), row(model=None, question_id="2")]))
