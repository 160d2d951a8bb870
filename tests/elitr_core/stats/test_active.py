"""Active selection: uncertainty, inclusion probabilities, the IPW PPI mean.

References: hand formulas (1e-12); seeded simulations of the IPW estimator's mean (unbiased
within 4 Monte-Carlo standard errors) and coverage (nominal 95% within 3 binomial standard
errors + 0.01), on complete studies and on half-scored ones against the full-gold truth.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats.active import (
    ACTIVE_COLUMNS,
    active_mean,
    active_ppi_table,
    draw,
    selection_probabilities,
    uncertainty,
)
from elitr_core.stats.frame import RESPONSE_KEY
from elitr_core.vocab import SCORE_COLUMNS
from tests.elitr_core.stats.synthetic import DEFAULTS, frame, row


def test_probabilities_sum_to_the_budget_and_favour_uncertain_items() -> None:
    u = np.array([0.0, 0.1, 0.2, 0.9, 1.0, 1.0])
    pi = selection_probabilities(u, 4, mix=0.2)
    assert pi.sum() == pytest.approx(4)
    assert np.all(np.diff(pi) >= 0) and pi.max() <= 1
    # by hand: 4 * (0.8 * u / 3.2 + 0.2 / 6) exceeds 1 for the last three items; they get 1
    # and the other three share the remaining 1 in proportion to their raw values
    raw = 4 * (0.8 * u / u.sum() + 0.2 / 6)
    assert np.all(raw[3:] > 1)
    assert pi == pytest.approx([*(raw[:3] / raw[:3].sum()), 1, 1, 1], abs=1e-12)
    assert pi[0] > 0  # the uniform share keeps every item drawable
    assert selection_probabilities(np.zeros(4), 2) == pytest.approx(np.full(4, 0.5))
    assert selection_probabilities(u, 3, mix=1.0) == pytest.approx(np.full(6, 0.5))


@pytest.mark.parametrize(("args", "message"), [
    ((np.ones(3), 5), "budget"), ((np.ones(3), 2, 1.5), "mix"), ((-np.ones(3), 2), "negative"),
])
def test_bad_probability_options_are_refused(args: tuple, message: str) -> None:
    with pytest.raises(UserError, match=message):
        selection_probabilities(*args)


def test_uncertainty_methods() -> None:
    rows = [row(question_id="1", score=1.0), row(question_id="2", score=5.5),
            row(question_id="3", score=8.0),
            row(question_id="1", evaluator="prometheus", score=10.0),
            row(question_id="3", evaluator="gpt-4", sample=1, score=4.0)]
    df = frame(rows)
    middle = uncertainty(df, "gpt-4").set_index("question_id")["uncertainty"]
    # question 3 has samples 8 and 4: score 6, 1 - 0.5 / 4.5
    assert middle.to_dict() == pytest.approx({"1": 0.0, "2": 1.0, "3": 1 - 0.5 / 4.5})
    gap = uncertainty(df, "gpt-4", "disagreement", ("prometheus",)).set_index("question_id")
    assert gap["uncertainty"].to_dict() == pytest.approx({"1": 1.0, "2": 0.0, "3": 0.0})
    spread = uncertainty(df, "gpt-4", "spread").set_index("question_id")["uncertainty"]
    assert spread.to_dict() == pytest.approx({"1": 0.0, "2": 0.0, "3": 2.0 / 4.5})
    with pytest.raises(UserError, match="other judge"):
        uncertainty(df, "gpt-4", "disagreement")
    with pytest.raises(UserError, match="unknown uncertainty"):
        uncertainty(df, "gpt-4", "entropy")


def test_active_mean_by_hand() -> None:
    f = np.array([2.0, 5.0, 9.0, 7.0])
    y = np.array([3.0, np.nan, 8.0, np.nan])
    labelled = np.array([True, False, True, False])
    pi = np.array([0.5, 0.25, 0.8, 0.4])
    terms = np.array([2 + 1 / 0.5, 5.0, 9 - 1 / 0.8, 7.0])
    est = active_mean(f, y, labelled, pi, 0.95, "normal")
    assert est.mean == pytest.approx(terms.mean(), abs=1e-12)
    assert est.se == pytest.approx(terms.std() / 2, abs=1e-12)
    assert est.high - est.mean == pytest.approx(1.959963984540054 * est.se, abs=1e-12)
    # t: ddof=1, Satterthwaite from the judge part (3 df) and the correction part (1 df)
    t = active_mean(f, y, labelled, pi, 0.95)
    a, b = np.var(f, ddof=1) / 4, np.var([2.0, 0, -1.25, 0], ddof=1) / 4
    df = (a + b) ** 2 / (a**2 / 3 + b**2 / 1)
    assert (t.mean, t.se, t.df) == pytest.approx((terms.mean(), terms.std(ddof=1) / 2, df),
                                                 abs=1e-12)
    assert t.high - t.mean == pytest.approx(stats.t.ppf(0.975, df) * t.se, abs=1e-12)
    with pytest.raises(UserError, match="probability 0"):
        active_mean(f, y, labelled, np.array([0.0, 0.2, 0.8, 0.4]))


def population(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
    """True scores uniform on 1..10 (mean 5.5), human noise 0.5, a judge biased by +0.7 that
    errs more in the middle of the scale."""
    true_scores = rng.uniform(1, 10, size)
    noise = 0.2 + (4.5 - np.abs(true_scores - 5.5)) / 3
    f = np.clip(true_scores + 0.7 + rng.normal(0, noise), 1, 10)
    return f, rng.normal(true_scores, 0.5)


def test_ipw_estimate_is_unbiased_and_covers() -> None:
    """Seeded: 3,000 populations of 600 responses, ~60 active human scores each."""
    rng = np.random.default_rng(7)
    reps, truth = 3000, 5.5
    estimates, covered = np.empty(reps), 0
    for i in range(reps):
        f, y = population(rng, 600)
        pi = selection_probabilities(1 - np.abs(f - 5.5) / 4.5, 60)
        est = active_mean(f, y, draw(pi, rng), pi)
        estimates[i] = est.mean
        covered += est.low <= truth <= est.high
    monte_carlo_se = estimates.std() / np.sqrt(reps)
    assert abs(estimates.mean() - truth) <= 4 * monte_carlo_se
    assert abs(covered / reps - 0.95) <= 3 * np.sqrt(0.95 * 0.05 / reps) + 0.01


def half_scored_studies(rng: np.random.Generator, reps: int, size: int = 300,
                        budget: int = 60) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series]:
    """``reps`` studies, one per model ``m0``, ``m1``...: each model's ``size`` responses, an
    active draw of ``budget`` of them, half of the drawn ones scored by the human (a random
    half: missing at random). Returns the scores frame, the stored probabilities and each
    model's full-gold mean (the human score of every response)."""
    judge, human, probability, truth = [], [], [], {}
    for i in range(reps):
        f, y = population(rng, size)
        pi = selection_probabilities(1 - np.abs(f - 5.5) / 4.5, budget)
        drawn = np.flatnonzero(draw(pi, rng))
        scored = rng.permutation(drawn)[: len(drawn) // 2]
        judge += [(f"m{i}", str(q), float(f[q])) for q in range(size)]
        human += [(f"m{i}", str(q), float(y[q])) for q in scored]
        probability += [(f"m{i}", str(q), float(pi[q])) for q in drawn]
        truth[f"m{i}"] = float(y.mean())
    parts = [pd.DataFrame(rows, columns=["model", "question_id", "score"]).assign(
        evaluator=name) for rows, name in ((judge, "gpt-4"), (human, "gold-human:s"))]
    df = pd.concat(parts, ignore_index=True)
    df = df.assign(**{c: DEFAULTS[c] for c in SCORE_COLUMNS if c not in df.columns})
    df = df[list(SCORE_COLUMNS)].astype({"seed": "float64", "sample": "int64"})
    keys = pd.DataFrame(probability, columns=["model", "question_id", "probability"])
    one = df[df["evaluator"] == "gpt-4"][list(RESPONSE_KEY)]
    probabilities = one.merge(keys, on=["model", "question_id"])
    return df, probabilities, pd.Series(truth)


def test_half_scored_study_stays_unbiased_against_the_full_gold_mean() -> None:
    """Seeded: 600 half-scored studies of 200 responses (about 40 drawn, 20 scored). The
    re-weighted estimate is unbiased for the full-gold mean (4 Monte-Carlo standard errors)
    and covers it (0.95 within 3 binomial standard errors + 0.02: the interval ignores the
    finite population, so it may over-cover); treating the unscored drawn responses as never
    drawn (the old reading) is biased towards the judge."""
    rng = np.random.default_rng(11)
    reps = 600
    df, probabilities, truth = half_scored_studies(rng, reps, 200, 40)
    got = active_ppi_table(df, "gpt-4", "gold-human:s", probabilities).set_index("model")
    drawn, truth = probabilities.groupby("model").size().loc[got.index], truth.loc[got.index]
    assert (got["n_drawn_unscored"] == drawn - got["n_labelled"]).all()
    assert (got["n_unlabelled"] == 200 - drawn).all()
    assert got["note"].str.contains("missing at random").all()
    errors = got["active_mean"].astype(float) - truth
    covered = (got["active_ci_low"] <= truth) & (truth <= got["active_ci_high"])
    assert abs(errors.mean()) <= 4 * errors.std() / np.sqrt(reps)
    assert abs(covered.mean() - 0.95) <= 3 * np.sqrt(0.95 * 0.05 / reps) + 0.02
    # the old reading (only the scored ones drawn) halves the correction: biased upwards,
    # towards the judge's +0.7
    scored = df[df["evaluator"] == "gold-human:s"][list(RESPONSE_KEY)]
    naive = active_ppi_table(df, "gpt-4", "gold-human:s",
                             probabilities.merge(scored, on=list(RESPONSE_KEY)))
    bias = naive.set_index("model")["active_mean"].astype(float).loc[got.index] - truth
    assert bias.mean() > 0.2 and bias.mean() - 4 * bias.std() / np.sqrt(reps) > 0


def test_a_model_without_two_scored_drawn_responses_gets_a_note_not_a_number() -> None:
    df, probabilities, _ = half_scored_studies(np.random.default_rng(3), 1, 100, 20)
    human = df["evaluator"] == "gold-human:s"
    one = df[~human | (df.index == df[human].index[0])]
    got = active_ppi_table(one, "gpt-4", "gold-human:s", probabilities).iloc[0]
    assert got["n_labelled"] == 1 and got["n_drawn_unscored"] == len(probabilities) - 1
    assert pd.isna(got["active_mean"]) and pd.isna(got["active_ci_low"])
    assert got["note"] == (f"1 of its {len(probabilities)} drawn responses scored: no "
                           "estimate until at least 2 are")


def test_active_table_uses_stored_probabilities() -> None:
    rows = []
    for q, (judge, human) in enumerate([(2, 3), (5, None), (9, 8), (7, None)]):
        rows.append(row(question_id=str(q + 1), score=float(judge)))
        if human is not None:
            rows.append(row(question_id=str(q + 1), evaluator="gold-human", score=float(human)))
    df = frame(rows)
    keys = df[df["evaluator"] == "gpt-4"][list(RESPONSE_KEY)].reset_index(drop=True)
    probabilities = keys.assign(probability=[0.5, 0.25, 0.8, 0.4])
    # responses 2 and 4 not drawn: they need no probability, their term is the judge's
    out = active_ppi_table(df, "gpt-4", "gold-human", probabilities.iloc[[0, 2]])
    assert list(out.columns) == list(ACTIVE_COLUMNS)
    assert out.loc[0, "active_mean"] == pytest.approx(np.mean([4, 5, 9 - 1.25, 7]))
    assert out.loc[0, ["n_labelled", "n_drawn_unscored", "n_unlabelled"]].tolist() == [2, 0, 2]
    # the export's note carries the page's small-sample warning
    assert out.loc[0, "note"] == ("2 human scores, fewer than 30: the t intervals covered as "
                                  "little as 0.91 with 10 (bench/bench_ppi_coverage.py)")
    # all four drawn, two scored: each scored one weighted by 1 / (pi * 2 / 4)
    half = active_ppi_table(df, "gpt-4", "gold-human", probabilities).iloc[0]
    assert half["active_mean"] == pytest.approx(np.mean([2 + 1 / 0.25, 5, 9 - 1 / 0.4, 7]))
    assert half[["n_labelled", "n_drawn_unscored", "n_unlabelled"]].tolist() == [2, 2, 0]
    assert half["note"].startswith("2 of its 4 drawn responses scored: weighted")
    with pytest.raises(DegenerateDataError, match="no selection probability"):
        active_ppi_table(df, "gpt-4", "gold-human", probabilities.iloc[:2])
    assert isinstance(out.loc[0, "active_ci_low"], float | np.floating)
    assert pd.api.types.is_float_dtype(out["active_ci_low"])
