"""Conversation effects: turn index and single- versus multi-turn.

References: ``scipy.stats.kendalltau`` on the responses (1e-12); every bootstrap replicate
rebuilt explicitly by repeating the drawn meetings (same draws, 1e-10); the Wilcoxon
signed-rank p-value (``p_naive``) and the meetings' sign-flip p-value (``p``) by enumerating
all 2^n sign flips with itertools (exact, 1e-12); the cluster tests' size by simulation under
a null with meeting effects (tolerances stated in the tests); the bundled data for the shape
of the tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from elitr_core.errors import DegenerateDataError
from elitr_core.stats.conversation import (
    ST_MT_COLUMNS,
    TURN_COLUMNS,
    st_vs_mt,
    turn_effect,
)
from tests.elitr_core.stats.cluster_references import (
    exact_sign_flip_p,
    exact_wilcoxon_p,
    explicit_cluster_bootstrap,
)
from tests.elitr_core.stats.synthetic import bundled, frame, row


def conversations(n_meetings: int = 6, turns: int = 12, seed: int = 0) -> pd.DataFrame:
    """Model A degrades by 0.3 per turn in mt; st answers of the same questions do not."""
    rng = np.random.default_rng(seed)
    rows = []
    for m in range(n_meetings):
        for t in range(1, turns + 1):
            base = rng.normal(6, 1.5)
            for mode, drift in (("st", 0.0), ("mt", -0.3 * t)):
                score = float(np.clip(np.round(base + drift + 2 + rng.normal(0, 1)), 1, 10))
                rows.append(row(meeting=f"meeting_en_dev_00{m}", question_id=t, split="dev",
                                mode=mode, model="A", score=score))
    return frame(rows)


def test_turn_effect_against_scipy_and_explicit_bootstrap() -> None:
    df = conversations()
    out = turn_effect(df, n_bootstrap=200)
    assert list(out.columns) == list(TURN_COLUMNS)
    got = out.iloc[0]
    mt = df[df["mode"] == "mt"].reset_index(drop=True)
    ref = stats.kendalltau(mt["question_id"], mt["score"])
    assert (got["tau"], got["p_naive"]) == pytest.approx((ref.statistic, ref.pvalue),
                                                         abs=1e-12)
    assert (got["n"], got["n_meetings"]) == (72, 6)
    assert got["ci_high"] < 0  # the simulated decline
    x, y = mt["question_id"].to_numpy(float), mt["score"].to_numpy()
    reps = explicit_cluster_bootstrap(mt["meeting"].to_numpy(),
                                      lambda i: stats.kendalltau(x[i], y[i]).statistic,
                                      ("A", "qa", "gpt-4", "turn"), 200)
    assert (got["ci_low"], got["ci_high"]) == pytest.approx(
        tuple(np.quantile(reps, [0.025, 0.975])), abs=1e-10)
    # twice the smaller share of replicates on one side of 0, at least 1/B
    share = min((reps <= 0).mean(), (reps >= 0).mean())
    assert got["p"] == pytest.approx(max(2 * share, 1 / 200), abs=1e-12)
    assert got["note"] == ""


def test_st_vs_mt_paired_difference_and_wilcoxon() -> None:
    df = conversations(n_meetings=3, turns=4, seed=3)
    out = st_vs_mt(df, n_bootstrap=200)
    assert list(out.columns) == list(ST_MT_COLUMNS)
    got = out.iloc[0]
    st = df[df["mode"] == "st"].set_index(["meeting", "question_id"])["score"]
    mt = df[df["mode"] == "mt"].set_index(["meeting", "question_id"])["score"]
    diff = (mt - st.loc[mt.index]).to_numpy()
    assert got["n"] == 12 and got["difference"] == pytest.approx(diff.mean(), abs=1e-12)
    nonzero = diff[diff != 0]
    if np.unique(np.abs(nonzero)).size == nonzero.size:  # no ties: scipy's exact test
        assert got["p_naive"] == pytest.approx(exact_wilcoxon_p(nonzero), abs=1e-12)
    else:
        assert got["p_naive"] == pytest.approx(stats.wilcoxon(diff).pvalue, abs=1e-12)
    meetings = mt.index.get_level_values("meeting").to_numpy()
    sums = pd.Series(diff).groupby(meetings).sum().to_numpy()
    assert got["p"] == pytest.approx(exact_sign_flip_p(sums), abs=1e-12)
    assert got["n_meetings"] == 3 and "cannot go below p = 0.25" in got["note"]
    reps = explicit_cluster_bootstrap(meetings, lambda i: diff[i].mean(),
                                      ("A", "qa", "gpt-4", "st-mt"), 200)
    assert (got["ci_low"], got["ci_high"]) == pytest.approx(
        tuple(np.quantile(reps, [0.025, 0.975])), abs=1e-10)


def test_exact_wilcoxon_reference_on_a_tie_free_sample() -> None:
    diff = np.array([-1.5, 2.25, 3.0, 4.5, -0.5, 6.0, 7.25, 8.0, 9.5, 1.0])
    assert stats.wilcoxon(diff).pvalue == pytest.approx(exact_wilcoxon_p(diff), abs=1e-12)


def test_bundled_data_tables() -> None:
    df = bundled()
    turns = turn_effect(df[df["evaluator"] == "gpt-4"], n_bootstrap=100)
    assert set(turns["setting"]) == {"qa", "conv"} and len(turns) == 16  # 8 models x 2
    assert turns["n_meetings"].eq(18).all()
    paired = st_vs_mt(df[df["evaluator"] == "gpt-4"], n_bootstrap=100)
    assert len(paired) == 8 and paired["n"].eq(271).all()  # QA: st and mt, every question
    assert paired["n_meetings"].eq(18).all() and paired["note"].eq("").all()
    # the meetings' test and interval agree; the naive test is never less significant here
    assert (paired["p"] >= paired["p_naive"]).all()
    with pytest.raises(DegenerateDataError, match="both single-turn and multi-turn"):
        st_vs_mt(df[(df["evaluator"] == "gpt-4") & (df["mode"] == "mt")])
    with pytest.raises(DegenerateDataError, match="mode mt"):
        turn_effect(df[df["mode"] == "st"])


def null_conversations(rng: np.random.Generator, n_meetings: int = 12) -> pd.DataFrame:
    """No mode effect, but a meeting effect on mt - st shared by the meeting's questions
    (its conversation went well or badly) and meetings of 4 to 20 questions."""
    rows = []
    for m in range(n_meetings):
        shift = rng.normal(0, 1.0)  # symmetric about 0: the null holds over meetings
        level = rng.normal(0, 1.0)
        for t in range(1, int(rng.integers(4, 21)) + 1):
            base = 5 + level + rng.normal(0, 1)
            for mode, move in (("st", 0.0), ("mt", shift)):
                rows.append(row(meeting=f"meeting_en_dev_{m:03d}", question_id=t, split="dev",
                                mode=mode, model="A",
                                score=float(base + move + rng.normal(0, 0.5))))
    return frame(rows)


def test_cluster_tests_hold_their_size_where_the_naive_ones_do_not() -> None:
    """Simulation, 300 null data sets of 12 meetings at alpha = 0.05: the meetings' sign-flip
    test rejects 0.02-0.08 of them (an exact test: 0.05 up to Monte Carlo error, sd 0.013);
    Wilcoxon over questions rejects far more (> 0.3), which is the bug this fixes."""
    rng = np.random.default_rng(20)
    cluster = naive = 0
    for _ in range(300):
        out = st_vs_mt(null_conversations(rng), n_bootstrap=0).iloc[0]
        cluster += out["p"] < 0.05
        naive += out["p_naive"] < 0.05
    assert 0.02 <= cluster / 300 <= 0.08
    assert naive / 300 > 0.3


def drifting_conversations(rng: np.random.Generator, n_meetings: int = 18) -> pd.DataFrame:
    """No turn effect over meetings, but each meeting's conversation drifts its own way (a
    slope symmetric about 0) from its own level; meetings of 4 to 20 turns."""
    rows = []
    for m in range(n_meetings):
        slope, level = rng.normal(0, 0.15), rng.normal(0, 1)
        for t in range(1, int(rng.integers(4, 21)) + 1):
            score = float(np.round(5 + level + slope * (t - 10) + rng.normal(0, 1)))
            rows.append(row(meeting=f"meeting_en_dev_{m:03d}", question_id=t, split="dev",
                            mode="mt", model="A", score=score))
    return frame(rows)


def test_turn_effect_p_agrees_with_its_interval_and_holds_its_size() -> None:
    """Simulation, 300 null data sets of 18 meetings (the bundled count) at alpha = 0.05:
    Kendall's p over responses rejects > 0.2 of them (seen 0.31); the cluster-bootstrap p
    at most 0.14 (seen 0.10: a percentile bootstrap over 18 clusters is somewhat liberal, as
    its interval; sd of the rate 0.018). On every data set p < 0.05 exactly when the 95%
    interval leaves 0 out (away from the boundary by 2/B)."""
    rng = np.random.default_rng(5)
    cluster = naive = 0
    for _ in range(300):
        out = turn_effect(drifting_conversations(rng), n_bootstrap=200).iloc[0]
        excludes = out["ci_low"] > 0 or out["ci_high"] < 0
        if abs(out["p"] - 0.05) > 2 / 200:
            assert (out["p"] < 0.05) == excludes
        cluster += out["p"] < 0.05
        naive += out["p_naive"] < 0.05
    assert cluster / 300 <= 0.14
    assert naive / 300 > 0.2


def test_few_meetings_make_the_turn_bootstrap_liberal_and_say_so() -> None:
    """Simulation, 200 null data sets of 3 drifting meetings: the bootstrap p rejects > 0.1
    of them at 0.05 (seen 0.165, sd 0.026), which is why such rows carry a note."""
    rng = np.random.default_rng(7)
    rejected = 0
    for _ in range(200):
        out = turn_effect(drifting_conversations(rng, n_meetings=3), n_bootstrap=200).iloc[0]
        rejected += out["p"] < 0.05
        assert out["note"].startswith("only 3 meetings")
    assert rejected / 200 > 0.1


def test_degenerate_groups_get_a_note_not_a_number() -> None:
    flat = conversations(n_meetings=3, turns=4).assign(score=7.0)
    turn = turn_effect(flat, n_bootstrap=50).iloc[0]
    assert pd.isna(turn["tau"]) and pd.isna(turn["p"]) and "every score is 7" in turn["note"]
    same = st_vs_mt(flat, n_bootstrap=50).iloc[0]
    assert pd.isna(same["p_naive"]) and same["p"] == 1.0
    assert same["note"] == "every difference is 0: mt and st scores are the same"
    one = conversations(n_meetings=1, turns=6)
    turn = turn_effect(one, n_bootstrap=50).iloc[0]
    assert np.isfinite(turn["tau"]) and pd.isna(turn["ci_low"]) and pd.isna(turn["p"])
    assert "one meeting only" in turn["note"]
    paired = st_vs_mt(one, n_bootstrap=50).iloc[0]
    assert pd.isna(paired["p"]) and pd.isna(paired["ci_low"]) and "one meeting" in paired["note"]
    first = conversations(n_meetings=3, turns=4)
    first = first[first["question_id"] == 1]  # one turn per meeting
    assert "same turn" in turn_effect(first, n_bootstrap=50).iloc[0]["note"]
