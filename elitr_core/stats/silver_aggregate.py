"""The silver aggregate tables: a reliability-weighted aggregate of a study's annotators beside
the plain mean and the median, each annotator's reliability, and how close each comes to gold.

Two methods:

- ``gaussian`` (the default): each annotator's offset and precision
  (:mod:`elitr_core.stats.annotator_offsets`). In ``bench/bench_estimators.py --part
  aggregate`` it is never worse than the mean beyond Monte-Carlo noise in any of six designs
  (dense, sparse, batches, spammers, adversaries, the paper's 10 a response) and better in
  most. The median beats it where annotators are many and honest (dense, batches, the
  paper's design); the aggregate is for studies with careless or adversarial annotators,
  where it beats the median by 0.15-0.38 MAE.
- ``dawid-skene``: nominal Dawid-Skene (:mod:`elitr_core.stats.dawid_skene`), a 10 x 10
  confusion matrix an annotator. Offered for dense studies only (every annotator scored at
  least :data:`DENSE_FROM` responses): with fewer scores an annotator its 90 parameters are
  noise, and the same benchmark finds it worse than the mean in sparse designs and batches.

A response with one score has nothing to weigh: its aggregate is that score (the mean), and
its ``note`` says so.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats.annotator_offsets import gaussian_aggregate
from elitr_core.stats.dawid_skene import dawid_skene
from elitr_core.stats.frame import RESPONSE_KEY, by_named_annotator, check_columns
from elitr_core.vocab import EXPORT_COLUMNS

AGGREGATE_COLUMNS: tuple[str, ...] = EXPORT_COLUMNS["silver-aggregate"]
RELIABILITY_COLUMNS: tuple[str, ...] = EXPORT_COLUMNS["annotator-reliability"]
METHODS: tuple[str, ...] = ("gaussian", "dawid-skene")
#: Fewest scores of every annotator from which nominal Dawid-Skene is offered: 90 parameters
#: an annotator want many times as many scores (the benchmark's dense design gives 120)
DENSE_FROM = 100
ONE_SCORE_NOTE = "one score: nothing to weigh, the aggregate is that score (the mean)"
#: Fewest scores an annotator from which their reliability row is read without a caveat: at
#: 30 scores noise_sd's 95% interval still spans 0.80-1.34 times the estimate, at 9 it spans
#: 0.68-1.92, so a random scorer can come out on top of a 9-item table
RELIABLE_FROM = 30


def _individual(df: pd.DataFrame, evaluator: str) -> pd.DataFrame:
    """``evaluator``'s scores by named annotators (its aggregate rows left out)."""
    check_columns(df, [*RESPONSE_KEY, "evaluator", "annotator", "score"])
    rows = df[(df["evaluator"] == evaluator) & df["score"].notna()]
    rows = by_named_annotator(rows)
    if rows.empty:
        raise UserError(f"{evaluator} has no score of a named annotator here: the silver "
                        "aggregate needs a study's individual scores (silver-human:STUDY)")
    if rows["annotator"].nunique() < 2:
        raise DegenerateDataError(f"{evaluator} has one annotator here: a reliability-weighted "
                                  "aggregate weighs annotators against each other and needs "
                                  "at least 2")
    return rows.reset_index(drop=True)


def check_method(method: str, n_scores: pd.Series | None = None) -> None:
    """Refuse an unknown method, and Dawid-Skene where an annotator has fewer than
    :data:`DENSE_FROM` scores (``n_scores``: scores per annotator)."""
    if method not in METHODS:
        raise UserError(f"unknown aggregate {method!r}: choose {' or '.join(METHODS)}")
    if method == "dawid-skene" and n_scores is not None and n_scores.min() < DENSE_FROM:
        raise UserError(
            f"Dawid-Skene is for dense studies only: annotator {n_scores.idxmin()} scored "
            f"{int(n_scores.min())} responses, and its 90 parameters an annotator want at "
            f"least {DENSE_FROM} each (with fewer it is worse than the plain mean, "
            "bench/bench_estimators.py); use --aggregate gaussian (the default)")


def _fit(task: np.ndarray, worker: np.ndarray, score: np.ndarray,
         method: str) -> tuple[np.ndarray, pd.DataFrame]:
    """Per task the aggregate; per worker bias, noise_sd, weight, accuracy."""
    if method == "dawid-skene":
        fit = dawid_skene(task, worker, score)
        values = fit.classes.astype(float)
        own = fit.probas[task, np.searchsorted(fit.classes, score)]
        signed = score - fit.probas[task] @ values
        per = pd.DataFrame({"w": worker, "signed": signed, "own": own}).groupby("w")
        return fit.probas @ values, pd.DataFrame({
            "bias": per["signed"].mean(), "noise_sd": per["signed"].std(ddof=1),
            "weight": np.nan, "accuracy": per["own"].mean()})
    offsets = gaussian_aggregate(task, worker, score)
    precision = 1.0 / offsets.variance  # NaN for an annotator with no response scored twice
    if np.isfinite(precision).any():
        precision = precision / np.nanmean(precision)
    return offsets.mu, pd.DataFrame({
        "bias": offsets.offset, "noise_sd": np.sqrt(offsets.variance),
        "weight": precision, "accuracy": np.nan})


def silver_aggregate(df: pd.DataFrame, evaluator: str,
                     method: str = "gaussian") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Plain mean, median and the reliability-weighted aggregate per response, and each
    annotator's reliability.

    Parameters
    ----------
    df : pandas.DataFrame
        Long scores table (``SCORE_COLUMNS``) holding ``evaluator``'s individual scores.
    evaluator : str
        A human pool with named annotators (``silver-human:STUDY``).
    method : {"gaussian", "dawid-skene"}
        The aggregate (see the module); Dawid-Skene needs a dense study.

    Returns
    -------
    (pandas.DataFrame, pandas.DataFrame)
        :data:`AGGREGATE_COLUMNS`: per response ``n_annotators``, ``mean``, ``median``,
        ``aggregate`` (of ``method``, the mean where one annotator scored it) and ``note``.
        :data:`RELIABILITY_COLUMNS`: per annotator ``n``, ``method``, ``bias`` (how much
        higher than the aggregate they score), ``noise_sd`` (the spread of their scores about
        it), ``weight`` (gaussian: their precision over the mean precision), ``accuracy``
        (Dawid-Skene: the mean posterior probability that their score is the true one) and
        ``mean_abs_error`` (their mean distance from the aggregate), most reliable first.

    References
    ----------
    See :mod:`elitr_core.stats.annotator_offsets` and :mod:`elitr_core.stats.dawid_skene`.
    """
    rows = _individual(df, evaluator)
    check_method(method, rows.groupby("annotator")["score"].size())
    keys = list(RESPONSE_KEY)
    task = rows.groupby(keys, sort=False, dropna=False).ngroup().to_numpy()
    names, worker = np.unique(rows["annotator"].astype(str), return_inverse=True)
    score = rows["score"].to_numpy(float)
    fitted, per_worker = _fit(task, worker, score, method)
    per_task = pd.Series(score).groupby(task)
    mean, count = per_task.mean().to_numpy(), per_task.size().to_numpy()
    one = count == 1
    value = np.where(one | np.isnan(fitted), mean, fitted)
    items = rows.assign(_task=task).drop_duplicates("_task").sort_values("_task")
    aggregate = items[keys].assign(
        evaluator=evaluator, n_annotators=count, mean=mean,
        median=per_task.median().to_numpy(), aggregate=value,
        note=np.where(one, ONE_SCORE_NOTE, "")).reset_index(drop=True)
    distance = pd.Series(np.abs(score - value[task])).groupby(worker).mean()
    reliability = per_worker.assign(
        evaluator=evaluator, annotator=names, n=np.bincount(worker), method=method,
        mean_abs_error=distance.to_numpy())
    reliability = reliability.sort_values("mean_abs_error", kind="stable")
    return (aggregate[list(AGGREGATE_COLUMNS)],
            reliability.reset_index(drop=True)[list(RELIABILITY_COLUMNS)])


def agreement_with_gold(df: pd.DataFrame, evaluator: str, reference: str = "gold-human",
                        method: str = "gaussian") -> pd.DataFrame:
    """How close the mean, the median and the ``method`` aggregate come to ``reference`` on
    the responses both scored: ``n``, mean absolute error, mean signed error and Pearson r."""
    from elitr_core.stats.frame import per_response

    aggregate, _ = silver_aggregate(df, evaluator, method)
    gold = per_response(df[df["evaluator"] == reference])
    if gold.empty:
        raise UserError(f"no {reference} score here: choose a reference evaluator with scores")
    keys = list(RESPONSE_KEY)
    both = aggregate.merge(gold[[*keys, "score"]].astype({k: aggregate[k].dtype for k in keys}),
                           on=keys)
    if len(both) < 3:
        raise DegenerateDataError(f"{reference} scored {len(both)} of the aggregated responses:"
                                  " at least 3 are needed")
    rows = []
    for name, column in (("mean", "mean"), ("median", "median"), (method, "aggregate")):
        error = both[column] - both["score"]
        r = (np.corrcoef(both[column], both["score"])[0, 1]
             if both[column].nunique() > 1 and both["score"].nunique() > 1 else np.nan)
        rows.append((evaluator, reference, name, len(both), float(error.abs().mean()),
                     float(error.mean()), float(r)))
    return pd.DataFrame(rows, columns=list(EXPORT_COLUMNS["silver-aggregate-agreement"]))


def noise_sd_interval_factors(n: int, level: float = 0.95) -> tuple[float, float]:
    """The factors by which a standard deviation estimated from ``n`` scores is multiplied to
    give its ``level`` confidence interval, were the scores' errors independent and normal.

    Returns
    -------
    (float, float)
        ``sqrt((n-1) / chi2_{(1+level)/2, n-1})`` and ``sqrt((n-1) / chi2_{(1-level)/2, n-1})``;
        ``(nan, nan)`` for ``n < 2``.

    References
    ----------
    The chi-square interval for a variance: D. C. Montgomery and G. C. Runger, *Applied
    Statistics and Probability for Engineers*, 6th ed., Wiley 2014, section 8.3.

    Examples
    --------
    >>> [round(f, 3) for f in noise_sd_interval_factors(9)]
    [0.675, 1.916]
    """
    from scipy.stats import chi2

    if n < 2:
        return float("nan"), float("nan")
    dof = n - 1
    return (float(np.sqrt(dof / chi2.ppf((1 + level) / 2, dof))),
            float(np.sqrt(dof / chi2.ppf((1 - level) / 2, dof))))


def small_n_caveat(reliability: pd.DataFrame, *, min_n: int = RELIABLE_FROM) -> str:
    """A sentence naming the annotators of a reliability table (:data:`RELIABILITY_COLUMNS`)
    with fewer than ``min_n`` scores and how rough their figures are; ``""`` when none.

    With few scores the table's order (by ``mean_abs_error``) is mostly chance: a random scorer
    on 9 items can rank first. The sentence gives the width of ``noise_sd``'s 95% interval at
    the smallest ``n`` (:func:`noise_sd_interval_factors`).
    """
    check_columns(reliability, ["annotator", "n"])
    few = reliability[reliability["n"] < min_n]
    if few.empty:
        return ""
    smallest = int(few["n"].min())
    low, high = noise_sd_interval_factors(smallest)
    names = ", ".join(f"{a} ({int(n)})" for a, n in zip(few["annotator"], few["n"], strict=True))
    spread = (f"at {smallest} scores noise_sd's 95% interval runs from {low:.2f} to {high:.2f} "
              "times the value shown" if np.isfinite(low) else
              f"at {smallest} score noise_sd cannot be estimated")
    return (f"Few scores (under {min_n}): {names}. Their bias, noise_sd and weight are rough "
            f"({spread}), so the order of the table is mostly chance for them: do not rank "
            "or exclude annotators on these figures alone.")
