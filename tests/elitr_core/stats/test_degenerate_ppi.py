"""PPI and the budget planner on degenerate human scores: a sentence, not a number.

References: the Student t interval (``scipy.stats.t.ppf`` quantile times the ``ddof=1``
standard error) of a sample with zero variance has zero width, which the table must not
present as certainty;
the planner's human-only count from the variance (``ceil((z * sd / h)^2)`` = 0 for sd 0).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from elitr_core.stats.ppi import BUDGET_COLUMNS, PPI_COLUMNS, budget_plan, ppi_table
from tests.elitr_core.stats.test_ppi import judge_and_human


def constant_human(value: float = 6.0) -> pd.DataFrame:
    """Model A's 12 human scores all equal ``value``; model B's vary; C has 1, D none."""
    df = judge_and_human(40, {"A": 12, "B": 12, "C": 1, "D": 0}, seed=2)
    a_human = (df["model"] == "A") & (df["evaluator"] == "human")
    df.loc[a_human, "score"] = value
    return df


def test_a_constant_human_gets_a_note_not_a_zero_width_interval() -> None:
    sample = np.full(12, 6.0)
    half = stats.t.ppf(0.975, 11) * sample.std(ddof=1) / np.sqrt(12)
    assert half == 0.0  # what a t interval says about a constant sample
    out = ppi_table(constant_human(), "judge", "human")
    assert list(out.columns) == list(PPI_COLUMNS)
    out = out.set_index("model")
    a = out.loc["A"]
    assert a["human_mean"] == 6.0 and pd.isna(a["human_ci_low"]) and pd.isna(a["human_ci_high"])
    assert a["note"].startswith("every human score of this model is 6:")
    assert np.isfinite(a["ppi_ci_low"])  # the judge's spread still carries PPI's interval
    b = out.loc["B"]
    assert b["note"].startswith("12 human scores, fewer than 30:")  # the page's warning too
    assert b["human_ci_low"] < b["human_mean"] < b["human_ci_high"]
    assert out.loc["C", "note"] == "1 human score: an interval needs 2 or more"
    assert out.loc["D", "note"] == "no human score for this model under the filters"


def test_the_budget_planner_does_not_plan_zero_scores_from_a_zero_variance() -> None:
    z = stats.norm.ppf(0.975)
    assert np.ceil((z * 0.0 / 0.5) ** 2) == 0  # what the formula would have planned
    plan = budget_plan(constant_human(), "judge", "human", half_width=1.5)
    assert list(plan.columns) == list(BUDGET_COLUMNS)
    plan = plan.set_index("model")
    assert pd.isna(plan.loc["A", "n_human_only"]) and pd.isna(plan.loc["A", "n_ppi"])
    assert "a variance of 0 plans no budget" in plan.loc["A", "note"]
    assert plan.loc["B", "n_human_only"] > 0
    assert plan.loc["B", "note"].startswith("the plan rests on 12 human scores")
    for model in ("C", "D"):
        assert pd.isna(plan.loc[model, "n_human_only"])
        assert "a plan needs 2 or more" in plan.loc[model, "note"] or \
            plan.loc[model, "note"].startswith("no human score")


@pytest.mark.parametrize("value", [1.0, 10.0])
def test_constant_at_either_end_of_the_scale(value: float) -> None:
    out = ppi_table(constant_human(value), "judge", "human").set_index("model")
    assert f"is {value:g}:" in out.loc["A", "note"]
