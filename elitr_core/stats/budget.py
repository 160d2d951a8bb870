"""Budget plans: how many human scores a model needs for the interval ``export ppi`` prints to
be no wider than a target, and how sure that is.

A plan is met by a study when the interval the table prints for it has a half-width at or
below the target. That interval is a t interval (human-only: ``n - 1`` degrees of freedom;
PPI++: the rectifier's variance on ``n - 2`` degrees of freedom plus the small-sample term of
the fitted ``lambda``, Satterthwaite degrees of freedom), and its width is itself random: a
study whose sample standard deviation comes out high misses the target. The plan therefore
simulates studies from the pairs observed so far, computes the table's own interval for each
(:func:`~elitr_core.stats.ppi_designs.uniform_estimates`, tested equal to
:func:`~elitr_core.stats.ppi.ppipp_mean`) and reports the *assurance*: the share of studies of
the planned size that meet the target. The planned size is the smallest whose assurance
reaches ``assurance`` (0.8 by default).

Where humans scored every judged response, a simulated study labels ``n`` of them drawn
without replacement, exactly as a real one would. Where they scored a pilot of ``m < N``, the
pilot is not the population: its spread is itself a draw, and a pilot of 20 that happens to
hold none of a model's rare low scores plans from a spread several times too small. Each
simulated study therefore first draws the ``N - m`` human scores the pilot did not see, then
labels ``n`` of the ``N`` responses without replacement, as a real study would (the
assurance is *predictive*, averaged over what the population may be, as O'Hagan & Stevens'
assurance averages the power over the prior). The unseen pairs come from a population of the
Dirichlet-process posterior: Dirichlet weights on the ``m`` observed pairs (weight 1 each, the
Bayesian bootstrap) and on one pair of the base measure (weight 1): a human score uniform on
the scale, so a study may meet scores the pilot never showed, and its judge score from the
pilot's line of judge on human plus a pilot residual; the judge scores of the ``N - n``
unlabelled responses are drawn without replacement from all ``N``.

Three corrections since 28 Nov, each to what the pilot's planner assumed against what a study
does (``bench/bench_estimators.py --part plans``, ``bench/results/plans-2026-11-28b.md`` and
``plans-2026-11-28d.md``): a Dirichlet-weighted population's variance averages only
``(m - 1) / (m + 1)`` of the pilot's sample variance (Rubin 1981), so each population's human
scores are spread about its mean by ``1 / sqrt(1 - sum w^2)``, the weighted form of Bessel's
correction; a study labelled ``n`` pairs drawn *with* replacement from an endless population,
where a real one labels ``n`` of the ``N`` responses; and the base measure's pair had a judge
score independent of its human score, which lowered every population's judge-human
correlation and made PPI++ plans too large. Without the first two the human-only plans of
pilots whose scores spread over the whole scale printed 0.10-0.13 more than they met
(LongAlpaca-7B and Vicuna-13B-v1.5, 400 pilots a cell); without the third LongAlpaca-7B's PPI++
plans printed 0.05-0.08 less than they met. With all three the printed assurance is within
0.05 of the share met in 12 of 12 cells (-0.042 to +0.039), plans met in 0.77-0.86 of studies
on average. Plans resting on fewer than 30 scores are noted.

The normal-quantile, CLT-variance planner before that was met in 23-40% of studies on the
bundled models; from all their scores these plans are met in 80-86%, the printed assurance
within 0.04 of that share.

References
----------
Angelopoulos, Duchi & Zrnic (2023). PPI++: Efficient prediction-powered inference.
arXiv:2311.01453. O'Hagan, A., Stevens, J. W., & Campbell, M. J. (2005). Assurance in clinical
trial design. Pharmaceutical Statistics 4(3), 187-201 (assurance: the probability that a
study of the planned size meets its goal). O'Hagan, A., & Stevens, J. W. (2001). Bayesian
assessment of sample size for clinical trials of cost-effectiveness. Medical Decision Making
21(3), 219-230. Rubin, D. B. (1981). The Bayesian bootstrap. Annals of Statistics 9(1),
130-134. Ferguson, T. S. (1973). A Bayesian analysis of some nonparametric problems. Annals
of Statistics 1(2), 209-230 (the Dirichlet process posterior). Lo, A. Y. (1988). A Bayesian
bootstrap for a finite population. Annals of Statistics 16(4), 1684-1695 (the unseen units
drawn, the sample taken from the N). Kupper, L. L., & Hafner,
K. B. (1989). How appropriate are popular sample size formulas? The American Statistician
43(2), 101-105 (the width of a t interval is random; plan for the probability of a width).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats.intervals import (
    COVERAGE_CHECKED_FROM,
    constant_human_note,
    quantile,
    too_few_human_note,
)
from elitr_core.stats.pairs import GROUP_KEY, judge_human_table
from elitr_core.stats.ppi_designs import estimates_from_sums
from elitr_core.vocab import EXPORT_COLUMNS, SCORE_MAX, SCORE_MIN

BUDGET_COLUMNS: tuple[str, ...] = EXPORT_COLUMNS["ppi-budget"]
"""Columns of ``export ppi-budget``."""
#: Share of simulated studies that must meet the target (the default)
ASSURANCE = 0.8
#: Simulated studies per candidate size (Monte-Carlo standard error 0.013 at 0.8)
REPLICATES = 1000


class _Studies:
    """Simulated studies of one model at any size ``n``, the same random draws for every
    ``n`` (so the assurance grows with ``n`` without Monte-Carlo jitter)."""

    def __init__(self, y: np.ndarray, yhat: np.ndarray, judge: np.ndarray, replicates: int,
                 seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.size = judge.size
        self.full = y.size == judge.size  # humans scored every judged response
        if self.full:
            order = rng.random((replicates, self.size)).argsort(axis=1)
            self.y, self.f = y[order], yhat[order]
        else:  # N responses the pilot may come from, n of them labelled, then judge-only
            self.y, self.f = _predictive_pairs(y, yhat, judge, replicates, rng)
            self.rest = judge[rng.random((replicates, self.size)).argsort(axis=1)]
        # the bisection asks again for a size it has tried (its answer, at the end)
        self._met: dict[tuple[int, str, float, float], float] = {}
        self._sums: tuple[list[np.ndarray], list[np.ndarray]] | None = None
        self._f_variance: np.ndarray | None = None

    def half_widths(self, n: int, design: str, confidence: float) -> np.ndarray:
        """Half-width of the table's t interval in each study with ``n`` labelled: a study
        labels its first ``n`` responses, so its sums over the labelled and the unlabelled
        ones are running sums along it, formed once for every ``n`` (:meth:`_running`).
        Tested within 1e-12 (relative) of :func:`~elitr_core.stats.ppi_designs.
        uniform_estimates` on the ``labelled`` mask of each ``n``, which the bisection called
        for every size it tried (3-4 ms a size on 1,000 studies of 130 responses; the sums
        differ in their rounding only). All ``N`` labelled is the human mean, as the table
        prints it, whatever the design."""
        rows = len(self.y)
        unlabelled = self.size - n
        if n == self.size:  # everything labelled: the human mean, as the table prints it
            design, unlabelled = "human-only", 1
        head, tail = self._running()
        sums = tuple(s[:, n] for s in head) + tuple(s[:, n] for s in tail)
        if self.full:  # every study's judge scores are the N responses' in another order
            def f_variance() -> np.ndarray:
                if self._f_variance is None:
                    self._f_variance = self.f.var(axis=-1, ddof=1)
                return self._f_variance
        else:  # its labelled pilot-population pairs', then the unlabelled judge scores
            def f_variance() -> np.ndarray:
                total, squares = sums[3] + sums[5], sums[4] + sums[6]
                return (squares - total * total / self.size) / (self.size - 1)
        _, se, df = estimates_from_sums(np.full(rows, float(n)),
                                        np.full(rows, float(unlabelled)), sums, f_variance,
                                        design)
        return np.where(np.isnan(se), np.inf, quantile(confidence, df) * np.nan_to_num(se))

    def _running(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Column ``k`` (``0..size``): each study's sums of ``y``, ``y * y``, ``y * f``,
        ``f`` and ``f * f`` over its first ``k`` responses, and of the unlabelled judge
        scores and their squares over the responses from ``k`` on."""
        if self._sums is None:
            y, f = self.y, self.f
            rest = f if self.full else self.rest
            zero = np.zeros((len(y), 1))
            head = [np.concatenate([zero, np.cumsum(v, 1)], 1)
                    for v in (y, y * y, y * f, f, f * f)]
            tail = [np.concatenate([np.cumsum(v[:, ::-1], 1)[:, ::-1], zero], 1)
                    for v in (rest, rest * rest)]
            self._sums = head, tail
        return self._sums

    def assurance(self, n: int, design: str, half_width: float, confidence: float) -> float:
        # labelling all N is the human mean's plan whatever the design
        key = (int(n), "human-only" if n == self.size else design, half_width, confidence)
        if key not in self._met:
            self._met[key] = float((self.half_widths(n, design, confidence) <= half_width).mean())
        return self._met[key]


def _predictive_pairs(y: np.ndarray, yhat: np.ndarray, judge: np.ndarray, replicates: int,
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The (human, judge) pairs of ``judge.size`` responses in a random order, for each of
    ``replicates`` studies (a study labels the first ``n``): the ``m`` pilot pairs and
    ``judge.size - m`` pairs drawn from a population of the Dirichlet-process posterior given
    the pilot (see the module): Gamma(1) weights on the pilot pairs and on one pair of the
    base measure, a human score uniform on the scale and its judge score from the pilot's line
    (:func:`_judge_given_human`). Each population's human scores are spread about its mean by
    ``1 / sqrt(1 - sum w^2)``, the weighted form of Bessel's correction: a Dirichlet-weighted
    population's variance averages ``(m - 1) / (m + 1)`` of the pilot's sample variance (Rubin
    1981), which planned too few scores wherever the uniform pair adds no spread (a pilot
    spread over the whole scale). The same correction applied to the judge scores as well was
    tried and not adopted (Vicuna-13B-v1.5's PPI++ plans then printed 0.064 more than they
    met; ``plans-2026-11-28d.md``)."""
    m, size = y.size, judge.size
    weights = rng.gamma(1.0, 1.0, (replicates, m + 1))
    weights /= weights.sum(1, keepdims=True)
    cdf = np.cumsum(weights, 1)
    cdf[:, -1] = 1.0
    # one binary search for every row: row r's cdf lies in (r, r + 1]
    offset = np.arange(replicates)[:, None]
    where = np.searchsorted((cdf + offset).ravel(), rng.random((replicates, size - m)) + offset,
                            side="right") - offset * (m + 1)
    # two draws, the first kept: the human scores' stream is as before the judge's line
    base_human = rng.integers(int(SCORE_MIN), int(SCORE_MAX) + 1,
                              (2, replicates, 1)).astype(float)[0]
    where = np.minimum(where, m)
    # the N responses: the pilot's and the unseen ones, in a random order (n of N labelled
    # without replacement, as a real study labels them)
    order = rng.random((replicates, size)).argsort(axis=1)
    base_judge = _judge_given_human(y, yhat, base_human, rng)
    human = np.concatenate([np.broadcast_to(y, (replicates, m)), base_human], 1)
    judged = np.concatenate([np.broadcast_to(yhat, (replicates, m)), base_judge], 1)
    centre = (weights * human).sum(1, keepdims=True)
    human = centre + (human - centre) / np.sqrt(1 - (weights * weights).sum(1, keepdims=True))
    pairs_y = np.concatenate([np.broadcast_to(y, (replicates, m)),
                              np.take_along_axis(human, where, 1)], 1)
    pairs_f = np.concatenate([np.broadcast_to(yhat, (replicates, m)),
                              np.take_along_axis(judged, where, 1)], 1)
    return np.take_along_axis(pairs_y, order, 1), np.take_along_axis(pairs_f, order, 1)


def _judge_given_human(y: np.ndarray, yhat: np.ndarray, human: np.ndarray,
                       rng: np.random.Generator) -> np.ndarray:
    """The judge scores of the base measure's pairs, given their (uniform) human scores:
    the pilot's least-squares line of judge on human plus one of its residuals drawn at
    random, kept on the scale. The base measure's human score is uniform (a study may meet
    scores the pilot never showed); its judge score follows the judge's relation to the
    humans as the pilot shows it (empirical Bayes). A base pair whose judge score knew nothing
    of its human score (both uniform, independent; 28 Nov) drew about one unseen response in
    ``m + 1`` with no relation between the two, which lowered every population's correlation
    and planned PPI++ studies 5-10% larger than they needed (a printed assurance 0.07 below
    the share met for LongAlpaca-7B, ``bench/results/plans-2026-11-28d.md``). A pilot whose
    human scores are all equal shows no line: its judge scores are drawn as they are."""
    spread = float(np.var(y))
    slope = float(np.mean((y - y.mean()) * (yhat - yhat.mean()))) / spread if spread else 0.0
    residual = yhat - (yhat.mean() + slope * (y - y.mean()))
    drawn = residual[rng.integers(0, y.size, human.shape)]
    return np.clip(yhat.mean() + slope * (human - y.mean()) + drawn, SCORE_MIN, SCORE_MAX)


def _smallest(studies: _Studies, design: str, half_width: float, confidence: float,
              target: float) -> tuple[float, float, float]:
    """Smallest ``n`` whose assurance reaches ``target`` (bisection: the assurance grows with
    ``n``), its assurance, and the assurance of labelling everything (NaN ``n`` if short)."""
    low = 3 if design == "ppi++" else 2
    high = studies.size
    best = studies.assurance(high, design, half_width, confidence)
    if best < target:
        return np.nan, np.nan, best
    while low < high:
        middle = (low + high) // 2
        if studies.assurance(middle, design, half_width, confidence) >= target:
            high = middle
        else:
            low = middle + 1
    return float(low), studies.assurance(low, design, half_width, confidence), best


def _lambda(y: np.ndarray, yhat: np.ndarray, judge: np.ndarray, n: float) -> float:
    """PPI++'s ``lambda`` at the planned size ``n`` (at the pilot's size if none), from the
    moments observed (``ppi.power_tuning``'s formula)."""
    n = y.size if np.isnan(n) else n
    rest = judge.size - n
    variance = judge.var(ddof=1) if judge.size > 1 else 0.0
    if rest <= 0 or variance == 0:
        return 0.0
    covariance = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))
    return float(np.clip(covariance / ((1 + n / rest) * variance), 0.0, 1.0))


def _notes(n_labelled: int, n_judged: int, human: tuple[float, float, float],
           ppi: tuple[float, float, float], target: float) -> str:
    parts = []
    for name, (n, _, best) in (("human-only", human), ("PPI++", ppi)):
        if np.isnan(n):
            parts.append(f"{name} cannot reach the target: even all {n_judged} judged responses "
                         f"scored by humans meet it in {best:.0%} of studies, not {target:.0%} "
                         "(it needs more human scores than there are responses); judge more "
                         "responses or widen the half-width")
    if n_labelled < COVERAGE_CHECKED_FROM:
        parts.append(f"the plan rests on {n_labelled} human scores: the spread it plans from "
                     "is uncertain (the assurance allows for it, so the plan is larger than "
                     "these scores alone suggest); re-plan once more are in")
    return "; ".join(parts)


def budget_plan(df: pd.DataFrame, judge: str, human: str, half_width: float,
                confidence: float = 0.95, assurance: float = ASSURANCE,
                replicates: int = REPLICATES, seed: int = 0) -> pd.DataFrame:
    """Human scores needed per model for the table's interval to have at most ``half_width``,
    PPI++ against human-only, with the share of studies that meet it (see the module).

    Parameters
    ----------
    df : pandas.DataFrame
        Long scores table with both evaluators; at least 2 labelled responses per model.
    judge, human : str
        Evaluator slugs.
    half_width : float
        Target half-width of the interval on the 1..10 scale (> 0).
    confidence : float
        Coverage of the interval.
    assurance : float
        Share of simulated studies of the planned size that must meet the target.
    replicates, seed : int
        Simulated studies per candidate size, and their seed (same data, same plan).

    Returns
    -------
    pandas.DataFrame
        ``BUDGET_COLUMNS``, one row per model with a judge score: ``human_sd``,
        ``residual_sd`` and ``lambda`` as observed; ``n_human_only`` and ``n_ppi``, the sizes
        planned, with ``assurance_human_only`` and ``assurance_ppi``, the share of simulated
        studies of that size meeting the target. A size no study can reach (more scores than
        responses) is empty and the ``note`` says so; so is a plan resting on fewer than 30
        human scores. Fewer than 2 human scores, or all the same, give no plan and a note.
    """
    if not half_width > 0:
        raise UserError(f"the target half-width must be positive, not {half_width}")
    if not 0 < assurance < 1:
        raise UserError(f"the assurance must lie strictly between 0 and 1, not {assurance}")
    quantile(confidence)  # checks the confidence
    table = judge_human_table(df, judge, human)
    rows = []
    for key, group in table.groupby(list(GROUP_KEY), sort=True):
        labelled = group["human"].notna().to_numpy()
        y = group.loc[labelled, "human"].to_numpy(float)
        yhat = group.loc[labelled, "judge"].to_numpy(float)
        note = (too_few_human_note(y.size).replace("an interval", "a plan") if y.size < 2
                else constant_human_note(y, "a variance of 0 plans no budget"))
        if note:
            rows.append([*key, len(group), y.size, half_width, *[np.nan] * 7, note])
            continue
        studies = _Studies(y, yhat, group["judge"].to_numpy(float), replicates, seed)
        plans = [_smallest(studies, design, half_width, confidence, assurance)
                 for design in ("human-only", "ppi++")]
        lam = _lambda(y, yhat, group["judge"].to_numpy(float), plans[1][0])
        rows.append([*key, len(group), y.size, half_width, float(y.std(ddof=1)),
                     float(np.std(y - lam * yhat, ddof=1)), lam, plans[0][0], plans[0][1],
                     plans[1][0], plans[1][1],
                     _notes(y.size, len(group), plans[0], plans[1], assurance)])
    out = pd.DataFrame(rows, columns=list(BUDGET_COLUMNS))
    if not out["n_labelled"].ge(2).any():
        raise DegenerateDataError(f"no model has 2 responses scored by both {judge} and "
                                  f"{human}: collect a few human scores first")
    for column in ("n_human_only", "n_ppi"):
        out[column] = out[column].astype("Float64").round().astype("Int64")
    for column in ("assurance_human_only", "assurance_ppi"):
        out[column] = out[column].astype("Float64")
    return out
