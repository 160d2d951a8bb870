"""Active selection of responses for human scoring, and the inverse-probability-weighted PPI mean.

Instead of drawing the responses humans score uniformly, draw each one independently with a
probability that grows with how unsure the judge is about it (Poisson sampling), and weight
each human-minus-judge correction by the inverse of that probability. The estimate stays
unbiased whatever the probabilities; it is more precise when they favour the responses where
the judge errs most.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats.frame import RESPONSE_KEY, check_not_empty, per_response
from elitr_core.stats.intervals import (
    Estimate,
    check_interval,
    clip_to_scale,
    interval_note,
    satterthwaite,
    with_interval,
)
from elitr_core.stats.pairs import (
    GROUP_KEY,
    judge_human_table,
    nullable,
    with_response_columns,
)
from elitr_core.vocab import EXPORT_COLUMNS

UNCERTAINTY_METHODS: tuple[str, ...] = ("middle", "disagreement", "spread")

#: Share of the budget spread uniformly over all responses: keeps every probability away
#: from 0, which bounds the weights (Zrnic & Candes 2024 mix with the uniform rule likewise).
DEFAULT_MIX = 0.5

ACTIVE_COLUMNS: tuple[str, ...] = EXPORT_COLUMNS["ppi-active"]
"""Columns of :func:`active_ppi_table` (``export ppi-active``)."""


def uncertainty(df: pd.DataFrame, judge: str, method: str = "middle",
                others: tuple[str, ...] = (), scale: tuple[float, float] = (1.0, 10.0),
                ) -> pd.DataFrame:
    """How unsure the judge is about each response, in [0, 1].

    Parameters
    ----------
    df : pandas.DataFrame
        Long scores table.
    judge : str
        The judge evaluator.
    method : {"middle", "disagreement", "spread"}
        ``middle``: ``1 - |score - centre| / half-range`` (1 in the middle of the scale, 0 at
        its ends). ``disagreement``: mean ``|judge - other|`` over the ``others`` judges that
        scored the response, divided by the range (0 where none did). ``spread``: the standard
        deviation of the judge's samples (``ddof=0``) over half the range (0 for one sample).
    others : tuple of str
        Other judges, for ``disagreement``.
    scale : (float, float)
        Lowest and highest score of the scale.

    Returns
    -------
    pandas.DataFrame
        ``RESPONSE_KEY`` columns, ``judge`` (the per-response score) and ``uncertainty``.
    """
    if method not in UNCERTAINTY_METHODS:
        raise UserError(f"unknown uncertainty {method!r}: choose among "
                        f"{', '.join(UNCERTAINTY_METHODS)}")
    if method == "disagreement" and not others:
        raise UserError("the disagreement uncertainty needs at least one other judge")
    low, high = scale
    scores = df[(df["evaluator"] == judge) & df["score"].notna()]
    check_not_empty(scores, what=f"the judge {judge}")
    keys = list(RESPONSE_KEY)
    out = per_response(scores)[keys + ["score"]].rename(columns={"score": "judge"})
    if method == "middle":
        out["uncertainty"] = 1 - (out["judge"] - (low + high) / 2).abs() / ((high - low) / 2)
    elif method == "spread":
        spread = scores.groupby(keys, dropna=False, sort=False)["score"].std(ddof=0)
        out = out.merge(spread.rename("uncertainty").reset_index(), on=keys, how="left")
        out["uncertainty"] = out["uncertainty"] / ((high - low) / 2)
    else:
        other = per_response(df[df["evaluator"].isin(others) & df["score"].notna()])
        other = other[keys + ["score"]].merge(out[keys + ["judge"]], on=keys)
        gap = (other["score"] - other["judge"]).abs().groupby(
            [other[k] for k in keys], dropna=False, sort=False).mean()
        out = out.merge(gap.rename("uncertainty").reset_index(), on=keys, how="left")
        out["uncertainty"] = out["uncertainty"].fillna(0.0) / (high - low)
    out["uncertainty"] = out["uncertainty"].fillna(0.0).clip(0.0, 1.0)
    return out


def selection_probabilities(uncertainty: np.ndarray, budget: float,
                            mix: float = DEFAULT_MIX) -> np.ndarray:
    """Inclusion probabilities with expected total ``budget``, favouring uncertain items.

    ``pi = (1 - mix) * budget * u / sum(u) + mix * budget / N``, then probabilities above 1
    are set to 1 and the excess is spread over the others in proportion to ``pi``, until none
    exceeds 1 (so the expected number of human scores is exactly ``budget``).

    References
    ----------
    Zrnic, T., & Candes, E. J. (2024). Active statistical inference. ICML 2024, PMLR 235
    (sampling rule proportional to the model's uncertainty, mixed with the uniform rule).
    """
    u = np.asarray(uncertainty, float)
    n = u.size
    if not 0 < budget <= n:
        raise UserError(f"the budget must lie between 1 and the {n} responses, not {budget}")
    if not 0 <= mix <= 1:
        raise UserError(f"mix must lie between 0 and 1, not {mix}")
    if u.min() < 0:
        raise UserError("uncertainties must not be negative")
    share = u / u.sum() if u.sum() > 0 else np.full(n, 1.0 / n)
    pi = budget * ((1 - mix) * share + mix / n)
    for _ in range(n):  # at most n rounds: each caps at least one more item
        over = pi > 1
        if not over.any():
            break
        free = ~over & (pi < 1)
        excess = float((pi[over] - 1).sum())
        pi[over] = 1.0
        pi[free] += excess * pi[free] / pi[free].sum()
    return pi


def draw(probabilities: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Poisson sampling: each item independently with its probability (boolean mask)."""
    return rng.random(np.asarray(probabilities).size) < probabilities


def active_mean(judge: np.ndarray, human: np.ndarray, labelled: np.ndarray,
                probabilities: np.ndarray, confidence: float = 0.95,
                interval: str = "t") -> Estimate:
    """Inverse-probability-weighted prediction-powered mean of one model.

    ``mean(judge_i + (human_i - judge_i) * labelled_i / pi_i)`` over all ``N`` judged
    responses. ``human`` is read only where ``labelled`` is true.

    ``interval="normal"``: the CLT interval of that mean (standard deviation ``ddof=0``,
    Zrnic & Candes 2024, Theorem 1). ``"t"`` (default): standard deviation ``ddof=1`` and
    Student's t with Welch-Satterthwaite degrees of freedom from the judge part (``N - 1``)
    and the correction part (``n - 1``, ``n`` the labelled responses: only they carry a
    correction), which keeps the coverage near nominal with about 10 human scores
    (``bench/bench_ppi_coverage.py``); it needs ``n >= 2`` (NaN interval otherwise).

    References
    ----------
    Zrnic, T., & Candes, E. J. (2024). Active statistical inference. ICML 2024, PMLR 235,
    eq. (3). Satterthwaite, F. E. (1946). Biometrics Bulletin 2(6), 110-114.
    """
    check_interval(interval)
    judge, pi = np.asarray(judge, float), np.asarray(probabilities, float)
    labelled = np.asarray(labelled, bool)
    if np.any(pi[labelled] <= 0):
        raise UserError("a labelled response has selection probability 0: it could not "
                        "have been drawn; check the stored probabilities")
    correction = np.zeros_like(judge)
    correction[labelled] = (np.asarray(human, float)[labelled] - judge[labelled]) \
        / pi[labelled]
    terms = judge + correction
    size = terms.size
    if interval == "normal":
        return with_interval(terms.mean(), terms.std() / np.sqrt(size), confidence)
    n = int(labelled.sum())
    df = satterthwaite(judge.var(ddof=1) / size, correction.var(ddof=1) / size,
                       size - 1, n - 1) if n >= 2 and size >= 2 else np.nan
    return with_interval(terms.mean(), terms.std(ddof=1) / np.sqrt(size) if size >= 2 else np.nan,
                     confidence, df)


def _model_estimate(group: pd.DataFrame, confidence: float,
                    interval: str) -> tuple[Estimate | None, str]:
    """One model's estimate over its drawn and scored responses, and the note that says how
    (None and the reason when it has none)."""
    drawn = group["probability"].notna().to_numpy()
    scored = group["human"].notna().to_numpy()
    n_drawn, n_scored = int(drawn.sum()), int(scored.sum())
    if n_drawn == 0:
        return None, "none of its responses was drawn into the study: no estimate"
    if n_scored < 2:
        return None, (f"{n_scored} of its {n_drawn} drawn responses scored: no estimate "
                      "until at least 2 are")
    share = n_scored / n_drawn  # P(scored | drawn), the same for every drawn response
    est = active_mean(group["judge"].to_numpy(), group["human"].to_numpy(), scored,
                      group["probability"].fillna(1.0).to_numpy() * share, confidence, interval)
    if share == 1:
        return est, ""
    return est, (f"{n_scored} of its {n_drawn} drawn responses scored: weighted by the "
                 "probability of being drawn and scored (assumes the unscored ones are "
                 "missing at random)")


def active_ppi_table(df: pd.DataFrame, judge: str, human: str, probabilities: pd.DataFrame,
                     confidence: float = 0.95, interval: str = "t") -> pd.DataFrame:
    """:func:`active_mean` per model, from stored selection probabilities.

    A response is *drawn* when it has a stored probability (membership in the study), whether
    or not a human has scored it yet. In a study that is not finished, the scored responses
    of a model are treated as the sample: each is weighted by the inverse of the probability
    of being drawn and scored, ``pi_i * n_labelled / (n_labelled + n_drawn_unscored)``. This
    stays unbiased if the drawn responses still unscored are missing at random: whether a
    drawn response has been scored yet does not depend on its human score, given its model
    (true when annotators work through the drawn items in a random order; a study assigned by
    meeting completes meeting by meeting, so the assumption then needs meetings of similar
    difficulty). A model with fewer than 2 scored responses gets no estimate.

    Parameters
    ----------
    df : pandas.DataFrame
        Long scores table with both evaluators.
    judge, human : str
        Evaluator slugs.
    probabilities : pandas.DataFrame
        ``RESPONSE_KEY`` columns and ``probability``: the probability with which each response
        was drawn for human scoring (``StudyItem.probability``). Every human-scored response
        needs one; the judged responses that were not drawn need none (their term is the judge
        score alone). Use the filters the study was created with: they define the population.
    interval : {"t", "normal"}
        See :func:`active_mean`.

    Returns
    -------
    pandas.DataFrame
        ``ACTIVE_COLUMNS``, one row per split, setting, mode and model: ``n_labelled`` (drawn
        and scored), ``n_drawn_unscored``, ``n_unlabelled`` (not drawn), the judge mean over
        all, the estimate and its interval (cut to the 1..10 scale; empty without an
        estimate) and ``note`` (why there is no estimate, that the unscored drawn responses
        were re-weighted for, and :func:`~elitr_core.stats.intervals.interval_note`'s
        warnings about few or skewed human scores).

    References
    ----------
    Zrnic & Candes (2024), see :func:`active_mean`. Sarndal, C.-E., Swensson, B., & Wretman,
    J. (1992). Model Assisted Survey Sampling, Springer, section 15.6 (nonresponse as a second
    phase of sampling with response probabilities estimated within groups).
    """
    table = with_response_columns(judge_human_table(df, judge, human), probabilities,
                                  ["probability"])
    labelled = table["human"].notna()
    missing = int((labelled & table["probability"].isna()).sum())
    if missing:
        raise DegenerateDataError(f"{missing} human-scored response(s) have no selection "
                                  "probability: use the evaluator of one sampled study")
    if not table["probability"].notna().any():
        raise DegenerateDataError(f"none of the responses {judge} scored was drawn into the "
                                  f"study of {human}: widen the filters to the study's")
    rows = []
    for key, group in table.groupby(list(GROUP_KEY), sort=True):
        est, note = _model_estimate(group, confidence, interval)
        drawn, scored = group["probability"].notna(), group["human"].notna()
        values = [np.nan] * 3 if est is None else [est.mean,
                                                   *clip_to_scale(est.low, est.high)]
        if est is not None:  # the t interval's own small-sample and skew warnings
            note = "; ".join(filter(None, [note, interval_note(
                group.loc[scored, "human"].to_numpy(float), betting=False)]))
        rows.append([*key, int(scored.sum()), int((drawn & ~scored).sum()),
                     int((~drawn).sum()), float(group["judge"].mean()), *values, note])
    out = pd.DataFrame(rows, columns=list(ACTIVE_COLUMNS))
    for column in ("active_mean", "active_ci_low", "active_ci_high"):
        out[column] = nullable(out[column])
    return out
