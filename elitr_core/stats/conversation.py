"""Conversation effects: do models degrade as a conversation goes on, or inside one at all?

Two views, after the LTM benchmark's finding that models answer worse when the same tasks are
asked inside one long conversation than in isolation:

- turn effect (multi-turn runs): Kendall's tau between a response's turn index (the question's
  position in its meeting's conversation) and its score, per model; a negative tau means
  later turns score lower. Interval: percentile cluster bootstrap over *meetings* (a
  conversation's turns are not independent), and the p-value read from the same replicates.
- single-turn versus multi-turn: per model, the same question answered in isolation (``st``)
  and inside the conversation (``mt``), paired; the mean of mt - st with a cluster-bootstrap
  interval over meetings and a sign-flip permutation test over meetings (the Wilcoxon
  signed-rank test over questions only as a labelled extra, ``p_naive``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from elitr_core.errors import DegenerateDataError
from elitr_core.stats._corr_bootstrap import bootstrap_kendall
from elitr_core.stats.agreement import cluster_weights, pair_rng, percentile_ci
from elitr_core.stats.cluster_tests import bootstrap_p, one_meeting_note
from elitr_core.stats.frame import contract_types
from elitr_core.stats.leaderboard import response_scores
from elitr_core.stats.paired import paired_by_meeting
from elitr_core.vocab import EXPORT_COLUMNS

TURN_COLUMNS: tuple[str, ...] = EXPORT_COLUMNS["turn-effect"]
"""Columns of ``export turn-effect``."""

ST_MT_COLUMNS: tuple[str, ...] = EXPORT_COLUMNS["st-vs-mt"]
"""Columns of ``export st-vs-mt``."""

_KEY = ["model", "setting", "evaluator"]
#: Below this many meetings the turn effect's bootstrap is markedly liberal (a null
#: simulation, tests/elitr_core/stats/test_conversation.py: 0.17 at 0.05 with 3 meetings,
#: 0.08-0.10 with 5 to 18).
FEW_MEETINGS = 5


def _meeting_weights(codes: np.ndarray, n_bootstrap: int, seed: int,
                     *names: str) -> np.ndarray:
    return cluster_weights(int(codes.max()) + 1, n_bootstrap, pair_rng(seed, *names))


def turn_index(responses: pd.DataFrame) -> pd.Series:
    """1-based position of each response's question in its meeting (by question number)."""
    number = pd.to_numeric(responses["question_id"], errors="coerce")
    return number.groupby([responses["split"], responses["meeting"]]).rank(method="dense")


def _turn_row(group: pd.DataFrame, names: tuple[str, ...], n_bootstrap: int, seed: int,
              confidence: float) -> dict[str, object]:
    """One ``turn-effect`` row; an undefined statistic leaves its cells empty and says why."""
    x, y = group["turn"].to_numpy(float), group["score"].to_numpy(float)
    codes = pd.factorize(group["meeting"])[0]
    n_meetings = int(codes.max()) + 1
    out: dict[str, object] = {"n": len(group), "n_meetings": n_meetings,
                              "note": one_meeting_note(n_meetings)}
    if np.ptp(x) == 0:
        return {**out, "note": "every response is at the same turn: Kendall's tau needs 2 "
                               "turns or more"}
    if np.ptp(y) == 0:
        return {**out, "note": f"every score is {y[0]:g}: Kendall's tau is undefined for a "
                               "constant score"}
    result = stats.kendalltau(x, y)
    out.update(tau=float(result.statistic), p_naive=float(result.pvalue))
    if n_meetings < 2 or not n_bootstrap:
        return out
    reps = bootstrap_kendall(x, y, codes, _meeting_weights(codes, n_bootstrap, seed, *names))
    try:
        out["ci_low"], out["ci_high"] = percentile_ci(reps, confidence,
                                                      f"turn effect of {names[0]}")
    except DegenerateDataError as error:
        return {**out, "note": str(error)}
    out["p"] = bootstrap_p(reps)
    if n_meetings < FEW_MEETINGS:
        out["note"] = (f"only {n_meetings} meetings: a bootstrap over so few understates the "
                       "uncertainty (in a null simulation with 3 meetings p < 0.05 in 17% of "
                       "data sets); read the interval and p as rough")
    return out


def turn_effect(df: pd.DataFrame, n_bootstrap: int = 1000, seed: int = 0,
                confidence: float = 0.95) -> pd.DataFrame:
    """Kendall's tau-b of score against turn index, per model, setting and evaluator (mt only).

    Parameters
    ----------
    df : pandas.DataFrame
        Long scores table; only ``mode == "mt"`` rows are used.
    n_bootstrap, seed, confidence
        Percentile cluster bootstrap over meetings.

    Returns
    -------
    pandas.DataFrame
        ``TURN_COLUMNS``; ``tau`` is ``scipy.stats.kendalltau`` on the responses. ``p`` is the
        cluster-bootstrap p-value of tau = 0 from the interval's own replicates
        (:func:`~elitr_core.stats.cluster_tests.bootstrap_p`: below 0.05 exactly when the 95%
        interval leaves 0 out); ``p_naive`` is scipy's p-value, which takes every response
        as independent and is too small when a meeting's turns move together. ``note`` says
        why a cell is empty (a constant score, one turn, one meeting).

    References
    ----------
    Castillo-Bolado, D., et al. (2024). Beyond prompts: Dynamic conversational benchmarking of
    large language models (LTM benchmark). NeurIPS 2024 Datasets and Benchmarks.
    Kendall, M. G. (1945). The treatment of ties in ranking problems. Biometrika, 33(3).
    """
    responses = response_scores(df[df["mode"] == "mt"]) if (df["mode"] == "mt").any() else None
    if responses is None:
        raise DegenerateDataError("no multi-turn score under the current filters: the turn "
                                  "effect needs mode mt")
    responses = responses.assign(turn=turn_index(responses))
    rows = []
    for key, group in responses.groupby(_KEY, sort=True):
        names = (*(str(k) for k in key), "turn")
        rows.append({**dict(zip(_KEY, key, strict=True)),
                     **_turn_row(group, names, n_bootstrap, seed, confidence)})
    return contract_types(pd.DataFrame(rows), TURN_COLUMNS, _KEY)


def st_vs_mt(df: pd.DataFrame, n_bootstrap: int = 1000, seed: int = 0,
             confidence: float = 0.95) -> pd.DataFrame:
    """Multi-turn minus single-turn score per model, paired by question.

    Returns
    -------
    pandas.DataFrame
        ``ST_MT_COLUMNS``, one row per model, setting and evaluator holding both modes;
        ``n`` counts the questions answered in both, ``n_meetings`` their meetings.
        ``ci_low``/``ci_high``: percentile bootstrap over meetings. ``p``: the sign-flip
        permutation test over meetings (:func:`~elitr_core.stats.cluster_tests.sign_flip_p`,
        exact up to 20 meetings), which like the interval takes the meeting as the unit.
        ``wilcoxon`` and ``p_naive``: ``scipy.stats.wilcoxon`` (two-sided; zero differences
        dropped), which takes every question as independent and is too small when a
        meeting's questions move together; both empty when every difference is zero.
        ``note`` says why a cell is empty or what limits the test.

    References
    ----------
    Wilcoxon, F. (1945). Individual comparisons by ranking methods. Biometrics Bulletin, 1(6).
    Castillo-Bolado et al. (2024), LTM benchmark (see :func:`turn_effect`).
    """
    responses = response_scores(df)
    keys = [*_KEY, "split", "meeting", "question_id"]
    st = responses[responses["mode"] == "st"].groupby(keys, dropna=False)["score"].mean()
    mt = responses[responses["mode"] == "mt"].groupby(keys, dropna=False)["score"].mean()
    paired = pd.concat([st.rename("st"), mt.rename("mt")], axis=1, join="inner").reset_index()
    if paired.empty:
        raise DegenerateDataError("no question answered both single-turn and multi-turn under "
                                  "the current filters: include both modes (setting qa)")
    rows = []
    for key, group in paired.groupby(_KEY, sort=True):
        names = (*(str(k) for k in key), "st-mt")
        rows.append({**dict(zip(_KEY, key, strict=True)),
                     "mean_st": float(group["st"].mean()), "mean_mt": float(group["mt"].mean()),
                     **paired_by_meeting((group["mt"] - group["st"]).to_numpy(float),
                                         group["meeting"].to_numpy(), names,
                                         n_bootstrap=n_bootstrap, seed=seed,
                                         confidence=confidence,
                                         same="mt and st scores are the same")})
    return contract_types(pd.DataFrame(rows), ST_MT_COLUMNS, _KEY)
