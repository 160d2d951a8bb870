"""Nominal Dawid-Skene over the annotators' scores: the silver aggregate's option for dense
studies (:mod:`elitr_core.stats.silver_aggregate`; the default is the offset + precision model
of :mod:`elitr_core.stats.annotator_offsets`).

Dawid and Skene's model gives every annotator a confusion matrix (the probability of each score
they give, for each true score) and every response a distribution over its true score,
estimated together by EM; the aggregate of a response is the posterior mean of its true score.
Ninety parameters an annotator, and no idea that 7 is near 8: with few scores an annotator it is
worse than the plain mean (``bench/bench_estimators.py --part aggregate``).

The EM follows crowd-kit's ``DawidSkene`` step for step (majority-vote start, confusion counts
clipped at 1e-10, priors from the posteriors, stop when the evidence lower bound per label
gains less than ``tol``), so that crowd-kit is its independent reference in the tests. It is
written out (60 lines of numpy) rather than imported because crowd-kit would bring
transformers into the dashboard's run-time requirements.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

_EPS = 1e-10


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
