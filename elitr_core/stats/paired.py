"""Paired differences question by question, with the meeting as the unit of inference.

Two tables compare two sets of answers to the same questions: ``model-difference`` (two
models, e.g. ``MODEL`` and its retrieval run ``MODEL (bm25)``) and ``st-vs-mt`` (one model
single- versus multi-turn, :mod:`.conversation`). The questions of one meeting share a
transcript (and, in multi-turn, one conversation), so they are not independent: both tables
take the meeting as the unit, through :func:`paired_by_meeting`, one code path. The interval
is a percentile bootstrap over meetings, ``p`` the sign-flip permutation test over meetings,
and the Wilcoxon signed-rank test over questions stays beside them as ``p_naive``, labelled
as the test that takes every question as independent.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from elitr_core.errors import DegenerateDataError
from elitr_core.stats.agreement import cluster_weights, pair_rng, percentile_ci
from elitr_core.stats.cluster_tests import one_meeting_note, sign_flip_p, smallest_sign_flip_p
from elitr_core.stats.frame import ZERO_WIDTH, contract_types
from elitr_core.stats.leaderboard import response_scores
from elitr_core.vocab import EXPORT_COLUMNS

DIFFERENCE_COLUMNS: tuple[str, ...] = EXPORT_COLUMNS["model-difference"]
"""Columns of ``export model-difference``."""

_QUESTION = ["meeting", "question_id", "split", "setting", "mode", "evaluator"]
_KEY = ["model_a", "model_b", "setting", "mode", "evaluator"]
#: Meeting means this close (relative) count as equal: the interval would have zero width.
_SAME_MEAN = 1e-12


def paired_by_meeting(diff: np.ndarray, meetings: Sequence[str] | np.ndarray,
                      names: Sequence[str], *, n_bootstrap: int, seed: int,
                      confidence: float, same: str, unit: str = "meeting") -> dict[str, object]:
    """Mean of the paired differences with the meeting as the unit: interval, test, note.

    Parameters
    ----------
    diff : numpy.ndarray
        One paired difference per question.
    meetings : array-like
        The meeting of each question (the cluster).
    names : sequence of str
        Seed the row's generators (:func:`~elitr_core.stats.agreement.pair_rng`), so a row's
        interval and ``p`` do not depend on the other rows of the table.
    n_bootstrap, seed, confidence
        Percentile bootstrap over meetings (``n_bootstrap = 0``: no interval).
    same : str
        What an all-zero difference means, for the note ("mt and st scores are the same").
    unit : str
        What a cluster is, for the notes: a ``meeting`` (default) or, for interleaved runs,
        a ``conversation`` (:mod:`.interleaving`).

    Returns
    -------
    dict
        ``n``, ``n_meetings``, ``difference`` (the mean over questions); ``ci_low``/
        ``ci_high``: a replicate draws as many meetings as there are, with replacement, and
        takes the mean difference over all the drawn meetings' questions. ``p``: the sign-flip
        test over meetings (:func:`~elitr_core.stats.cluster_tests.sign_flip_p`, exact up to
        20 meetings). ``wilcoxon``/``p_naive``: ``scipy.stats.wilcoxon`` over questions
        (two-sided, zero differences dropped), which takes every question as independent and
        is too small when a meeting's questions move together. Keys are left out when
        undefined: no interval or ``p`` with one meeting, no interval when every meeting's
        mean difference is the same (it would have zero width), no Wilcoxon test when every
        difference is 0. ``note`` says why, or what limits the test.

    References
    ----------
    Field, C. A., & Welsh, A. H. (2007). Bootstrapping clustered data. JRSS B, 69(3).
    Cameron, A. C., Gelbach, J. B., & Miller, D. L. (2008). Bootstrap-based improvements for
    inference with clustered errors. Review of Economics and Statistics, 90(3), 414-427.
    Wilcoxon, F. (1945). Individual comparisons by ranking methods. Biometrics Bulletin 1(6).

    Examples
    --------
    >>> row = paired_by_meeting(np.array([1.0, 2.0, 0.0, 3.0, -1.0, 2.0]), list("aabbcc"),
    ...                         ("A", "B"), n_bootstrap=200, seed=0, confidence=0.95,
    ...                         same="A and B score the same")
    >>> row["n_meetings"], row["difference"], row["p"]  # all 8 sign flips: 2 reach |7|
    (3, 1.1666666666666667, 0.25)
    """
    codes = pd.factorize(np.asarray(meetings))[0]
    n_meetings = int(codes.max()) + 1
    out: dict[str, object] = {"n": diff.size, "n_meetings": n_meetings,
                              "difference": float(diff.mean())}
    if not np.any(diff):
        out["note"] = f"every difference is 0: {same}"
    else:
        out["wilcoxon"], out["p_naive"] = signed_rank_test(diff)
    if n_meetings < 2:
        return {"note": one_meeting_note(n_meetings, unit), **out}
    sums = np.bincount(codes, weights=diff)
    counts = np.bincount(codes).astype(float)
    out["p"] = sign_flip_p(sums, max(n_bootstrap, 10_000), pair_rng(seed, *names, "sign-flip"))
    if "note" in out:
        return out
    notes = [_zero_width_note(diff, sums / counts, unit)] if n_bootstrap else []
    if n_bootstrap and not notes[0]:
        weights = cluster_weights(n_meetings, n_bootstrap, pair_rng(seed, *names))
        out["ci_low"], out["ci_high"] = percentile_ci(
            (weights @ sums) / (weights @ counts), confidence, f"difference of {names[0]}")
    if smallest_sign_flip_p(n_meetings) > 1 - confidence:
        notes.append(f"with {n_meetings} {unit}s the sign-flip test cannot go below p = "
                     f"{smallest_sign_flip_p(n_meetings):.3g}: no difference can reach "
                     f"p < {1 - confidence:.2g}")
    out["note"] = "; ".join(note for note in notes if note)
    return out


#: scipy.stats.wilcoxon's exact sign-flip test with ties or zeros: up to this many differences
#: (zeros included) its "auto" method enumerates every flip (2**13 < 9,999 resamples).
_ENUMERATED = 13


def signed_rank_test(diff: np.ndarray) -> tuple[float, float]:
    """``scipy.stats.wilcoxon(diff)`` (two-sided, zeros dropped, ``method="auto"``): its
    statistic and p-value, equal to scipy's.

    Where scipy's "auto" method runs ``scipy.stats.permutation_test`` (ties or zeros among at
    most 13 differences: every one of the 2**n sign flips), the same exact null distribution
    is one matrix product here, written by hand because scipy re-ranks each of the 8,192
    flipped samples: about 1 CPU-s a call on the 2-core machine, 19 of the 20 CPU-s that
    ``export model-difference`` took on the tests' small benchmark (18 rows). Everything
    else is scipy's own call. The p-value is scipy's: ``2 min(P(T <= t), P(T >= t))``
    (capped at 1) over the flips, with its tolerance ``100 eps |t|`` for equal values.

    References
    ----------
    Wilcoxon, F. (1945). Individual comparisons by ranking methods. Biometrics Bulletin 1(6).
    Pratt, J. W. (1959). Remarks on zeros and ties in the Wilcoxon signed rank procedures.
    JASA 54(287).

    Examples
    --------
    >>> signed_rank_test(np.array([1.0, 1.0, -2.0, 0.0, 3.0]))  # tied ranks 1.5, 1.5; a zero
    (3.0, 0.625)
    """
    diff = np.asarray(diff, dtype=float)
    nonzero = diff[diff != 0]
    ranks = stats.rankdata(np.abs(nonzero))
    ties = np.unique(ranks).size < ranks.size
    if diff.size > _ENUMERATED or not (ties or nonzero.size < diff.size):
        test = stats.wilcoxon(diff)
        return float(test.statistic), float(test.pvalue)
    r_plus = float(ranks[nonzero > 0].sum())
    r_minus = float(ranks[nonzero < 0].sum())
    # each nonzero difference's sign flipped or not (zeros add nothing whatever their sign):
    # the 2**m values of W+ appear 2**(n - m) times each among scipy's 2**n, the same shares
    signs = (np.arange(2 ** nonzero.size)[:, None] >> np.arange(nonzero.size)) & 1
    null = signs @ ranks
    gamma = abs(np.finfo(float).eps * 100 * r_plus)
    less = np.count_nonzero(null <= r_plus + gamma) / null.size
    greater = np.count_nonzero(null >= r_plus - gamma) / null.size
    return min(r_plus, r_minus), float(np.clip(2 * min(less, greater), 0.0, 1.0))


def _zero_width_note(diff: np.ndarray, meeting_means: np.ndarray, unit: str) -> str:
    """Why the meetings' interval is left empty: every replicate would give the same mean."""
    if np.ptp(diff) == 0:
        return f"every question's difference is {diff[0]:g}: {ZERO_WIDTH}"
    if np.ptp(meeting_means) <= _SAME_MEAN * max(1.0, float(np.abs(meeting_means).max())):
        return f"every {unit}'s mean difference is {meeting_means[0]:g}: {ZERO_WIDTH}"
    return ""


def model_difference(df: pd.DataFrame, models: tuple[str, str] | None = None, *,
                     n_bootstrap: int = 1000, seed: int = 0,
                     confidence: float = 0.95) -> pd.DataFrame:
    """Mean score of ``b`` minus ``a`` on the questions both answered, with its interval, for
    one pair of models or (by default) every pair in name order (``--model A --model B``
    narrows the export to one).

    Parameters
    ----------
    df : pandas.DataFrame
        Long scores table.
    models : (str, str), optional
        ``(a, b)``; by default every pair ``a < b`` of the models of ``df``.
    n_bootstrap, seed, confidence
        Percentile bootstrap over the meetings of the paired questions.

    Returns
    -------
    pandas.DataFrame
        :data:`DIFFERENCE_COLUMNS`, one row per setting, mode and evaluator with both models;
        ``n`` counts the questions both answered (several seeds of one model averaged first),
        ``n_meetings`` their meetings, and the statistics are those of
        :func:`paired_by_meeting`: ``ci_low``/``ci_high`` and ``p`` take the meeting as the
        unit, ``wilcoxon``/``p_naive`` every question. ``note`` says why a cell is empty.

    References
    ----------
    See :func:`paired_by_meeting`; Efron, B., Tibshirani, R. (1993). An Introduction to the
    Bootstrap. Chapman & Hall.

    """
    if models is None:
        names = sorted(pd.unique(df["model"]))
        if len(names) < 2:
            raise DegenerateDataError(f"a paired difference needs two models, the filters hold "
                                      f"{len(names)}")
        parts = []
        for pair in itertools.combinations(names, 2):
            try:
                parts.append(model_difference(df, pair, n_bootstrap=n_bootstrap, seed=seed,
                                              confidence=confidence))
            except DegenerateDataError:
                continue  # two models that share no question are no pair
        if not parts:
            raise DegenerateDataError("no two models answered a common question under these "
                                      "filters")
        return pd.concat(parts, ignore_index=True)
    a, b = models
    responses = response_scores(df[df["model"].isin([a, b])])
    means = responses.groupby([*_QUESTION, "model"], dropna=False)["score"].mean().unstack()
    if a not in means.columns or b not in means.columns:
        raise DegenerateDataError(f"{a} and {b} have no score under these filters")
    paired = means[[a, b]].dropna().reset_index()
    if paired.empty:
        raise DegenerateDataError(f"{a} and {b} answered no common question under these filters")
    rows = []
    for (setting, mode, evaluator), group in paired.groupby(["setting", "mode", "evaluator"]):
        row_names = (a, b, str(setting), str(mode), str(evaluator))
        diff = (group[b] - group[a]).to_numpy(float)
        rows.append({"model_a": a, "model_b": b, "setting": setting, "mode": mode,
                     "evaluator": evaluator, "mean_a": float(group[a].mean()),
                     "mean_b": float(group[b].mean()),
                     **paired_by_meeting(diff, group["meeting"].to_numpy(), row_names,
                                         n_bootstrap=n_bootstrap, seed=seed,
                                         confidence=confidence,
                                         same=f"{a} and {b} score the same on every question")})
    return contract_types(pd.DataFrame(rows), DIFFERENCE_COLUMNS, _KEY)
