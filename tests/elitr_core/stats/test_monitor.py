"""A study's sequences per model: weights, offsets and fixed-n intervals computed by hand
(scipy's t quantile, the increments written out) against :mod:`elitr_core.stats.monitor`."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from elitr_core.stats.confseq import betting_cs
from elitr_core.stats.monitor import (
    SEQUENCE_COLUMNS,
    expected_further,
    first_reached,
    study_monitor,
    study_sequences,
)
from elitr_core.stats.ppi_cs import Ranges, tuned_lambdas

KEY = {"split": "test2", "setting": "qa", "mode": "st"}


def _study(seed: int = 0, n: int = 40) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 11, n).astype(float)
    judge = np.clip(human + rng.integers(-1, 2, n), 1, 10)
    pi = rng.choice([0.2, 0.5], n)
    obs = pd.DataFrame({**KEY, "model": "M", "human": human, "judge": judge,
                        "probability": pi})
    pop = pd.DataFrame([{**KEY, "model": "M", "responses": 100, "pi_sum": 31.0,
                         "pi_min": 0.2, "pi_max": 0.5, "judge_mean": 6.2},
                        {**KEY, "model": "N", "responses": 50, "pi_sum": 10.0,
                         "pi_min": 0.2, "pi_max": 0.2, "judge_mean": None}])
    return obs, pop


def test_sequences_weight_each_score_by_its_probability() -> None:
    obs, pop = _study()
    table = study_sequences(obs, pop)
    assert tuple(table.columns) == SEQUENCE_COLUMNS
    assert set(table["target"]) == {"human", "bias", "ppi"}  # model N: no score yet
    w = 31.0 / (100 * obs["probability"].to_numpy())  # weights between 0.62 and 1.55
    d = (obs["human"] - obs["judge"]).to_numpy() * w
    lo, hi = betting_cs(d, -9 * 31 / 20, 9 * 31 / 20)
    bias = table[table["target"] == "bias"]
    assert np.allclose(bias["cs_low"], lo) and np.allclose(bias["cs_high"], hi)
    # PPI: lambda_t 6.2 + w (h - lambda_t j), with the rectifier's weight tuned before each
    # score (checked against its own transcription in test_ppi_cs) and bounds by hand
    h, j = obs["human"].to_numpy(), obs["judge"].to_numpy()
    lam = tuned_lambdas(h[None], j[None], w[None],
                        Ranges(judge_mean=6.2, weight_min=0.62, weight_max=1.55))[0]
    x = lam * 6.2 + w * (h - lam * j)
    least, most = 1 - 10 * lam, 10 - lam
    low = np.minimum(0.62 * least, 1.55 * least) + lam * 6.2
    high = 1.55 * most + lam * 6.2
    lo, hi = betting_cs(x, low, high, prior=(1, 10))
    ppi = table[table["target"] == "ppi"]
    assert np.allclose(ppi["cs_low"], lo) and np.allclose(ppi["cs_high"], hi)
    assert (ppi["cs_low"] >= 1).all() and (ppi["cs_high"] <= 10).all()
    n = np.arange(1, x.size + 1)
    mean = np.cumsum(x) / n
    sd = np.array([x[:k].std(ddof=1) if k > 1 else np.nan for k in n])
    half = stats.t.ppf(0.975, np.maximum(n - 1, 1)) * sd / np.sqrt(n)
    assert np.allclose(ppi["fixed_high"].iloc[1:], (mean + half)[1:])
    assert np.isnan(ppi["fixed_low"].iloc[0])
    assert np.allclose(ppi["estimate"], mean)
    assert np.allclose(bias["estimate"], np.cumsum(d) / n)


def test_monitor_reports_the_last_interval_and_the_targets() -> None:
    obs, pop = _study(n=60)
    summary = study_monitor(obs, pop, {"human": 2.0, "bias": 0.2, "ppi": 50.0})
    row = summary.set_index(["model", "target"])
    seq = study_sequences(obs, pop).groupby("target").last()
    for target in ("human", "bias", "ppi"):
        assert row.loc[("M", target), "cs_high"] == pytest.approx(seq.loc[target, "cs_high"])
        assert row.loc[("M", target), "half_width"] == pytest.approx(
            (seq.loc[target, "cs_high"] - seq.loc[target, "cs_low"]) / 2)
    assert row.loc[("M", "ppi"), "reached"] and row.loc[("M", "ppi"), "expected_further"] == 0
    assert not row.loc[("M", "bias"), "reached"]
    assert "no score yet" in row.loc[("N", "human"), "note"]


def test_expected_further_grows_with_the_spread() -> None:
    rng = np.random.default_rng(3)
    narrow = rng.choice([7.0, 8.0], 30)
    wide = rng.choice([1.0, 10.0], 30)
    a = expected_further(narrow, 1, 10, 0.75)
    b = expected_further(wide, 1, 10, 0.75)
    assert 0 < a < b
    assert np.isnan(expected_further(narrow[:1], 1, 10, 0.75))


def test_first_reached_is_when_the_monitor_first_says_reached() -> None:
    obs, pop = _study(seed=4, n=80)
    wanted = {"human": 2.2, "ppi": 1.0}
    at = first_reached(obs, pop, wanted).set_index(["model", "target"])["at"]
    for target, width in wanted.items():
        seq = study_sequences(obs, pop)
        seq = seq[seq["target"] == target]
        narrow = ((seq["cs_high"] - seq["cs_low"]) / 2 <= width).to_numpy()
        expected = float(np.argmax(narrow) + 1) if narrow.any() else np.nan
        assert at[("M", target)] == pytest.approx(expected, nan_ok=True)
    assert np.isnan(at[("N", "human")])  # no score yet
