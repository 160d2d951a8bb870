"""The offset + precision model of the silver aggregate. References: statsmodels' weighted least
squares of ``score ~ response + annotator`` (the fit with the precisions held fixed and no
shrinkage, 1e-8); the plain mean on a crowd of identical annotators; simulated crowds with a
known truth for the shrinkage, which keeps it no worse than the mean where each annotator gives
few scores."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from elitr_core.stats.annotator_offsets import fit_offsets, gaussian_aggregate


def sparse_crowd(seed: int, n_tasks: int = 200, per: int = 3, pool: int = 30,
                 offset_sd: float = 0.7) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``per`` of ``pool`` annotators (noise sd 0.5-2.5, offsets sd ``offset_sd``) score each
    response; truth on 1..10."""
    rng = np.random.default_rng(seed)
    task = np.repeat(np.arange(n_tasks), per)
    worker = np.concatenate([rng.choice(pool, per, replace=False) for _ in range(n_tasks)])
    truth = rng.integers(1, 11, n_tasks).astype(float)
    sd, offset = rng.uniform(0.5, 2.5, pool), rng.normal(0, offset_sd, pool)
    score = np.clip(np.rint(truth[task] + offset[worker] + rng.normal(0, 1, task.size)
                            * sd[worker]), 1, 10)
    return task, worker, score, truth


def test_fixed_precisions_without_shrinkage_are_weighted_least_squares() -> None:
    task, worker, score, _ = sparse_crowd(1, n_tasks=60, per=4, pool=10)
    variance = np.random.default_rng(2).uniform(0.3, 3.0, 10)
    mu, b = fit_offsets(task, worker, score, variance, None, n_iter=20000, tol=1e-13)
    design = pd.get_dummies(pd.DataFrame({"t": task.astype(str), "w": worker.astype(str)}),
                            drop_first=False).astype(float)
    design = design.drop(columns="w_0")  # the offsets are identified up to a constant
    wls = sm.WLS(score, design, weights=1 / variance[worker]).fit()
    assert mu[task] + b[worker] == pytest.approx(wls.fittedvalues, abs=1e-8)
    n_w = np.bincount(worker)
    assert (n_w * b).sum() == pytest.approx(0, abs=1e-9)  # centred: the mean's level


def test_identical_annotators_on_a_complete_design_give_the_mean() -> None:
    rng = np.random.default_rng(3)
    task, worker = np.repeat(np.arange(40), 5), np.tile(np.arange(5), 40)
    score = np.clip(np.rint(rng.integers(1, 11, 40)[task] + rng.normal(0, 1, 200)), 1, 10)
    fit = gaussian_aggregate(task, worker, score)
    mean = np.bincount(task, score) / 5
    # a complete design: the offsets cancel out of every response and the weights differ only
    # by each annotator's estimated noise
    assert np.abs(fit.mu - mean).max() < 0.35
    assert fit.mu.mean() == pytest.approx(mean.mean(), abs=0.05)


@pytest.mark.parametrize("seed", range(4))
def test_sparse_crowds_are_not_worse_than_the_mean(seed: int) -> None:
    """3 scores a response from a pool of 30 (about 20 each): MAE no worse than the mean's
    beyond 0.02 in each crowd (nominal Dawid-Skene: about +25% on such crowds)."""
    task, worker, score, truth = sparse_crowd(seed)
    mean = np.bincount(task, score) / 3
    fit = gaussian_aggregate(task, worker, score)
    assert np.abs(fit.mu - truth).mean() <= np.abs(mean - truth).mean() + 0.02


def test_a_spammer_gets_little_weight_and_an_offset_is_found() -> None:
    rng = np.random.default_rng(5)
    task, worker = np.repeat(np.arange(150), 4), np.tile(np.arange(4), 150)
    truth = rng.integers(2, 10, 150).astype(float)
    score = truth[task] + rng.normal(0, 0.5, 600)
    score[worker == 1] += 1.5  # lenient
    score[worker == 3] = rng.integers(1, 11, 150)  # spammer
    fit = gaussian_aggregate(task, worker, np.clip(np.rint(score), 1, 10))
    assert fit.variance[3] > 10 * fit.variance[0]
    assert fit.offset[1] - fit.offset[0] == pytest.approx(1.5, abs=0.25)
    mean = np.bincount(task, np.clip(np.rint(score), 1, 10)) / 4
    assert np.abs(fit.mu - truth).mean() < 0.5 * np.abs(mean - truth).mean()


def test_responses_with_one_score_are_left_out_of_the_fit() -> None:
    task = np.array([0, 0, 1, 1, 2])
    worker = np.array([0, 1, 0, 1, 0])
    fit = gaussian_aggregate(task, worker, np.array([5.0, 7.0, 3.0, 5.0, 9.0]))
    assert np.isnan(fit.mu[2]) and np.isfinite(fit.mu[:2]).all()
    assert fit.n_fitted.tolist() == [2, 2]
    none = gaussian_aggregate(np.array([0, 1]), np.array([0, 1]), np.array([4.0, 6.0]))
    assert np.isnan(none.mu).all() and none.iterations == 0
