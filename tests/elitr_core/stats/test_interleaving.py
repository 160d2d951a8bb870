"""Isolated versus interleaved and score against memory span, checked against independent
computations: the paired mean difference by hand and its sign-flip p by enumerating every sign
pattern over conversations (itertools, exact), the trend by statsmodels' OLS with
its slope (tolerance 1e-9), the interval by the CR2 textbook formulas with full matrices
(1e-9; wider than statsmodels' CR1 interval), its p by statsmodels refitted on every
wild-bootstrap sign pattern (1e-12), and the states of a live study (a
model with no isolated run, one conversation, every span the same, a constant score, a run
stored without its conversations, too few conversations for p < 0.05)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats

from elitr_core.errors import DegenerateDataError
from elitr_core.stats.interleaving import (
    cluster_slope,
    isolated_vs_interleaved,
    span_trend,
)
from elitr_core.vocab import SCORE_COLUMNS
from tests.elitr_core.stats.cluster_references import dense_cr2, statsmodels_wild_p

MEETINGS = [f"meeting_en_dev_{i:03d}" for i in range(1, 7)]
#: ``--interleave 2``: the six meetings asked in three conversations of two.
CONVERSATION = {m: "+".join(MEETINGS[i // 2 * 2: i // 2 * 2 + 2]) for i, m in enumerate(MEETINGS)}


def scores_and_spans(rng: np.random.Generator, questions: int = 4) -> tuple[pd.DataFrame,
                                                                            pd.DataFrame]:
    """Model M: Conv-mt, QA-st and an interleaved run ``M (16k)`` of six meetings; a judge."""
    rows, spans = [], []
    for meeting, number, (setting, mode, label) in itertools.product(
            MEETINGS, range(1, questions + 1),
            [("conv", "mt", "M"), ("qa", "st", "M"), ("conv", "int2", "M (16k)")]):
        score = float(rng.integers(1, 11))
        rows.append({"meeting": meeting, "question_id": number, "split": "dev",
                     "setting": setting, "mode": mode, "seed": 2023, "model": label,
                     "question_type": "who", "answer_position": "B", "evaluator": "judge",
                     "annotator": None, "sample": 0, "score": score})
        if mode == "int2":
            spans.append({"meeting": meeting, "question_id": number, "split": "dev",
                          "setting": setting, "mode": mode, "seed": 2023, "model": label,
                          "base_model": "M", "span": float(rng.integers(10_000, 22_000)),
                          "conversation": CONVERSATION[meeting]})
    return pd.DataFrame(rows, columns=list(SCORE_COLUMNS)), pd.DataFrame(spans)


def exact_sign_flip(diff: pd.Series, clusters: pd.Series) -> float:
    """Every one of the 2^M sign patterns over the clusters' sums."""
    sums = diff.groupby(clusters).sum().to_numpy()
    observed = abs(sums.sum())
    totals = [abs(np.dot(signs, sums))
              for signs in itertools.product((1, -1), repeat=len(sums))]
    return float(np.mean([t >= observed - 1e-12 for t in totals]))


def test_isolated_vs_interleaved_equals_a_hand_computation() -> None:
    df, spans = scores_and_spans(np.random.default_rng(3))
    table = isolated_vs_interleaved(df, spans, n_bootstrap=200, seed=1)
    assert list(table["isolated"]) == ["Conv-mt", "QA-st"]
    interleaved = df[df["mode"] == "int2"].set_index(["meeting", "question_id"])["score"]
    for _, row in table.iterrows():
        setting, mode = ("conv", "mt") if row["isolated"] == "Conv-mt" else ("qa", "st")
        alone = df[(df["mode"] == mode) & (df["setting"] == setting)].set_index(
            ["meeting", "question_id"])["score"]
        diff = (interleaved - alone).dropna()
        conversations = pd.Series(diff.index.get_level_values("meeting").map(CONVERSATION),
                                  index=diff.index)
        assert (row["model"], row["run"], row["mode"]) == ("M", "M (16k)", "int2")
        assert row["n"] == 24 and row["n_meetings"] == 6 and row["n_conversations"] == 3
        assert row["difference"] == pytest.approx(diff.mean(), abs=1e-12)
        assert row["mean_isolated"] == pytest.approx(alone.mean(), abs=1e-12)
        assert row["p"] == pytest.approx(exact_sign_flip(diff, conversations), abs=1e-12)
        assert row["ci_low"] <= row["difference"] <= row["ci_high"]
        # three conversations: 2 of the 8 sign patterns are the observed one and its negation
        assert row["p"] >= 0.25 and row["note"] == (
            "with 3 conversations the sign-flip test cannot go below p = 0.25: no difference "
            "can reach p < 0.05")


def test_span_trend_equals_statsmodels_slope_and_the_cr2_interval() -> None:
    """The slope is statsmodels' OLS slope; the interval is CR2 on Satterthwaite degrees of
    freedom (the textbook formulas with full matrices, ``dense_cr2``), wider than the CR1
    interval (statsmodels' ``cov_type="cluster"``) printed before, which covers too seldom
    with three conversations."""
    df, spans = scores_and_spans(np.random.default_rng(5), questions=6)
    table = span_trend(df, spans, bucket=4000)
    trend = table[table["bucket"] == "trend"].iloc[0]
    joined = df[df["mode"] == "int2"].merge(spans, on=["meeting", "question_id"])
    x = joined["span"].to_numpy() / 1000
    fit = sm.OLS(joined["score"].to_numpy(), sm.add_constant(x)).fit(
        cov_type="cluster", cov_kwds={"groups": pd.factorize(joined["conversation"])[0]},
        use_t=True)
    low, high = fit.conf_int(alpha=0.05)[1]
    assert trend["slope"] == pytest.approx(fit.params[1], abs=1e-9)
    groups = pd.factorize(joined["conversation"])[0]
    assert trend["p"] == pytest.approx(statsmodels_wild_p(x, joined["score"].to_numpy(float),
                                                          groups), abs=1e-12)
    se, df_cr2 = dense_cr2(x, joined["score"].to_numpy(float), groups)
    half = stats.t.ppf(0.975, df_cr2) * se
    assert trend["note"] == ("with 3 conversations no trend can reach p < 0.05 (the smallest "
                             f"p is 0.25); the interval rests on {df_cr2:.2g} degrees of freedom")
    assert (trend["ci_low"], trend["ci_high"]) == pytest.approx(
        (fit.params[1] - half, fit.params[1] + half), abs=1e-9)
    assert trend["ci_high"] - trend["ci_low"] > high - low
    assert trend["n"] == 36 and trend["n_meetings"] == 6 and trend["n_conversations"] == 3
    buckets = table[table["bucket"] != "trend"]
    assert buckets["n"].sum() == 36
    for _, row in buckets.iterrows():
        inside = joined[(joined["span"] >= row["span_low"]) & (joined["span"] < row["span_high"])]
        assert row["n"] == len(inside) and row["mean"] == pytest.approx(inside["score"].mean())
        assert row["bucket"] == f"{row['span_low']:g}-{row['span_high']:g}"


def test_cluster_slope_on_a_textbook_case() -> None:
    """Two meetings, exact line: slope 2, residuals 0."""
    x = np.array([0.0, 1.0, 2.0, 3.0])
    fit = cluster_slope(x, 1 + 2 * x, np.array(["a", "a", "b", "b"]))
    assert fit["slope"] == pytest.approx(2.0) and fit["se"] == pytest.approx(0.0, abs=1e-12)


def test_live_study_states_leave_cells_empty_and_say_why() -> None:
    df, spans = scores_and_spans(np.random.default_rng(7))
    only = df[df["mode"] == "int2"]
    with pytest.raises(DegenerateDataError, match="also answered isolated"):
        isolated_vs_interleaved(only, spans)
    with pytest.raises(DegenerateDataError, match="no interleaved run"):
        span_trend(df[df["mode"] != "int2"], spans)
    one = df[df["meeting"] == MEETINGS[0]]
    row = isolated_vs_interleaved(one, spans, n_bootstrap=50).iloc[0]
    assert pd.isna(row["p"]) and pd.isna(row["ci_low"]) and "one conversation" in row["note"]
    trend = span_trend(one, spans).set_index("bucket").loc["trend"]
    assert pd.isna(trend["slope"]) and "2 conversations" in trend["note"]
    flat = spans.assign(span=15_000.0)
    trend = span_trend(df, flat).set_index("bucket").loc["trend"]
    assert pd.isna(trend["p"]) and "same span" in trend["note"]
    constant = df.assign(score=5.0)
    row = isolated_vs_interleaved(constant, spans, n_bootstrap=50).iloc[0]
    assert row["difference"] == 0 and "the same" in row["note"]
    trend = span_trend(constant, spans).set_index("bucket").loc["trend"]
    assert trend["slope"] == pytest.approx(0.0, abs=1e-12) and "residuals" in trend["note"]


def test_conversations_not_meetings_are_the_clusters() -> None:
    """The same scores give another p and interval with meetings as the clusters (the old
    tables) than with their conversations; the table's are the conversations'."""
    df, spans = scores_and_spans(np.random.default_rng(13), questions=5)
    as_meetings = spans.assign(conversation=spans["meeting"])
    paired = isolated_vs_interleaved(df, spans, n_bootstrap=200, seed=1).iloc[0]
    alone = isolated_vs_interleaved(df, as_meetings, n_bootstrap=200, seed=1).iloc[0]
    assert (paired["n_conversations"], alone["n_conversations"]) == (3, 6)
    assert paired["difference"] == alone["difference"]
    keyed = df.set_index(["meeting", "question_id", "setting", "mode"])["score"]
    diff = (keyed.xs(("conv", "int2"), level=("setting", "mode"))
            - keyed.xs(("conv", "mt"), level=("setting", "mode")))
    meeting = pd.Series(diff.index.get_level_values("meeting"), index=diff.index)
    assert paired["p"] == pytest.approx(exact_sign_flip(diff, meeting.map(CONVERSATION)))
    assert alone["p"] == pytest.approx(exact_sign_flip(diff, meeting))
    assert paired["p"] != pytest.approx(alone["p"])
    trend = span_trend(df, spans).set_index("bucket").loc["trend"]
    by_meeting = span_trend(df, as_meetings).set_index("bucket").loc["trend"]
    assert trend["slope"] == pytest.approx(by_meeting["slope"], abs=1e-12)
    assert trend["p"] != pytest.approx(by_meeting["p"], abs=1e-6)


def test_a_run_without_its_conversations_is_said() -> None:
    df, spans = scores_and_spans(np.random.default_rng(13))
    planless = spans.assign(conversation=pd.NA)
    row = isolated_vs_interleaved(df, planless, n_bootstrap=50).iloc[0]
    assert row["n_conversations"] == 6 and "without its conversations" in row["note"]
    trend = span_trend(df, planless).set_index("bucket").loc["trend"]
    assert "without its conversations" in trend["note"] and pd.notna(trend["p"])
    assert "without" not in isolated_vs_interleaved(df, spans, n_bootstrap=50).iloc[0]["note"]


def test_conversations_of_two_runs_sharing_a_meeting_are_one_cluster() -> None:
    """A second run of M grouped other meetings together (another seed): its conversations
    and the first run's share meetings, so the span trend over both runs joins them; with
    groupings (1+2, 3+4, 5+6) and (2+3, 4+5, 1+6) everything is one cluster."""
    df, spans = scores_and_spans(np.random.default_rng(17))
    other = {m: "+".join(sorted((m, MEETINGS[(i + (1 if i % 2 else -1)) % 6])))
             for i, m in enumerate(MEETINGS)}
    second = df[df["mode"] == "int2"].assign(seed=7)
    second_spans = spans.assign(seed=7, conversation=spans["meeting"].map(other))
    trend = span_trend(pd.concat([df, second]), pd.concat([spans, second_spans]))
    row = trend.set_index("bucket").loc["trend"]
    assert row["n_conversations"] == 1 and pd.isna(row["p"]) and "one conversation" in row["note"]
