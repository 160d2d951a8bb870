"""A live study's confidence sequences, per model: DataFrame in, tidy DataFrame out.

Three targets per model (one row each of :data:`TARGETS`): the human mean, the judge's bias
against the humans (mean human - judge) and the prediction-powered mean (the judge's mean
over every response of the model plus a rectifier tuned before each score:
:mod:`elitr_core.stats.ppi_cs`). Each scored response is one observation,
in the order its first score arrived, inverse-probability weighted by the probability with
which the study drew it (:func:`elitr_core.stats.confseq.ipw_increments`; weight 1 in a study
of every response). Beside each sequence: the fixed-n t interval at the same number of
scores, valid only for a number fixed in advance and looked at once.

References
----------
Waudby-Smith & Ramdas (2023); Kilian, Cortinovis & Caron (2025); Hansen & Hurwitz (1943):
see :mod:`elitr_core.stats.confseq`; Angelopoulos, Duchi & Zrnic (2023), PPI++: see
:mod:`elitr_core.stats.ppi_cs`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from elitr_core.errors import UserError
from elitr_core.stats.confseq import betting_cs, ipw_bounds, ipw_increments, stopping_time
from elitr_core.stats.intervals import quantile
from elitr_core.stats.ppi_cs import Ranges, ppi_increments
from elitr_core.vocab import EXPORT_COLUMNS, SCORE_MAX, SCORE_MIN

TARGETS: tuple[str, ...] = ("human", "bias", "ppi")
GROUP: tuple[str, ...] = ("split", "setting", "mode", "model")
SEQUENCE_COLUMNS: tuple[str, ...] = EXPORT_COLUMNS["study-monitor-sequences"]
MONITOR_COLUMNS: tuple[str, ...] = EXPORT_COLUMNS["study-monitor"]
#: simulated continuations and their length behind ``expected_further``
CONTINUATIONS, HORIZON = 50, 1500
SPAN = SCORE_MAX - SCORE_MIN


@dataclass(frozen=True)
class _Series:
    """A model's observations for one target, per scored response (``columns``: the
    increment alone, or human, judge and weight for the tuned PPI sequence), and how they
    become increments with bounds (``build``, on 2-D columns: one sequence a row)."""

    columns: tuple[np.ndarray, ...]
    build: Callable[..., tuple[np.ndarray, np.ndarray | float, np.ndarray | float]]
    prior: tuple[float, float] | None

    def increments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The increments and their bounds as 1-D arrays."""
        x, low, high = self.build(*(c[None, :] for c in self.columns))
        shape = x.shape
        return (x[0], np.broadcast_to(low, shape)[0].astype(float),
                np.broadcast_to(high, shape)[0].astype(float))


def _series(obs: pd.DataFrame, pop: pd.Series, target: str) -> _Series | None:
    """A model's observations for ``target``; None when the target needs a judge the study
    does not know. The human mean and the bias are betting sequences on inverse-probability
    weighted scores (or ``human - judge``); the prediction-powered mean is
    :func:`elitr_core.stats.ppi_cs.ppi_cs` (the rectifier tuned before each score)."""
    human = obs["human"].to_numpy(float)
    pi = obs["probability"].fillna(1.0).to_numpy(float)
    args = (float(pop["pi_sum"]), int(pop["responses"]))
    if target != "human" and (pd.isna(pop["judge_mean"]) or obs["judge"].isna().any()):
        return None
    if target == "ppi":
        weight = ipw_increments(np.ones_like(pi), pi, *args)
        w_min, w_max = ipw_bounds(1, 1, float(pop["pi_min"]), float(pop["pi_max"]), *args)
        ranges = Ranges(judge_mean=float(pop["judge_mean"]), score_low=SCORE_MIN,
                        score_high=SCORE_MAX, weight_min=w_min, weight_max=w_max)
        return _Series((human, obs["judge"].to_numpy(float), weight),
                       lambda h, j, w: ppi_increments(h, j, w, ranges),
                       (SCORE_MIN, SCORE_MAX))
    values, low, high = human, SCORE_MIN, SCORE_MAX
    if target == "bias":
        values, low, high = human - obs["judge"].to_numpy(float), -SPAN, SPAN
    low, high = ipw_bounds(low, high, float(pop["pi_min"]), float(pop["pi_max"]), *args)
    return _Series((ipw_increments(values, pi, *args),), lambda x: (x, low, high), None)


def _fixed_n(values: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The t interval of the mean after each score (NaN before two)."""
    n = np.arange(1, values.size + 1)
    mean = np.cumsum(values) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.sqrt(np.maximum(np.cumsum(values ** 2) - n * mean ** 2, 0) / (n - 1))
        half = np.where(n >= 2, np.asarray(quantile(confidence, np.maximum(n - 1, 1)))
                        * sd / np.sqrt(n), np.nan)
    return mean - half, mean + half


def _groups(obs: pd.DataFrame, population: pd.DataFrame
            ) -> Iterator[tuple[tuple[object, ...], pd.DataFrame, pd.Series]]:
    for column in (*GROUP, "human", "judge", "probability"):
        if column not in obs.columns:
            raise UserError(f"the study's observations lack column {column}")
    for _, pop in population.iterrows():
        key = tuple(pop[c] for c in GROUP)
        mask = np.ones(len(obs), bool)
        for c, v in zip(GROUP, key, strict=True):
            mask &= (obs[c] == v).to_numpy()
        yield key, obs[mask], pop


def study_sequences(obs: pd.DataFrame, population: pd.DataFrame,
                    confidence: float = 0.95) -> pd.DataFrame:
    """Every model's sequences after each scored response (``study-monitor-sequences``).

    Parameters
    ----------
    obs : pandas.DataFrame
        One row per scored response in arrival order: ``GROUP`` columns, ``human``,
        ``judge`` (the judge's score, NaN if none) and ``probability`` (NaN: drawn surely).
    population : pandas.DataFrame
        One row per model: ``GROUP`` columns, ``responses`` (N), ``pi_sum``, ``pi_min``,
        ``pi_max`` (the selection probabilities over all N) and ``judge_mean`` (the judge's
        mean over all N; NaN: no bias or PPI sequence).

    Returns
    -------
    pandas.DataFrame
        ``SEQUENCE_COLUMNS``: per model, target and n, the running estimate, the confidence
        sequence (``cs_low``, ``cs_high``) and the fixed-n t interval (``fixed_low``,
        ``fixed_high``).
    """
    frames = []
    for key, mine, pop in _groups(obs, population):
        for target in TARGETS:
            series = _series(mine, pop, target) if len(mine) else None
            if series is None:
                continue
            values, low, high = series.increments()
            cs_low, cs_high = betting_cs(values, low, high, confidence, series.prior)
            fixed_low, fixed_high = _fixed_n(values, confidence)
            n = np.arange(1, values.size + 1)
            frames.append(pd.DataFrame({
                **dict(zip(GROUP, key, strict=True)), "target": target, "n": n,
                "estimate": np.cumsum(values) / n, "cs_low": cs_low, "cs_high": cs_high,
                "fixed_low": fixed_low, "fixed_high": fixed_high}))
    if not frames:
        return pd.DataFrame(columns=list(SEQUENCE_COLUMNS))
    return pd.concat(frames, ignore_index=True)[list(SEQUENCE_COLUMNS)]


def expected_further(values: np.ndarray, low: float, high: float, half_width: float,
                     confidence: float = 0.95, seed: int = 0) -> float:
    """An estimate of how many more scores the sequence needs to be no wider than
    ``2 * half_width``: the median over ``CONTINUATIONS`` simulated continuations, each
    drawing ``HORIZON`` further scores from those observed so far (so it is only as good as
    their spread: a few identical scores promise too much). NaN when fewer than 2 scores,
    or when the median continuation does not get there within ``HORIZON``."""
    series = _Series((np.asarray(values, float),), lambda x: (x, low, high), None)
    return _expected_further(series, half_width, confidence, seed)


def _expected_further(series: _Series, half_width: float, confidence: float,
                      seed: int) -> float:
    """:func:`expected_further` of any target: continuations redraw whole observations
    (a human score with its judge score and weight), as the study would."""
    size = series.columns[0].size
    if size < 2:
        return float("nan")
    rng = np.random.default_rng(seed)
    more = rng.choice(size, (CONTINUATIONS, HORIZON))
    whole = [np.hstack([np.broadcast_to(c, (CONTINUATIONS, size)), c[more]])
             for c in series.columns]
    x, low, high = series.build(*whole)
    at = float(np.median(stopping_time(x, low, high, half_width, confidence, series.prior)))
    return at - size if np.isfinite(at) else float("nan")


def study_monitor(obs: pd.DataFrame, population: pd.DataFrame, targets: dict[str, float],
                  confidence: float = 0.95, seed: int = 0,
                  expected: bool = True) -> pd.DataFrame:
    """Where each model's sequences stand now (``study-monitor``).

    ``targets``: target -> the half-width wanted (the study's stopping rule, else the one
    asked for). ``reached`` says whether the sequence is that narrow; ``expected_further``
    is :func:`expected_further` (0 once reached; left empty with ``expected=False``, for a
    quick check). Other arguments: :func:`study_sequences`.
    """
    rows = []
    for key, mine, pop in _groups(obs, population):
        for target in TARGETS:
            want = targets.get(target)
            series = _series(mine, pop, target) if len(mine) else None
            if series is None:
                note = ("no score yet" if not len(mine) else
                        "the study knows no judge score on every response: no bias or PPI")
                rows.append([*key, target, len(mine), *[np.nan] * 4, want, False, np.nan,
                             note])
                continue
            values, low, high = series.increments()
            cs_low, cs_high = (float(v[-1]) for v in
                               betting_cs(values, low, high, confidence, series.prior))
            half = (cs_high - cs_low) / 2
            reached = want is not None and half <= want
            further = (0.0 if reached else np.nan if want is None or not expected else
                       _expected_further(series, want, confidence, seed))
            note = "" if want is None or reached or np.isfinite(further) or not expected else (
                "too few scores to estimate" if values.size < 2 else
                f"more than {HORIZON} further scores at the spread seen so far")
            rows.append([*key, target, values.size, float(values.mean()), cs_low, cs_high,
                         half, want, reached, further, note])
    out = pd.DataFrame(rows, columns=list(MONITOR_COLUMNS))
    out["expected_further"] = out["expected_further"].astype("Float64").round().astype("Int64")
    out["reached"] = out["reached"].astype(bool)
    return out


def first_reached(obs: pd.DataFrame, population: pd.DataFrame, targets: dict[str, float],
                  confidence: float = 0.95) -> pd.DataFrame:
    """Per model and target of ``targets``: after how many scored responses its sequence
    was first no wider than the target (``at``; NaN: not yet, or no sequence). The same event
    as ``study_monitor``'s ``reached`` (the sequence only narrows), found by
    :func:`~elitr_core.stats.confseq.stopping_time` in ``O(n)`` per bisection step instead of
    the bounds' ``O(n^2)``: what admission checks on every arrival."""
    rows = []
    for key, mine, pop in _groups(obs, population):
        for target, want in targets.items():
            series = _series(mine, pop, target) if len(mine) else None
            at = np.nan
            if series is not None:
                values, low, high = series.increments()
                found = float(stopping_time(values[None, :], low[None, :], high[None, :],
                                            want, confidence, series.prior)[0])
                at = found if np.isfinite(found) else np.nan
            rows.append([*key, target, want, at])
    return pd.DataFrame(rows, columns=[*GROUP, "target", "target_half_width", "at"])
