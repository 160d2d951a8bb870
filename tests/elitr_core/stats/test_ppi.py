"""PPI, PPI++ and the human-budget planner.

References: the ``ppi_py`` package (Angelopoulos et al.'s implementation; pinned in
requirements-dev.txt) for every point estimate, ``lambda`` and the normal intervals
(``interval="normal"``; tolerance 1e-10); scipy's one-sample and Welch t intervals for the
default t intervals of the human mean and PPI (1e-10); a hand computation of PPI++'s t
interval (1e-10); seeded simulations for coverage with 10 human scores (0.94-0.96 within 3 binomial
standard errors, the normal interval below it); the closed-form standard error for the planner
(exact integers).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate
from ppi_py.ppi import _calc_lam_glm
from scipy import stats

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats.ppi import (
    PPI_COLUMNS,
    classical_mean,
    power_tuning,
    ppi_mean,
    ppi_table,
    ppipp_mean,
)
from tests.elitr_core.stats.synthetic import frame, row

TOL = 1e-10


def judge_and_human(n_questions: int, labelled: dict[str, int], *, seed: int = 0,
                    bias: float = 1.0) -> pd.DataFrame:
    """Judge scores on every response of each model, human scores on the first ``labelled``."""
    rng = np.random.default_rng(seed)
    rows = []
    for offset, (model, n_human) in enumerate(labelled.items()):
        truth = np.clip(rng.normal(4 + offset, 2.5, n_questions), 1, 10)
        judge = np.clip(np.round(truth + bias + rng.normal(0, 1.2, n_questions)), 1, 10)
        for q in range(n_questions):
            rows.append(row(model=model, question_id=str(q + 1), evaluator="judge",
                            score=float(judge[q])))
            if q < n_human:
                rows.append(row(model=model, question_id=str(q + 1), evaluator="human",
                                score=float(np.round(truth[q]))))
    return frame(rows)


def arrays(rng: np.random.Generator, n: int, big_n: int) -> tuple[np.ndarray, ...]:
    y = rng.normal(5, 2, n)
    return y, y + 0.8 + rng.normal(0, 1, n), rng.normal(5.8, 2.2, big_n)


@pytest.mark.parametrize("seed", range(5))
def test_ppi_and_ppipp_equal_ppi_py(seed: int) -> None:
    rng = np.random.default_rng(seed)
    y, yhat, rest = arrays(rng, 40 + 10 * seed, 300)
    plain = ppi_mean(y, yhat, rest, 1.0, 0.95, "normal")
    assert plain.mean == pytest.approx(ppi_mean_pointestimate(y, yhat, rest, lam=1)[0], abs=TOL)
    assert (plain.low, plain.high) == pytest.approx(
        tuple(np.ravel(ppi_mean_ci(y, yhat, rest, alpha=0.05, lam=1))), abs=TOL)
    ref_point = ppi_mean_pointestimate(y, yhat, rest)[0]  # lam=None: PPI++
    lam = power_tuning(y, yhat, rest)
    point = ppi_mean(y, yhat, rest, 1.0).mean
    ref_lam = _calc_lam_glm(y - point, yhat - point, rest - point, np.eye(1), clip=True)
    assert lam == pytest.approx(ref_lam, abs=TOL)
    tuned, tuned_lam = ppipp_mean(y, yhat, rest, 0.9, "normal")
    assert tuned_lam == lam
    assert tuned.mean == pytest.approx(ref_point, abs=TOL)
    assert ppipp_mean(y, yhat, rest)[0].mean == pytest.approx(ref_point, abs=TOL)  # t: same
    assert (tuned.low, tuned.high) == pytest.approx(
        tuple(np.ravel(ppi_mean_ci(y, yhat, rest, alpha=0.1))), abs=TOL)
    human = classical_mean(y, 0.95, "normal")
    assert (human.low, human.high) == pytest.approx(classical_mean_ci(y, alpha=0.05), abs=TOL)


@pytest.mark.parametrize("seed", range(3))
def test_t_intervals_equal_scipy_and_the_hand_formula(seed: int) -> None:
    rng = np.random.default_rng(seed)
    y, yhat, rest = arrays(rng, 10 + 5 * seed, 200)
    human = classical_mean(y, 0.9)
    assert (human.low, human.high) == pytest.approx(
        stats.t.interval(0.9, y.size - 1, y.mean(), stats.sem(y)), abs=TOL)
    # PPI is mean(y - yhat) + mean(rest): scipy's Welch interval of a difference of means
    welch = stats.ttest_ind(y - yhat, -rest, equal_var=False).confidence_interval(0.95)
    plain = ppi_mean(y, yhat, rest)
    assert (plain.low, plain.high) == pytest.approx((welch.low, welch.high), abs=TOL)
    # PPI++ by hand: ddof=2 residual, the fitted lambda's term, Satterthwaite on N-1 and n-2
    tuned, lam = ppipp_mean(y, yhat, rest)
    e = y - lam * yhat
    s2 = np.sum((e - e.mean()) ** 2) / (y.size - 2)
    b = s2 / y.size + s2 * (rest.mean() - yhat.mean()) ** 2 / np.sum((yhat - yhat.mean()) ** 2)
    a = np.var(lam * rest, ddof=1) / rest.size
    df = (a + b) ** 2 / (a**2 / (rest.size - 1) + b**2 / (y.size - 2))
    half = stats.t.ppf(0.975, df) * np.sqrt(a + b)
    assert (tuned.low, tuned.high) == pytest.approx((tuned.mean - half, tuned.mean + half),
                                                    abs=TOL)
    assert tuned.df == pytest.approx(df, abs=TOL)


def test_lambda_is_clipped_and_zero_for_a_useless_judge() -> None:
    rng = np.random.default_rng(3)
    y = rng.normal(5, 2, 80)
    assert power_tuning(y, -y, rng.normal(size=200)) == 0.0  # anti-correlated: clipped at 0
    assert power_tuning(y, np.full(80, 7.0), np.full(100, 7.0)) == 0.0  # constant judge
    assert power_tuning(y, y, y[:0]) == 0.0  # nothing unlabelled: nothing to gain


def test_table_per_model_equals_ppi_py() -> None:
    df = judge_and_human(120, {"A": 30, "B": 50, "C": 1})
    out = ppi_table(df, "judge", "human", interval="normal")
    default = ppi_table(df, "judge", "human")  # t intervals: same means, wider
    assert list(out.columns) == list(PPI_COLUMNS)
    assert out["model"].tolist() == ["A", "B", "C"]
    for model, n_human in (("A", 30), ("B", 50)):
        got = out.set_index("model").loc[model]
        scores = df[df["model"] == model]
        judge = scores[scores["evaluator"] == "judge"].set_index("question_id")["score"]
        human = scores[scores["evaluator"] == "human"].set_index("question_id")["score"]
        y, yhat = human.to_numpy(), judge.loc[human.index].to_numpy()
        rest = judge.drop(index=human.index).to_numpy()
        assert (got["n_labelled"], got["n_unlabelled"]) == (n_human, 120 - n_human)
        assert got["judge_mean"] == pytest.approx(judge.mean(), abs=TOL)
        assert got["human_mean"] == pytest.approx(y.mean(), abs=TOL)
        assert (got["ppi_ci_low"], got["ppi_ci_high"]) == pytest.approx(
            tuple(np.ravel(ppi_mean_ci(y, yhat, rest, alpha=0.05, lam=1))), abs=TOL)
        assert (got["ppipp_ci_low"], got["ppipp_ci_high"]) == pytest.approx(
            tuple(np.ravel(ppi_mean_ci(y, yhat, rest, alpha=0.05))), abs=TOL)
        assert got["ppipp_mean"] == pytest.approx(ppi_mean_pointestimate(y, yhat, rest)[0],
                                                  abs=TOL)
        # the judge tracks the human: PPI is narrower than human-only
        assert got["ppi_ci_high"] - got["ppi_ci_low"] < got["human_ci_high"] - got["human_ci_low"]
        t = default.set_index("model").loc[model]
        assert t["ppipp_mean"] == pytest.approx(got["ppipp_mean"], abs=TOL)
        for name in ("human", "ppi", "ppipp"):
            assert t[f"{name}_ci_low"] < got[f"{name}_ci_low"]
    one = out.set_index("model").loc["C"]
    assert one["n_labelled"] == 1 and pd.isna(one["ppi_mean"]) and pd.isna(one["lambda"])
    assert not pd.isna(one["judge_mean"])


def test_every_response_labelled_gives_the_human_mean() -> None:
    out = ppi_table(judge_and_human(40, {"A": 40}), "judge", "human").iloc[0]
    assert out["n_unlabelled"] == 0 and pd.isna(out["lambda"])
    for estimate in ("ppi", "ppipp"):
        assert out[f"{estimate}_mean"] == pytest.approx(out["human_mean"])
        assert out[f"{estimate}_ci_low"] == pytest.approx(out["human_ci_low"])


def test_bad_input_is_refused() -> None:
    df = judge_and_human(20, {"A": 5})
    with pytest.raises(UserError, match="no score from the human evaluator nobody"):
        ppi_table(df, "judge", "nobody")
    with pytest.raises(UserError, match="both judge"):
        ppi_table(df, "judge", "judge")
    with pytest.raises(UserError, match="strictly between 0 and 1"):
        ppi_table(df, "judge", "human", confidence=1.5)
    with pytest.raises(UserError, match="unknown interval 'bootstrap'"):
        ppi_table(df, "judge", "human", interval="bootstrap")
    with pytest.raises(DegenerateDataError, match="scored none"):  # human on other responses
        ppi_table(pd.concat([df[df["evaluator"] == "judge"],
                             df[df["evaluator"] == "human"].assign(model="other")]),
                  "judge", "human")


def test_t_intervals_cover_with_ten_human_scores_where_normal_ones_do_not() -> None:
    """Seeded: 3,000 draws of 10 human + 200 judge-only scores from a known population."""
    rng = np.random.default_rng(2024)
    truth, reps = 5.0, 3000
    hits = {(name, kind): 0 for name in ("human", "ppi", "ppipp") for kind in ("t", "normal")}
    for _ in range(reps):
        y_all = rng.normal(truth, 2.0, 210)
        judge = y_all + 1.0 + rng.normal(0, 1.0, 210)  # biased by +1: the judge alone misses
        y, yhat, rest = y_all[:10], judge[:10], judge[10:]
        for kind in ("t", "normal"):
            for name, est in (("human", classical_mean(y, 0.95, kind)),
                              ("ppi", ppi_mean(y, yhat, rest, 1.0, 0.95, kind)),
                              ("ppipp", ppipp_mean(y, yhat, rest, 0.95, kind)[0])):
                hits[name, kind] += est.low <= truth <= est.high
    tolerance = 3 * np.sqrt(0.95 * 0.05 / reps)  # the goal band 0.94-0.96, +- 3 SE
    for name in ("human", "ppi", "ppipp"):
        t, normal = hits[name, "t"] / reps, hits[name, "normal"] / reps
        assert 0.94 - tolerance <= t <= 0.96 + tolerance, (name, t)
        assert normal < 0.95 - tolerance < t, (name, normal)  # ppi_py's CLT under-covers
