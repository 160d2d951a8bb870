"""A reliability-weighted silver aggregate: Dawid-Skene over the annotators' scores.

The plain silver aggregate is the mean of the annotators' scores of a response: a careless or
biased annotator counts as much as a careful one. Dawid and Skene's model gives every
annotator a confusion matrix (the probability of each score they give, for each true score)
and every response a distribution over its true score, estimated together by EM. The
*Dawid-Skene aggregate* of a response is the posterior mean of its true score (and its most
probable score); an annotator's *reliability* is how likely their own score is the true one
under the fit, and how far it lies from it on average.

The EM follows crowd-kit's ``DawidSkene`` step for step (majority-vote start, confusion counts
clipped at 1e-10, priors from the posteriors, stop when the evidence lower bound per label
gains less than ``tol``), so that crowd-kit is its independent reference in the tests. It is
written out (60 lines of numpy) rather than imported because crowd-kit would bring
transformers into the dashboard's run-time requirements.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats.frame import RESPONSE_KEY, by_named_annotator, check_columns
from elitr_core.vocab import EXPORT_COLUMNS

_EPS = 1e-10
AGGREGATE_COLUMNS: tuple[str, ...] = EXPORT_COLUMNS["silver-aggregate"]
RELIABILITY_COLUMNS: tuple[str, ...] = EXPORT_COLUMNS["annotator-reliability"]


class Fit(NamedTuple):
    """A Dawid-Skene fit: ``classes`` (the scores given), per task ``probas`` (T, K), ``priors``
    (K), ``errors`` (W, K given, K true: P(given | true), rows of unseen scores 0), and the
    number of EM iterations."""

    classes: np.ndarray
    probas: np.ndarray
    priors: np.ndarray
    errors: np.ndarray
    iterations: int


def _m_step(task: np.ndarray, worker: np.ndarray, label: np.ndarray, probas: np.ndarray,
            n_workers: int) -> np.ndarray:
    k = probas.shape[1]
    counts = np.zeros((n_workers, k, k))
    np.add.at(counts, (worker, label), probas[task])
    seen = np.zeros((n_workers, k), bool)
    seen[worker, label] = True
    counts[seen] = np.clip(counts[seen], _EPS, None)  # crowd-kit clips the seen cells only
    return counts / counts.sum(axis=1, keepdims=True)


def _e_step(task: np.ndarray, worker: np.ndarray, label: np.ndarray, priors: np.ndarray,
            errors: np.ndarray, n_tasks: int) -> np.ndarray:
    with np.errstate(divide="ignore"):
        logs = np.zeros((n_tasks, len(priors)))
        np.add.at(logs, task, np.log2(errors[worker, label]))
        logs += np.log2(np.clip(priors, _EPS, None))
    scaled = np.exp2(logs - logs.max(axis=1, keepdims=True))
    return scaled / scaled.sum(axis=1, keepdims=True)


def _lower_bound(task: np.ndarray, worker: np.ndarray, label: np.ndarray, probas: np.ndarray,
                 priors: np.ndarray, errors: np.ndarray) -> float:
    with np.errstate(divide="ignore"):
        joint = np.log(errors[worker, label]) + np.log(np.clip(priors, _EPS, None))
    clipped = np.clip(probas, _EPS, None)
    return float((probas[task] * joint).sum() - (np.log(clipped) * clipped).sum())


def dawid_skene(task: np.ndarray, worker: np.ndarray, label: np.ndarray, *,
                n_iter: int = 100, tol: float = 1e-5) -> Fit:
    """Dawid-Skene EM over labels ``label[i]`` given by ``worker[i]`` to ``task[i]`` (integer
    codes for task and worker, any sortable values for labels).

    References
    ----------
    Dawid, A. P., Skene, A. M. (1979). Maximum likelihood estimation of observer error-rates
    using the EM algorithm. JRSS C 28(1), 20-28. Ustalov, D. et al. (2024). Learning from
    Crowds with Crowd-Kit. JOSS 9(96), 6227 (``crowdkit.aggregation.DawidSkene``).
    """
    classes, codes = np.unique(label, return_inverse=True)
    n_tasks, n_workers, k = int(task.max()) + 1, int(worker.max()) + 1, len(classes)
    votes = np.zeros((n_tasks, k))
    np.add.at(votes, (task, codes), 1.0)
    probas = votes / votes.sum(axis=1, keepdims=True)  # majority vote, ties shared
    priors = probas.mean(axis=0)
    errors = _m_step(task, worker, codes, probas, n_workers)
    loss, done = -np.inf, 0
    while done < n_iter:
        done += 1
        probas = _e_step(task, worker, codes, priors, errors, n_tasks)
        priors = probas.mean(axis=0)
        errors = _m_step(task, worker, codes, probas, n_workers)
        new = _lower_bound(task, worker, codes, probas, priors, errors) / len(task)
        if new - loss < tol:
            break
        loss = new
    return Fit(classes, probas, priors, errors, done)


def _individual(df: pd.DataFrame, evaluator: str) -> pd.DataFrame:
    """``evaluator``'s scores by named annotators (its aggregate rows left out)."""
    check_columns(df, [*RESPONSE_KEY, "evaluator", "annotator", "score"])
    rows = df[(df["evaluator"] == evaluator) & df["score"].notna()]
    rows = by_named_annotator(rows)
    if rows.empty:
        raise UserError(f"{evaluator} has no score of a named annotator here: the silver "
                        "aggregate needs a study's individual scores (silver-human:STUDY)")
    if rows["annotator"].nunique() < 2:
        raise DegenerateDataError(f"{evaluator} has one annotator here: Dawid-Skene weighs "
                                  "annotators against each other and needs at least 2")
    return rows.reset_index(drop=True)


def silver_aggregate(df: pd.DataFrame, evaluator: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Plain mean and Dawid-Skene aggregate per response, and each annotator's reliability.

    Parameters
    ----------
    df : pandas.DataFrame
        Long scores table (``SCORE_COLUMNS``) holding ``evaluator``'s individual scores.
    evaluator : str
        A human pool with named annotators (``silver-human:STUDY``).

    Returns
    -------
    (pandas.DataFrame, pandas.DataFrame)
        :data:`AGGREGATE_COLUMNS`: per response ``n_annotators``, ``mean`` (the plain
        aggregate), ``ds_mean`` (posterior mean of the true score) and ``ds_score`` (its most
        probable value). :data:`RELIABILITY_COLUMNS`: per annotator ``n``, ``ds_accuracy``
        (the mean posterior probability that their score is the true one) and
        ``ds_expected_error`` (the mean posterior expected distance of their score from the
        true one, in points), most reliable first.
    """
    rows = _individual(df, evaluator)
    keys = list(RESPONSE_KEY)
    task = rows.groupby(keys, sort=False, dropna=False).ngroup().to_numpy()
    names, worker = np.unique(rows["annotator"].astype(str), return_inverse=True)
    score = rows["score"].to_numpy(float)
    fit = dawid_skene(task, worker, score)
    values = fit.classes.astype(float)
    items = rows.assign(_task=task).drop_duplicates("_task").sort_values("_task")
    per_task = pd.Series(score).groupby(task)
    aggregate = items[keys].assign(
        evaluator=evaluator, n_annotators=per_task.size().to_numpy(),
        mean=per_task.mean().to_numpy(), ds_mean=fit.probas @ values,
        ds_score=values[fit.probas.argmax(axis=1)]).reset_index(drop=True)
    own = fit.probas[task, np.searchsorted(fit.classes, score)]
    distance = (fit.probas[task] * np.abs(values[None, :] - score[:, None])).sum(axis=1)
    reliability = pd.DataFrame({"evaluator": evaluator, "annotator": names[worker],
                                "own": own, "distance": distance}).groupby(
        ["evaluator", "annotator"], sort=False).agg(
        n=("own", "size"), ds_accuracy=("own", "mean"),
        ds_expected_error=("distance", "mean")).reset_index()
    reliability = reliability.sort_values("ds_expected_error", kind="stable")
    return (aggregate[list(AGGREGATE_COLUMNS)],
            reliability.reset_index(drop=True)[list(RELIABILITY_COLUMNS)])


def agreement_with_gold(df: pd.DataFrame, evaluator: str,
                        reference: str = "gold-human") -> pd.DataFrame:
    """How close the plain mean and the Dawid-Skene aggregate come to ``reference`` on the
    responses both scored: ``n``, mean absolute error and Pearson r of each."""
    from elitr_core.stats.frame import per_response

    aggregate, _ = silver_aggregate(df, evaluator)
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
    for name, column in (("mean", "mean"), ("dawid-skene", "ds_mean"), ("dawid-skene score",
                                                                         "ds_score")):
        error = both[column] - both["score"]
        r = (np.corrcoef(both[column], both["score"])[0, 1]
             if both[column].nunique() > 1 and both["score"].nunique() > 1 else np.nan)
        rows.append((evaluator, reference, name, len(both), float(error.abs().mean()),
                     float(error.mean()), float(r)))
    return pd.DataFrame(rows, columns=list(EXPORT_COLUMNS["silver-aggregate-agreement"]))
