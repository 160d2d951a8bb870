"""Evaluator agreement: correlations + cluster bootstrap, QWK, MAE, judge bias, ranking.

References: scipy on the full data for r and p (1e-12), an explicit resample-and-recompute loop
for every bootstrap replicate (same draws: 1e-12; independent draws: CI endpoints within 0.01
with 1,500 replicates), hand formulas and the R ``Metrics`` package example for QWK.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats import _corr_bootstrap as cb
from elitr_core.stats.agreement import (
    agreement_metrics,
    agreement_table,
    cluster_weights,
    evaluator_correlation,
    judge_bias,
    quadratic_weighted_kappa,
    ranking_agreement,
    ranking_table,
    round_scores,
)
from elitr_core.vocab import EXPORT_COLUMNS
from tests.elitr_core.stats import synthetic
from tests.elitr_core.stats.synthetic_b2 import make_scores, pair_frame

SCIPY = {"pearson": stats.pearsonr, "spearman": stats.spearmanr, "kendall": stats.kendalltau}
EVALUATORS = ["gpt-4", "prometheus", "gold-human", "silver-human"]


def aligned(df: pd.DataFrame, a: str, b: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores of a and b per response, built by hand (aggregate silver rows, judge means)."""
    keys = ["meeting", "question_id", "model"]
    rows = df[df["annotator"].isna() & df["score"].notna()]
    means = rows.groupby([*keys, "evaluator"])["score"].mean().unstack("evaluator")
    both = means[[a, b]].dropna()
    questions = both.groupby(level=[0, 1], sort=False).ngroup().to_numpy()
    return both[a].to_numpy(), both[b].to_numpy(), questions


def naive_replicates(x: np.ndarray, y: np.ndarray, clusters: np.ndarray, weights: np.ndarray,
                     method: str) -> np.ndarray:
    """Materialise every replicate (cluster g repeated weights[b, g] times) and call scipy."""
    members = [np.flatnonzero(clusters == g) for g in range(weights.shape[1])]
    out = []
    for counts in weights:
        idx = np.concatenate([members[g] for g in np.repeat(np.arange(counts.size), counts)])
        xs, ys = x[idx], y[idx]
        out.append(np.nan if np.ptp(xs) == 0 or np.ptp(ys) == 0
                   else SCIPY[method](xs, ys).statistic)
    return np.asarray(out)


@pytest.fixture(scope="module")
def scores() -> pd.DataFrame:
    return make_scores(n_meetings=5, questions_per_meeting=10, judge_samples=3, seed=3)


def test_r_and_p_equal_scipy_on_the_common_responses(scores: pd.DataFrame) -> None:
    table = evaluator_correlation(scores, n_bootstrap=0)
    assert tuple(table.columns) == EXPORT_COLUMNS["evaluator-correlation"]
    assert len(table) == 6 * 3
    assert list(table.drop_duplicates(["evaluator_a", "evaluator_b"])[
        ["evaluator_a", "evaluator_b"]].itertuples(index=False, name=None)) == list(
        itertools.combinations(EVALUATORS, 2))
    for row in table.itertuples():
        x, y, _ = aligned(scores, row.evaluator_a, row.evaluator_b)
        expected = SCIPY[row.method](x, y)
        assert row.n == x.size == 150
        assert row.r == pytest.approx(expected.statistic, abs=1e-12)
        assert row.p == pytest.approx(expected.pvalue, rel=1e-9, abs=1e-300)
        assert np.isnan(row.ci_low) and np.isnan(row.ci_high)


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_every_replicate_equals_the_explicit_resample(method: str) -> None:
    rng = np.random.default_rng(7)
    clusters = np.repeat(np.arange(25), rng.integers(1, 7, 25))
    latent = rng.normal(size=25)[clusters] + rng.normal(size=clusters.size)
    x = np.clip(np.round(5 + 2 * latent + rng.normal(size=clusters.size)), 1, 10)
    y = np.clip(np.round(10 + 4 * latent + rng.normal(size=clusters.size) * 3) / 2, 1, 10)
    weights = cluster_weights(25, 200, rng)
    fast = {"pearson": cb.bootstrap_pearson, "spearman": cb.bootstrap_spearman,
            "kendall": cb.bootstrap_kendall}[method](x, y, clusters, weights)
    np.testing.assert_allclose(fast, naive_replicates(x, y, clusters, weights, method),
                               atol=1e-12)


def test_fine_grained_scores_use_exact_fallbacks(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(8)
    clusters = np.repeat(np.arange(15), 4)
    x = rng.normal(size=60)
    y = x + rng.normal(size=60)
    weights = cluster_weights(15, 300, rng)
    monkeypatch.setattr(cb, "GRID_LIMIT", 0)
    np.testing.assert_allclose(cb.bootstrap_spearman(x, y, clusters, weights),
                               naive_replicates(x, y, clusters, weights, "spearman"), atol=1e-12)
    kendall = cb.bootstrap_kendall(x, y, clusters, weights)
    # the explicit Kendall fallback keeps the first KENDALL_MAX_EXPLICIT draws
    assert kendall.size == cb.KENDALL_MAX_EXPLICIT
    np.testing.assert_allclose(
        kendall, naive_replicates(x, y, clusters, weights[:cb.KENDALL_MAX_EXPLICIT], "kendall"),
        atol=1e-12)


def test_ci_matches_an_independent_naive_bootstrap(scores: pd.DataFrame) -> None:
    table = evaluator_correlation(scores, ["gpt-4", "gold-human"], n_bootstrap=1500, seed=11)
    x, y, questions = aligned(scores, "gpt-4", "gold-human")
    rng = np.random.default_rng(12345)
    weights = rng.multinomial(questions.max() + 1, np.full(questions.max() + 1,
                                                           1 / (questions.max() + 1)), 1500)
    for row in table.itertuples():
        reps = naive_replicates(x, y, questions, weights, row.method)
        low, high = np.nanquantile(reps, [0.025, 0.975])
        # the two runs' endpoints differ by about 0.002 here (Monte Carlo error), CI width ~0.04
        assert row.ci_low == pytest.approx(low, abs=0.01)
        assert row.ci_high == pytest.approx(high, abs=0.01)
        assert row.ci_low < row.r < row.ci_high


def test_bootstrap_is_seeded_and_pairwise_stable(scores: pd.DataFrame) -> None:
    first = evaluator_correlation(scores, n_bootstrap=200, seed=5)
    again = evaluator_correlation(scores, n_bootstrap=200, seed=5)
    other = evaluator_correlation(scores, n_bootstrap=200, seed=6)
    pd.testing.assert_frame_equal(first, again)
    assert not np.allclose(first["ci_low"], other["ci_low"])
    # a pair's interval does not depend on the other evaluators in the table
    alone = evaluator_correlation(scores, ["gpt-4", "silver-human"], n_bootstrap=200, seed=5)
    whole = first[(first.evaluator_a == "gpt-4") & (first.evaluator_b == "silver-human")]
    np.testing.assert_allclose(alone["ci_low"], whole["ci_low"])
    narrow = evaluator_correlation(scores, ["gpt-4", "gold-human"], ["pearson"],
                                   n_bootstrap=200, seed=5, confidence=0.5)
    wide = first[(first.evaluator_b == "gold-human") & (first.evaluator_a == "gpt-4")
                 & (first.method == "pearson")]
    assert narrow["ci_high"].iloc[0] - narrow["ci_low"].iloc[0] < (
        wide["ci_high"].iloc[0] - wide["ci_low"].iloc[0])


def test_nan_scores_are_not_counted(scores: pd.DataFrame) -> None:
    holed = scores.copy()
    target = (holed["evaluator"] == "gold-human") & (holed["question_id"] == "1")
    holed.loc[target, "score"] = np.nan
    table = evaluator_correlation(holed, ["gpt-4", "gold-human"], ["pearson"], n_bootstrap=50)
    assert table["n"].iloc[0] == 150 - int(target.sum())
    assert np.isfinite(table[["r", "ci_low", "ci_high", "p"]].to_numpy()).all()


def test_degenerate_inputs_have_clear_messages(scores: pd.DataFrame) -> None:
    constant = scores.copy()
    constant.loc[constant["evaluator"] == "prometheus", "score"] = 7.0
    table = evaluator_correlation(constant, n_bootstrap=0)
    broken = (table["evaluator_a"] == "prometheus") | (table["evaluator_b"] == "prometheus")
    assert table.loc[broken, ["r", "p"]].isna().all().all()
    assert table.loc[broken, "note"].str.contains("prometheus gives the same score (7)",
                                                  regex=False).all()
    # the other pairs are what they are without prometheus
    rest = evaluator_correlation(scores[scores["evaluator"] != "prometheus"], n_bootstrap=0)
    pd.testing.assert_frame_equal(table[~broken].reset_index(drop=True), rest)
    few = evaluator_correlation(pair_frame([1, 5], [2, 6], [1, 2]), n_bootstrap=0)
    assert few["note"].str.contains("at least 3").all() and few["r"].isna().all()
    with pytest.raises(DegenerateDataError, match="no scores"):
        evaluator_correlation(scores.iloc[:0])
    one_question = evaluator_correlation(pair_frame([1, 5, 7, 3], [2, 6, 9, 1], [1, 1, 1, 1]))
    assert one_question["note"].str.contains("at least 2 questions").all()
    assert one_question["r"].notna().all() and one_question["ci_low"].isna().all()
    with pytest.raises(DegenerateDataError, match="at least two evaluators"):
        evaluator_correlation(scores, ["gpt-4"])
    with pytest.raises(UserError, match="available"):
        evaluator_correlation(scores, ["gpt-4", "gpt-5"])
    with pytest.raises(UserError, match="unknown correlation method"):
        evaluator_correlation(scores, methods=["cosine"])
    with pytest.raises(UserError, match="confidence"):
        evaluator_correlation(scores, confidence=95)
    with pytest.raises(UserError, match="n_bootstrap"):
        evaluator_correlation(scores, n_bootstrap=-1)
    with pytest.raises(UserError, match="seed"):
        judge_bias(scores, "gpt-4", seed=-3)


def test_undefined_replicates_are_refused_not_hidden() -> None:
    # two questions, each constant in x: every replicate drawing one question twice is undefined
    df = pair_frame([1, 1, 1, 9, 9, 9], [1, 2, 3, 7, 8, 9], [1, 1, 1, 2, 2, 2])
    x, y = np.array([1.0, 1, 1, 9, 9, 9]), np.arange(6.0)
    reps = cb.bootstrap_pearson(x, y, np.array([0, 0, 0, 1, 1, 1]), np.array([[2, 0], [1, 1]]))
    assert np.isnan(reps[0])
    assert reps[1] == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-12)
    out = evaluator_correlation(df, ["judge-a", "judge-b"], ["pearson"], n_bootstrap=400)
    assert out[["ci_low", "ci_high"]].isna().all().all() and out["r"].notna().all()
    assert "undefined in" in out["note"].iloc[0]


def test_qwk_by_hand_and_published_example() -> None:
    # R package Metrics, ScoreQuadraticWeightedKappa example: 0.56
    assert quadratic_weighted_kappa([1, 4, 5, 5, 2, 1], [2, 2, 4, 5, 3, 3], 1, 5) == (
        pytest.approx(0.56, abs=1e-12))
    rng = np.random.default_rng(4)
    a = rng.integers(1, 11, 200)
    b = np.clip(a + rng.integers(-3, 4, 200), 1, 10)
    # hand formula: 1 - mean squared disagreement / its expectation under independence
    chance = np.mean((a[:, None] - b[None, :]) ** 2)
    assert quadratic_weighted_kappa(a, b) == pytest.approx(1 - np.mean((a - b) ** 2) / chance,
                                                           abs=1e-12)
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    expected = sklearn_metrics.cohen_kappa_score(a, b, weights="quadratic", labels=range(1, 11))
    assert quadratic_weighted_kappa(a, b) == pytest.approx(expected, abs=1e-12)
    assert quadratic_weighted_kappa(a, a) == pytest.approx(1.0)


def test_qwk_input_checks_and_rounding() -> None:
    np.testing.assert_array_equal(round_scores([6.5, 6.49, 2.5, 9.96]), [7, 6, 3, 10])
    with pytest.raises(UserError, match="integers in 1..10"):
        quadratic_weighted_kappa([0, 3], [2, 3])
    with pytest.raises(UserError, match="integers"):
        quadratic_weighted_kappa([1.5, 3], [2, 3])
    with pytest.raises(DegenerateDataError, match="same score"):
        quadratic_weighted_kappa([4, 4, 4], [4, 4, 4])
    with pytest.raises(DegenerateDataError, match="non-empty"):
        quadratic_weighted_kappa([], [])


def test_agreement_table_mae_and_qwk(scores: pd.DataFrame) -> None:
    table = agreement_table(scores)
    assert list(table.columns) == ["evaluator_a", "evaluator_b", "n", "mae", "qwk", "note"]
    assert (table["note"] == "").all()
    for row in table.itertuples():
        x, y, _ = aligned(scores, row.evaluator_a, row.evaluator_b)
        assert row.mae == pytest.approx(np.mean(np.abs(x - y)), abs=1e-12)
        xr, yr = np.floor(x + 0.5), np.floor(y + 0.5)
        chance = np.mean((xr[:, None] - yr[None, :]) ** 2)
        assert row.qwk == pytest.approx(1 - np.mean((xr - yr) ** 2) / chance, abs=1e-12)
    one = agreement_metrics(scores, "gpt-4", "gold-human")
    assert len(one) == 1 and one["n"].iloc[0] == 150


def test_judge_bias_per_model(scores: pd.DataFrame) -> None:
    table = judge_bias(scores, "prometheus", n_bootstrap=2000, seed=1)
    assert list(table.columns) == ["model", "judge", "human", "n", "bias", "ci_low", "ci_high"]
    assert sorted(table["model"]) == list(table["model"])
    for row in table.itertuples():
        part = scores[scores["model"] == row.model]
        x, y, questions = aligned(part, "prometheus", "gold-human")
        assert row.n == x.size == 50
        assert row.bias == pytest.approx(np.mean(x - y), abs=1e-12)
        rng = np.random.default_rng(99)
        draws = rng.integers(0, questions.max() + 1, (4000, questions.max() + 1))
        per_question = pd.Series(x - y).groupby(questions).agg(["sum", "count"]).to_numpy()
        boot = per_question[draws, 0].sum(1) / per_question[draws, 1].sum(1)
        low, high = np.quantile(boot, [0.025, 0.975])
        # independent draws: endpoints differ by up to ~0.02 (Monte Carlo), CI width ~0.6
        assert row.ci_low == pytest.approx(low, abs=0.05)
        assert row.ci_high == pytest.approx(high, abs=0.05)
    # prometheus was generated with a +1.0 bias (minus clipping at 10)
    assert (table["bias"] > 0.5).all()
    # a model only the judge scored is left out, not an error
    judge_only = scores[(scores.evaluator == "prometheus") & (scores.model == "GPT-4")]
    more = pd.concat([scores, judge_only.assign(model="GPT-3.5")])
    pd.testing.assert_frame_equal(judge_bias(more, "prometheus", n_bootstrap=2000, seed=1),
                                  table)
    with pytest.raises(UserError, match="available"):
        judge_bias(scores, "gpt-5")


def test_ranking_agreement_matches_scipy_on_model_means(scores: pd.DataFrame) -> None:
    result = ranking_agreement(scores, "gpt-4", "silver-human")
    assert list(result.columns) == ["evaluator_a", "evaluator_b", "n_models", "tau", "p"]
    means = {e: scores[(scores.evaluator == e) & scores.annotator.isna()]
             .groupby("model")["score"].mean() for e in ("gpt-4", "silver-human")}
    expected = stats.kendalltau(means["gpt-4"], means["silver-human"].loc[means["gpt-4"].index])
    assert result["n_models"].iloc[0] == 3
    assert result["tau"].iloc[0] == pytest.approx(expected.statistic)
    assert result["p"].iloc[0] == pytest.approx(expected.pvalue)
    two_models = scores[scores["model"] != "GPT-4"]
    with pytest.raises(DegenerateDataError, match="2 model"):
        ranking_agreement(two_models, "gpt-4", "silver-human")


def test_bundled_test2_qa_st_has_390_responses_per_pair() -> None:
    data = synthetic.bundled()
    subset = data[(data["split"] == "test2") & (data["setting"] == "qa")
                  & (data["mode"] == "st") & data["evaluator"].isin(EVALUATORS)]
    table = evaluator_correlation(subset, EVALUATORS, ["pearson"], n_bootstrap=200)
    assert len(table) == 6
    assert (table["n"] == 390).all()
    gpt4_gold = table[(table.evaluator_a == "gpt-4") & (table.evaluator_b == "gold-human")]
    assert gpt4_gold["r"].iloc[0] > 0
    assert (table["ci_low"] < table["r"]).all() and (table["r"] < table["ci_high"]).all()
    # gpt-4 also scored models the humans did not: bias covers the three human-scored ones
    bias = judge_bias(subset, "gpt-4", n_bootstrap=100)
    assert list(bias["n"]) == [130, 130, 130]


def test_ranking_table_skips_pairs_without_three_models() -> None:
    rows = []
    for q in ("1", "2"):
        for model, (a, b) in {"A": (9, 8), "B": (5, 6), "C": (2, 1)}.items():
            rows += [synthetic.row(question_id=q, model=model, evaluator="a", score=a),
                     synthetic.row(question_id=q, model=model, evaluator="b", score=b)]
    rows.append(synthetic.row(question_id="1", model="A", evaluator="c", score=5))
    table = ranking_table(synthetic.frame(rows), ["a", "b", "c"])
    assert list(zip(table["evaluator_a"], table["evaluator_b"], strict=True)) == [("a", "b")]
    assert table.loc[0, "tau"] == pytest.approx(1.0)
    assert len(table.attrs["skipped"]) == 2
    with pytest.raises(DegenerateDataError):
        ranking_table(synthetic.frame(rows), ["a", "c"])


def test_degenerate_bootstrap_messages_suggest_what_a_user_can_do() -> None:
    # no command takes n_bootstrap: the advice is about the data (the filters), not a keyword
    from elitr_core.stats.agreement import _pair_weights, percentile_ci

    with pytest.raises(DegenerateDataError) as undefined:
        percentile_ci(np.full(100, np.nan), 0.95, "pearson of a and b")
    with pytest.raises(DegenerateDataError) as one_question:
        _pair_weights(np.zeros(5, dtype=int), 100, 0, "a", "b")
    for error in (undefined, one_question):
        assert "n_bootstrap" not in str(error.value) and "widen the filters" in str(error.value)


def test_two_identical_evaluators_have_r_1_and_no_zero_width_interval(
        scores: pd.DataFrame) -> None:
    """A copy of gold-human correlates 1 with it in every resample: [1, 1] would claim a
    certainty no sample gives; the interval is empty with the cause, r and p stay."""
    copy = scores[scores["evaluator"] == "gold-human"].assign(evaluator="gold-copy")
    table = evaluator_correlation(pd.concat([scores, copy], ignore_index=True),
                                  ["gold-human", "gold-copy"], n_bootstrap=50)
    assert len(table) == 3 and np.allclose(table["r"].to_numpy(float), 1.0)
    assert table["ci_low"].isna().all() and table["ci_high"].isna().all()
    assert table["note"].str.startswith("no interval: gold-human and gold-copy give the same "
                                        "score to each of").all()
    others = evaluator_correlation(scores, ["gpt-4", "gold-human"], n_bootstrap=50)
    assert others["ci_low"].notna().all() and (others["note"] == "").all()
