"""A reliability-weighted silver aggregate for scores: each annotator's offset and precision.

Every annotator ``w`` scores response ``t`` as ``x = mu_t + b_w + e`` with ``e ~ N(0,
sigma_w^2)``: ``b_w`` is how much higher than others the annotator scores (a lenient or harsh
annotator), ``sigma_w`` how noisy they are (a careless one, a spammer). The aggregate ``mu_t`` is
the mean of the response's scores after each annotator's offset, weighted by their precision
``1 / sigma_w^2``: the plain mean when every annotator is alike, down-weighting the noisy and
correcting the biased otherwise. Two parameters an annotator, where nominal Dawid-Skene has 90
(a 10 x 10 confusion matrix that does not know 7 is near 8), which it cannot estimate from the
few scores an annotator gives in a sparse study: there it is worse than the mean
(``bench/bench_estimators.py --part aggregate``).

Fitted by alternating estimates (each a closed form) until nothing moves:

- ``mu_t``: the precision-weighted mean of ``x - b_w`` over the response's scores;
- ``b_w``: the mean of the annotator's ``x - mu_t``, shrunk towards 0 by ``sigma_w^2 /
  tau^2`` pseudo-scores (``tau^2`` the spread of the offsets across annotators, estimated by
  the method of moments), then centred so that the offsets average 0 over the scores (the
  aggregate keeps the mean's level);
- ``sigma_w^2``: the annotator's residual sum of squares over its degrees of freedom
  ``sum(1 - h)``, ``h = (1 / sigma_w^2) / sum_t(1 / sigma^2)`` the leverage of the score on its
  response's aggregate (with 3 scores a response, a residual is a third smaller than the
  noise), pooled with the study's variance by :data:`PRIOR_SCORES` pseudo-scores and never
  below :data:`VARIANCE_FLOOR` (an integer score's rounding alone).

Shrinkage is what keeps it no worse than the mean where an annotator gives few scores: an
offset or a precision estimated from 5 scores is mostly noise, and the pooling pulls it back to
the common value, where the aggregate is the mean. Responses with one score carry no
information about anyone's offset or noise; they are left out of the fit and keep their score
(the mean) with a note. Hand-written (60 lines of numpy) because no maintained Python package
fits this model: crowd-kit's aggregators are for categories, statsmodels' MixedLM has one noise
variance for everyone; with the precisions held fixed and no shrinkage, the fit is the
weighted least-squares fit of ``score ~ response + annotator``, which is how the tests check it
(statsmodels WLS).

References
----------
Paun, S., Carpenter, B., Chamberlain, J., Hovy, D., Kruschwitz, U., & Poesio, M. (2018).
Comparing Bayesian models of annotation. TACL 6, 571-585 (annotator bias and precision
models). Raykar, V. C. et al. (2010). Learning from crowds. JMLR 11, 1297-1322 (section 3:
regression with annotator precisions). Morris, C. N. (1983). Parametric empirical Bayes
inference. JASA 78(381), 47-55 (the shrinkage of the offsets).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

#: Pseudo-scores of the study's pooled variance in each annotator's variance
PRIOR_SCORES = 4.0
#: Smallest noise variance: the rounding of a score to an integer (uniform, width 1)
VARIANCE_FLOOR = 1.0 / 12.0
#: Smallest spread of the offsets across annotators (keeps the shrinkage finite)
TAU2_FLOOR = 1e-4


class OffsetFit(NamedTuple):
    """A fit: per response ``mu`` (NaN where the response has one score), per annotator
    ``offset``, ``variance`` and ``n_fitted`` (their scores on responses with 2 or more), and
    the number of outer iterations."""

    mu: np.ndarray
    offset: np.ndarray
    variance: np.ndarray
    n_fitted: np.ndarray
    iterations: int


def fit_offsets(task: np.ndarray, worker: np.ndarray, x: np.ndarray, variance: np.ndarray,
                tau2: float | None, offset: np.ndarray | None = None, *, n_iter: int = 500,
                tol: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
    """Aggregates ``mu`` and offsets ``b`` for fixed annotator ``variance``: the minimum of
    ``sum (x - mu_t - b_w)^2 / sigma_w^2 + sum b_w^2 / tau^2`` (``tau2=None``: no shrinkage,
    the weighted least-squares fit), offsets centred to average 0 over the scores."""
    n_tasks, n_workers = int(task.max()) + 1, len(variance)
    w = 1.0 / variance[worker]
    weight_t = np.bincount(task, w, n_tasks)
    n_w = np.bincount(worker, minlength=n_workers).astype(float)
    b = np.zeros(n_workers) if offset is None else offset.copy()
    shrink = 0.0 if tau2 is None else variance / tau2
    for _ in range(n_iter):
        mu = np.bincount(task, w * (x - b[worker]), n_tasks) / np.maximum(weight_t, 1e-300)
        new = np.bincount(worker, x - mu[task], n_workers) / np.maximum(n_w + shrink, 1e-300)
        new -= (n_w * new).sum() / n_w.sum()
        moved = np.abs(new - b).max()
        b = new
        if moved < tol:
            break
    mu = np.bincount(task, w * (x - b[worker]), n_tasks) / np.maximum(weight_t, 1e-300)
    return mu, b


def _variances(task: np.ndarray, worker: np.ndarray, residual: np.ndarray,
               variance: np.ndarray) -> np.ndarray:
    """Each annotator's noise variance from its residuals and their degrees of freedom,
    pooled with the study's by :data:`PRIOR_SCORES`."""
    w = 1.0 / variance[worker]
    leverage = w / np.bincount(task, w)[task]
    ss = np.bincount(worker, residual**2, len(variance))
    dof = np.bincount(worker, 1.0 - leverage, len(variance))
    pooled = max(ss.sum() / max(dof.sum(), 1e-12), VARIANCE_FLOOR)
    return np.maximum((ss + PRIOR_SCORES * pooled) / (dof + PRIOR_SCORES), VARIANCE_FLOOR)


def _offset_spread(worker: np.ndarray, raw: np.ndarray, variance: np.ndarray,
                   n_w: np.ndarray) -> float:
    """Method-of-moments spread of the true offsets: the variance of the unshrunk offsets
    less their mean sampling variance ``sigma_w^2 / n_w``."""
    seen = n_w > 0
    spread = float(np.average(raw[seen] ** 2, weights=n_w[seen])
                   - np.average(variance[seen] / n_w[seen], weights=n_w[seen]))
    return max(spread, TAU2_FLOOR)


def gaussian_aggregate(task: np.ndarray, worker: np.ndarray, score: np.ndarray, *,
                       n_iter: int = 200, tol: float = 1e-8) -> OffsetFit:
    """Fit the offset + precision model to ``score[i]`` given by ``worker[i]`` to ``task[i]``
    (integer codes); see the module for the model and each step."""
    task, worker = np.asarray(task), np.asarray(worker)
    score = np.asarray(score, float)
    n_tasks, n_workers = int(task.max()) + 1, int(worker.max()) + 1
    multi = np.bincount(task, minlength=n_tasks)[task] >= 2
    t, w, x = task[multi], worker[multi], score[multi]
    n_w = np.bincount(w, minlength=n_workers).astype(float)
    mu = np.full(n_tasks, np.nan)
    if not multi.any():
        return OffsetFit(mu, np.zeros(n_workers), np.full(n_workers, np.nan), n_w, 0)
    means = np.bincount(t, x, n_tasks) / np.maximum(np.bincount(t, minlength=n_tasks), 1)
    variance = _variances(t, w, x - means[t], np.ones(n_workers))
    offset, tau2, done = np.zeros(n_workers), 1.0, 0
    while done < n_iter:
        done += 1
        fitted, offset = fit_offsets(t, w, x, variance, tau2, offset)
        residual = x - fitted[t] - offset[w]
        new_variance = _variances(t, w, residual, variance)
        raw = np.bincount(w, x - fitted[t], n_workers) / np.maximum(n_w, 1)
        tau2 = _offset_spread(w, raw - np.average(raw, weights=np.maximum(n_w, 1e-12)),
                              new_variance, n_w)
        moved = np.abs(new_variance - variance).max()
        variance = new_variance
        if moved < tol:
            break
    fitted, offset = fit_offsets(t, w, x, variance, tau2, offset)
    mu[np.unique(t)] = fitted[np.unique(t)]
    return OffsetFit(mu, offset, np.where(n_w > 0, variance, np.nan), n_w, done)
