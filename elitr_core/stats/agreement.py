"""Agreement between evaluators: correlations with cluster-bootstrap CIs, MAE, QWK, bias, ranks.

Every function works on :func:`~elitr_core.stats.frame.per_response` scores (one score per
response and evaluator) and compares evaluators on the responses both of them scored.

Confidence intervals come from a percentile *cluster* bootstrap: a replicate draws as many
questions (``QUESTION_KEY``) as the data holds, with replacement, and every response of a drawn
question enters the replicate (the responses of one question share its difficulty, so they are
not independent). The draws are multinomial cluster counts ``W`` (replicates x questions) from a
generator seeded by ``seed`` and the evaluator pair, so a pair's interval does not depend on which
other evaluators are in the table. Each statistic is computed from per-question aggregates
instead of materialising the replicates; :mod:`._corr_bootstrap` gives the algebra.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats._corr_bootstrap import (
    bootstrap_kendall,
    bootstrap_pearson,
    bootstrap_spearman,
)
from elitr_core.stats.frame import (
    QUESTION_KEY,
    ZERO_WIDTH,
    check_columns,
    check_not_empty,
    per_response,
    wide_by_evaluator,
)
from elitr_core.stats.kappa import quadratic_weighted_kappa, round_scores
from elitr_core.vocab import EXPORT_COLUMNS

METHODS: tuple[str, ...] = ("pearson", "spearman", "kendall")
_SCIPY = {"pearson": stats.pearsonr, "spearman": stats.spearmanr, "kendall": stats.kendalltau}
_BOOTSTRAP = {"pearson": bootstrap_pearson, "spearman": bootstrap_spearman,
              "kendall": bootstrap_kendall}
#: a CI needs the statistic defined in this share of replicates: the percentile interval of
#: the defined ones is conditional on definedness, which is harmless only when rare
MIN_VALID_REPLICATES = 0.9
MIN_RESPONSES = 3


def _wide(df: pd.DataFrame, evaluators: Sequence[str] | None) -> tuple[pd.DataFrame, list[str]]:
    """Responses x evaluators table of the requested evaluators, with a ``_question`` code."""
    check_not_empty(df)
    check_columns(df, ["score", "evaluator"])
    present = list(pd.unique(df["evaluator"].dropna()))
    chosen = present if evaluators is None else list(dict.fromkeys(evaluators))
    unknown = [e for e in chosen if e not in present]
    if unknown:
        raise UserError(f"no score from evaluator(s) {', '.join(map(str, unknown))}; "
                        f"available: {', '.join(map(str, present))}")
    if len(chosen) < 2:
        raise DegenerateDataError("agreement needs at least two evaluators; "
                                  f"the data holds only {', '.join(map(str, chosen))}")
    responses = per_response(df[df["evaluator"].isin(chosen)])
    check_not_empty(responses, what="these evaluators (every score is NaN)")
    wide = wide_by_evaluator(responses)
    wide["_question"] = wide.groupby(list(QUESTION_KEY), sort=False, dropna=False).ngroup()
    return wide, chosen


def _pair(wide: pd.DataFrame, a: str, b: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores of ``a`` and ``b`` on the responses both scored, and question codes 0..G-1."""
    if a not in wide or b not in wide:
        raise DegenerateDataError(f"{a} and {b} scored no response in common")
    both = wide[a].notna() & wide[b].notna()
    if not both.any():
        empty = np.empty(0)
        return empty, empty, np.empty(0, dtype=np.intp)
    x = wide.loc[both, a].to_numpy(float)
    y = wide.loc[both, b].to_numpy(float)
    clusters = pd.factorize(wide.loc[both, "_question"])[0]
    return x, y, clusters


def _check_pair(x: np.ndarray, y: np.ndarray, a: str, b: str, minimum: int) -> None:
    if x.size < minimum:
        raise DegenerateDataError(
            f"{a} and {b} scored {x.size} response(s) in common, at least {minimum} are needed: "
            "widen the filters or leave one of them out")
    for name, values in ((a, x), (b, y)):
        if np.ptp(values) == 0:
            raise DegenerateDataError(
                f"{name} gives the same score ({values[0]:g}) to all {values.size} responses it "
                f"shares with {b if name == a else a}: a correlation is undefined; leave it out")


def _check_options(n_bootstrap: int, confidence: float, seed: int) -> None:
    if seed < 0:
        raise UserError(f"seed must be a non-negative integer, not {seed}")
    if n_bootstrap < 0:
        raise UserError(f"n_bootstrap must be 0 (no CI) or positive, not {n_bootstrap}")
    if not 0 < confidence < 1:
        raise UserError(f"confidence must lie strictly between 0 and 1, not {confidence}")


def pair_rng(seed: int, *names: str) -> np.random.Generator:
    """Generator for one evaluator pair (or model): seeded by ``seed`` and the names, stably."""
    return np.random.default_rng([seed, *(zlib.crc32(str(n).encode()) for n in names)])


def cluster_weights(n_clusters: int, n_bootstrap: int, rng: np.random.Generator) -> np.ndarray:
    """Cluster counts of ``n_bootstrap`` replicates (rows), each drawing ``n_clusters`` clusters."""
    return rng.multinomial(n_clusters, np.full(n_clusters, 1.0 / n_clusters), size=n_bootstrap)


def percentile_ci(replicates: np.ndarray, confidence: float, what: str) -> tuple[float, float]:
    """Percentile interval of the replicates where the statistic is defined (finite).

    Raises :class:`DegenerateDataError` when fewer than ``MIN_VALID_REPLICATES`` of them are.
    """
    finite = replicates[np.isfinite(replicates)]
    if finite.size < MIN_VALID_REPLICATES * replicates.size or finite.size == 0:
        raise DegenerateDataError(
            f"{what}: the statistic is undefined in {replicates.size - finite.size} of "
            f"{replicates.size} bootstrap replicates (too few questions, or scores constant "
            "within most questions): widen the filters to take in more questions")
    tail = (1 - confidence) / 2
    low, high = np.quantile(finite, [tail, 1 - tail])
    return float(low), float(high)


def evaluator_correlation(
    df: pd.DataFrame,
    evaluators: Sequence[str] | None = None,
    methods: Sequence[str] = METHODS,
    n_bootstrap: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Correlation of every evaluator pair, with a cluster-bootstrap confidence interval.

    Parameters
    ----------
    df : pandas.DataFrame
        The long-format ``scores`` table (``elitr_core.vocab.SCORE_COLUMNS``).
    evaluators : sequence of str, optional
        Evaluator slugs to compare (default: all, in order of appearance). Pairs are unordered:
        ``evaluator_a`` comes before ``evaluator_b`` in this order.
    methods : sequence of str
        Any of ``"pearson"``, ``"spearman"``, ``"kendall"`` (tau-b).
    n_bootstrap : int
        Bootstrap replicates; 0 skips the CI (``ci_low``/``ci_high`` are NaN then).
    seed : int
        Seed of the resampling; the same call gives the same intervals.
    confidence : float
        Coverage of the percentile interval.

    Returns
    -------
    pandas.DataFrame
        ``EXPORT_COLUMNS["evaluator-correlation"]``: one row per pair and method. ``n`` counts
        the responses both evaluators scored; ``r`` and ``p`` are scipy's ``pearsonr``,
        ``spearmanr`` and ``kendalltau`` on those responses. A pair with fewer than 3 common
        responses or an evaluator constant on them has empty ``r``, ``ci_low``, ``ci_high``
        and ``p`` and a ``note`` naming the evaluator and the cause; a pair whose bootstrap
        has fewer than 2 questions, or a statistic undefined (an evaluator constant within
        the replicate) in more than 10% of the replicates, keeps ``r`` and ``p`` with an
        empty interval and a note. The other pairs keep their rows.

    Raises
    ------
    DegenerateDataError
        Fewer than two evaluators.

    Notes
    -----
    Every replicate's statistic is exactly what scipy would return on the resampled responses
    (ties get mid-ranks in the resampled data), without building the replicates: Pearson from
    per-question moments, Spearman and Kendall from per-question contingency tables of the
    distinct score values (cheap on the 1..10 scale). Where both evaluators have so many
    distinct values that the table would exceed ``_corr_bootstrap.GRID_LIMIT`` cells, Spearman
    switches to an exact per-response formula and Kendall resamples explicitly, capped at
    ``_corr_bootstrap.KENDALL_MAX_EXPLICIT`` replicates (the first rows of the same draws).

    References
    ----------
    Field, C. A., & Welsh, A. H. (2007). Bootstrapping clustered data. JRSS B, 69(3), 369-390.

    Examples
    --------
    >>> evaluator_correlation(scores, ["gpt-4", "gold-human"], ["pearson"])  # doctest: +SKIP
    """
    _check_options(n_bootstrap, confidence, seed)
    bad = [m for m in methods if m not in METHODS]
    if bad or not methods:
        raise UserError(f"unknown correlation method(s) {bad}: choose among {', '.join(METHODS)}")
    wide, chosen = _wide(df, evaluators)
    rows = []
    for a, b in itertools.combinations(chosen, 2):
        rows.extend(_correlation_rows(wide, a, b, methods, n_bootstrap, seed, confidence))
    return pd.DataFrame(rows, columns=list(EXPORT_COLUMNS["evaluator-correlation"]))


def _correlation_rows(wide: pd.DataFrame, a: str, b: str, methods: Sequence[str],
                      n_bootstrap: int, seed: int, confidence: float) -> list[tuple[object, ...]]:
    """The rows of one pair; a pair that cannot be correlated (too few common responses, an
    evaluator constant on them) has empty cells and a note naming who, not an error that
    would empty the other pairs' rows."""
    nan = float("nan")
    x, y, clusters = _pair(wide, a, b)
    try:
        _check_pair(x, y, a, b, MIN_RESPONSES)
    except DegenerateDataError as error:
        return [(a, b, method, x.size, nan, nan, nan, nan, str(error)) for method in methods]
    try:
        weights = _pair_weights(clusters, n_bootstrap, seed, a, b)
        note = ""
    except DegenerateDataError as error:
        weights, note = None, f"no interval: {error}"
    rows: list[tuple[object, ...]] = []
    for method in methods:
        result = _SCIPY[method](x, y)
        low = high = nan
        method_note = note
        if weights is not None:
            reps = _BOOTSTRAP[method](x, y, clusters, weights)
            try:
                low, high = percentile_ci(reps, confidence, f"{method} {a} vs {b}")
            except DegenerateDataError as error:
                method_note = f"no interval: {error}"
            if high - low <= 1e-12 * max(1.0, abs(high)):
                low = high = nan
                method_note = _same_every_resample(x, y, a, b, method, float(result.statistic))
        rows.append((a, b, method, x.size, float(result.statistic), low, high,
                     float(result.pvalue), method_note))
    return rows


def _same_every_resample(x: np.ndarray, y: np.ndarray, a: str, b: str, method: str,
                         value: float) -> str:
    """Why a pair's interval is empty although it has a value: every resample gives it."""
    cause = (f"{a} and {b} give the same score to each of the {x.size} responses"
             if np.array_equal(x, y) else f"every question resample gives {method} = {value:g}")
    return f"no interval: {cause}; {ZERO_WIDTH}"


def _pair_weights(clusters: np.ndarray, n_bootstrap: int, seed: int,
                  *names: str) -> np.ndarray | None:
    if n_bootstrap == 0:
        return None
    n_clusters = int(clusters.max()) + 1
    if n_clusters < 2:
        raise DegenerateDataError(
            f"{' and '.join(names)}: all responses belong to one question, a cluster bootstrap "
            "needs at least 2 questions: widen the filters")
    return cluster_weights(n_clusters, n_bootstrap, pair_rng(seed, *names))


def agreement_table(df: pd.DataFrame, evaluators: Sequence[str] | None = None) -> pd.DataFrame:
    """Mean absolute error and quadratic weighted kappa of every evaluator pair.

    MAE is computed on the scores as they are; kappa on the scores rounded half up to integers
    of the 1..10 scale (:func:`round_scores`), since silver-human and multi-sample judge
    scores are means.

    Returns
    -------
    pandas.DataFrame
        Columns ``evaluator_a, evaluator_b, n, mae, qwk, note``; one row per unordered pair. A
        pair with no common response has empty ``mae`` and ``qwk``; a pair whose kappa is
        undefined (both give one and the same score) an empty ``qwk``; the ``note`` names them.
    """
    wide, chosen = _wide(df, evaluators)
    rows = []
    nan = float("nan")
    for a, b in itertools.combinations(chosen, 2):
        x, y, _ = _pair(wide, a, b)
        if x.size == 0:
            rows.append((a, b, 0, nan, nan, f"{a} and {b} scored no response in common"))
            continue
        mae = float(np.abs(x - y).mean())
        try:
            rows.append((a, b, x.size, mae, quadratic_weighted_kappa(round_scores(x),
                                                                     round_scores(y)), ""))
        except DegenerateDataError:
            value = round_scores(x)[0]
            rows.append((a, b, x.size, mae, nan,
                         f"kappa is undefined: {a} and {b} both give every one of their "
                         f"{x.size} common responses the same score ({value})"))
    return pd.DataFrame(rows, columns=["evaluator_a", "evaluator_b", "n", "mae", "qwk", "note"])


def agreement_metrics(df: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """:func:`agreement_table` for one pair (one row)."""
    return agreement_table(df, [a, b])


def judge_bias(df: pd.DataFrame, judge: str, human: str = "gold-human", n_bootstrap: int = 1000,
               seed: int = 0, confidence: float = 0.95) -> pd.DataFrame:
    """Mean signed difference judge - human per model, with a cluster-bootstrap CI.

    Positive ``bias`` means the judge scores that model's responses higher than the human.
    Only the responses both scored count; models without any are left out. Replicates
    resample the model's questions (seeded by ``seed``, judge, human and model).

    Returns
    -------
    pandas.DataFrame
        Columns ``model, judge, human, n, bias, ci_low, ci_high``, one row per model.
    """
    _check_options(n_bootstrap, confidence, seed)
    wide, _ = _wide(df, [judge, human])
    if judge not in wide or human not in wide:
        raise DegenerateDataError(f"{judge} and {human} scored no response in common")
    # models only one of them scored are not compared (not an error)
    wide = wide[wide[judge].notna() & wide[human].notna()]
    if wide.empty:
        raise DegenerateDataError(f"{judge} and {human} scored no response in common")
    rows = []
    for model, group in wide.groupby("model", sort=True):
        x, y, clusters = _pair(group, judge, human)
        if x.size < 2:
            raise DegenerateDataError(f"{judge} and {human} share {x.size} response(s) of "
                                      f"{model}: at least 2 are needed for a bias interval")
        diff = x - y
        low = high = float("nan")
        weights = _pair_weights(clusters, n_bootstrap, seed, judge, human, str(model))
        if weights is not None:
            sums = weights @ np.bincount(clusters, diff)
            counts = weights @ np.bincount(clusters).astype(float)
            low, high = percentile_ci(sums / counts, confidence, f"bias of {judge} on {model}")
        rows.append((model, judge, human, x.size, float(diff.mean()), low, high))
    return pd.DataFrame(rows, columns=["model", "judge", "human", "n", "bias", "ci_low",
                                       "ci_high"])


def ranking_agreement(df: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """Kendall tau-b between the model rankings of two evaluators.

    Each model's mean score is taken over the responses both evaluators scored, so both
    rankings rest on the same responses. ``p`` is scipy's exact or asymptotic p-value.

    Returns
    -------
    pandas.DataFrame
        One row: ``evaluator_a, evaluator_b, n_models, tau, p``.
    """
    wide, _ = _wide(df, [a, b])
    both = wide[wide[a].notna() & wide[b].notna()]
    means = both.groupby("model", sort=True)[[a, b]].mean()
    if len(means) < MIN_RESPONSES:
        raise DegenerateDataError(f"{a} and {b} share responses of {len(means)} model(s): a "
                                  f"ranking agreement needs at least {MIN_RESPONSES}")
    for name in (a, b):
        if means[name].nunique() == 1:
            raise DegenerateDataError(f"{name} gives every model the same mean: no ranking")
    result = stats.kendalltau(means[a], means[b])
    return pd.DataFrame([(a, b, len(means), float(result.statistic), float(result.pvalue))],
                        columns=["evaluator_a", "evaluator_b", "n_models", "tau", "p"])


def ranking_table(scores: pd.DataFrame, evaluators: Sequence[str]) -> pd.DataFrame:
    """Kendall tau between the model rankings of every evaluator pair that can be ranked.

    Pairs sharing responses of fewer than three models are left out and listed in
    ``result.attrs["skipped"]`` as ``(a, b, reason)``.

    Raises
    ------
    DegenerateDataError
        When no pair can be ranked.
    """
    rows, skipped = [], []
    for a, b in itertools.combinations(evaluators, 2):
        try:
            rows.append(ranking_agreement(scores, a, b))
        except DegenerateDataError as exc:
            skipped.append((a, b, str(exc)))
    if not rows:
        reason = skipped[0][2] if skipped else "fewer than two evaluators"
        raise DegenerateDataError(f"no model ranking can be compared: {reason}")
    out = pd.concat(rows, ignore_index=True)
    out.attrs["skipped"] = skipped
    return out
