"""The length-controlled judge leaderboard against statsmodels' OLS and scipy's Kendall tau."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats

from elitr_core.errors import DegenerateDataError
from elitr_core.stats.agreement import cluster_weights, pair_rng
from elitr_core.stats.length_control import LC_COLUMNS, TAU_COLUMNS, length_controlled
from elitr_core.stats.pairs import judge_human_table
from tests.elitr_core.stats.synthetic import frame, row

#: the better models answer shorter: a judge that likes length ranks them the wrong way round
MODELS = {"Long": 5.0, "Mid": 5.5, "Short": 6.0, "Terse": 7.0}
WORDS = {"Long": 180.0, "Mid": 90.0, "Short": 40.0, "Terse": 30.0}


def simulated(n_questions: int = 60, slope: float = 3.0, seed: int = 0,
              humans: tuple[str, ...] = tuple(MODELS)) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Judge scores = model level + slope per 100 words + question effect + noise; the human
    scores the model level + noise (no length preference)."""
    rng = np.random.default_rng(seed)
    rows, lengths = [], []
    for q in range(n_questions):
        difficulty = rng.normal(0, 0.5)
        for model, level in MODELS.items():
            words = max(5.0, rng.normal(WORDS[model], 40))
            key = {"question_id": str(q + 1), "meeting": f"m{q % 6}", "model": model}
            rows.append(row(**key, evaluator="gpt-4",
                            score=level + slope * words / 100 + difficulty + rng.normal(0, 1)))
            if model in humans:
                rows.append(row(**key, evaluator="gold-human",
                                score=level + difficulty + rng.normal(0, 1)))
            lengths.append({**key, "split": "test2", "setting": "qa", "mode": "st",
                            "seed": np.nan, "length": words})
    return frame(rows), pd.DataFrame(lengths)


def ols(table: pd.DataFrame, weights: np.ndarray | None = None) -> np.ndarray:
    """statsmodels OLS of the judge score on model dummies (no intercept) and the length
    centred at the mean length, per 100 words; rows repeated ``weights`` times."""
    common = table["length"].mean()
    x = pd.get_dummies(table["model"]).astype(float)
    x = x[list(pd.unique(table["model"]))]
    x["length"] = (table["length"] - common) / 100
    y = table["judge"]
    if weights is not None:
        x, y = x.loc[x.index.repeat(weights)], y.loc[y.index.repeat(weights)]
    return sm.OLS(y.to_numpy(float), x.to_numpy(float)).fit().params


def joined(df: pd.DataFrame, lengths: pd.DataFrame) -> pd.DataFrame:
    from elitr_core.stats.pairs import with_response_columns

    return with_response_columns(judge_human_table(df, "gpt-4", "gold-human"), lengths,
                                 ["length"])


def test_point_estimates_equal_statsmodels_ols_and_remove_the_planted_length_effect() -> None:
    df, lengths = simulated()
    out, taus = length_controlled(df, "gpt-4", "gold-human", lengths, n_bootstrap=0)
    assert tuple(out.columns) == LC_COLUMNS and tuple(taus.columns) == TAU_COLUMNS
    params = ols(joined(df, lengths))
    by_model = out.set_index("model")
    table = joined(df, lengths)
    for i, model in enumerate(pd.unique(table["model"])):
        assert by_model.loc[model, "lc_mean"] == pytest.approx(params[i], abs=1e-10)
    assert out["slope"].iloc[0] == pytest.approx(params[-1], abs=1e-10)
    assert out["slope"].iloc[0] == pytest.approx(3.0, abs=0.5)  # planted: 3 points / 100 words
    # raw means rank Long (5 + 5.4) first; at a common length the levels come back
    assert by_model["judge_mean"].idxmax() == "Long" and out["model"].iloc[0] == "Terse"
    gap = by_model.loc["Terse", "lc_mean"] - by_model.loc["Long", "lc_mean"]
    assert gap == pytest.approx(2.0, abs=0.5)


def test_a_bootstrap_replicate_is_ols_on_the_explicitly_resampled_questions() -> None:
    from elitr_core.stats.length_control import _design, _fits

    df, lengths = simulated(n_questions=30, seed=3)
    table = joined(df, lengths)
    models = np.asarray(pd.unique(table["model"]))
    x, y, common = _design(table, models)
    clusters = table["_question"].to_numpy()
    weights = cluster_weights(int(clusters.max()) + 1, 3, pair_rng(0, "x"))
    fits = _fits(x, y, clusters, weights)
    for w, fit in zip(weights, fits, strict=True):
        rows = w[clusters]
        reference = sm.OLS(np.repeat(y, rows), np.repeat(x, rows, axis=0)).fit().params
        assert fit == pytest.approx(reference, abs=1e-9)
    assert common == pytest.approx(table["length"].mean())


def test_taus_are_scipys_and_intervals_hold_the_estimates() -> None:
    df, lengths = simulated(seed=1)
    out, taus = length_controlled(df, "gpt-4", "gold-human", lengths, n_bootstrap=200)
    taus = taus.set_index("ranking")
    human = out["human_mean"].to_numpy(float)
    for ranking, column in (("judge mean", "judge_mean"), ("length-controlled", "lc_mean")):
        expected = stats.kendalltau(out[column].to_numpy(float), human).statistic
        assert taus.loc[ranking, "tau"] == pytest.approx(expected, abs=1e-12)
    # with a strong length preference the raw ranking is off, the controlled one is not
    assert taus.loc["judge mean", "tau"] < 0 < taus.loc["length-controlled", "tau"]
    assert ((out["ci_low"] <= out["lc_mean"]) & (out["lc_mean"] <= out["ci_high"])).all()


def test_states_a_study_passes_through() -> None:
    df, lengths = simulated(humans=("Long", "Mid"))
    out, taus = length_controlled(df, "gpt-4", "gold-human", lengths, n_bootstrap=50)
    assert out["human_mean"].notna().sum() == 2 and taus["tau"].isna().all()
    assert taus["note"].str.startswith("gold-human scored 2 of the models").all()
    same = lengths.assign(length=50.0)
    with pytest.raises(DegenerateDataError, match="every judged response has the same length"):
        length_controlled(df, "gpt-4", "gold-human", same)
    with pytest.raises(DegenerateDataError, match="have no stored text"):
        length_controlled(df, "gpt-4", "gold-human", lengths.iloc[5:])


def test_a_constant_judge_has_no_tau_from_rounding() -> None:
    """A judge that gives every response 7: its length-controlled means differ by float
    rounding only (about 1e-15), which gave tau = -0.333; both rankings are one value, so tau
    is undefined and the note says why."""
    df, lengths = simulated(seed=2)
    constant = df.assign(score=np.where(df["evaluator"] == "gpt-4", 7.0, df["score"]))
    out, taus = length_controlled(constant, "gpt-4", "gold-human", lengths, n_bootstrap=50)
    assert np.ptp(out["lc_mean"].to_numpy(float)) < 1e-9
    assert taus["tau"].isna().all() and taus["ci_low"].isna().all()
    assert taus["note"].str.startswith("gpt-4 gives every model the same").all()
