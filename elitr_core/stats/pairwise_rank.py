"""Rankings from pairwise battles: CREAM's Elo, Bradley-Terry with intervals, and how far each
ranking agrees with the human-score ranking (Kendall tau).

Matches are the judgments of :func:`elitr_core.stats.pairwise.outcomes` in table order: every
asked order and sample is one match. The Elo update and the Bradley-Terry fit are those of
:mod:`elitr_core.stats.elo` (score-based matches); only the matches differ.

Elo is by default the maximum-likelihood rating (Bradley-Terry on the Elo scale,
:mod:`elitr_core.stats.elo_mle`): no match order, no seed, the same ranking as Bradley-Terry.
CREAM's order-based Elo stays available (``point="median"``: median over random match orders,
seeded; ``"order"``: one pass in table order).

Intervals: the maximum-likelihood Elo's, Bradley-Terry's and tau's come from a percentile
cluster bootstrap over questions (every judgment of a question moves together; the Elo interval
is Bradley-Terry's on the Elo scale); the order-based Elo's is the percentile interval of the
final ratings over random match orders.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats._corr_bootstrap import kendall_rows, resample_indices
from elitr_core.stats.agreement import cluster_weights, pair_rng, percentile_ci
from elitr_core.stats.elo_mle import bt_counts, replicate_strengths
from elitr_core.stats.frame import QUESTION_KEY, group_codes, per_response
from elitr_core.stats.pairwise import outcomes
from elitr_core.stats.rating_groups import comparison_groups, first_shown_won
from elitr_core.stats.ratings import (
    Matches,
    check_elo_options,
    elo_pass,
    elo_ratings,
    strengths,
)
from elitr_core.vocab import EXPORT_COLUMNS

RATING_COLUMNS: tuple[str, ...] = EXPORT_COLUMNS["elo-pairwise"]
BT_COLUMNS: tuple[str, ...] = EXPORT_COLUMNS["bradley-terry"]
RANKING_AGREEMENT_COLUMNS: tuple[str, ...] = EXPORT_COLUMNS["pairwise-agreement"]
RANKINGS: tuple[str, ...] = ("elo", "bradley-terry")

#: Random match orders of the order-based Elo (``point="median"``).
ORDERS = 200


class Battles(NamedTuple):
    """One evaluator's matches: model codes into ``models``, outcome for ``a``, question code."""

    evaluator: str
    models: np.ndarray
    a: np.ndarray
    b: np.ndarray
    s: np.ndarray
    clusters: np.ndarray
    questions: pd.DataFrame  # QUESTION_KEY of each cluster code, in code order
    first_won: np.ndarray  # 1: the answer shown first won, 0: the second, NaN: a tie

    def matches(self) -> Matches:
        """These battles as :class:`elitr_core.stats.ratings.Matches`."""
        return Matches(self.a, self.b, self.s, self.clusters, self.models, self.first_won)


def battles(df: pd.DataFrame, criterion: str = "verdict") -> list[Battles]:
    """Every evaluator's matches under ``criterion``; models in order of first appearance."""
    kept = outcomes(df, criterion)
    found = []
    for evaluator, part in kept.groupby("evaluator", sort=False):
        pairs = np.column_stack([part["model_a"].to_numpy(), part["model_b"].to_numpy()])
        models = np.asarray(pd.unique(pairs.ravel()))
        codes = pd.Categorical(pairs.ravel(), categories=models).codes.reshape(-1, 2)
        clusters = group_codes(part, QUESTION_KEY)
        first = pd.Series(np.arange(len(part))).groupby(clusters, sort=True).first()
        questions = part.iloc[first.to_numpy()][list(QUESTION_KEY)].reset_index(drop=True)
        s = part["s"].to_numpy(float)
        found.append(Battles(str(evaluator), models, codes[:, 0].astype(np.int64),
                             codes[:, 1].astype(np.int64), s, clusters, questions,
                             first_shown_won(s, part["order"].to_numpy())))
    return found


def pairwise_elo(df: pd.DataFrame, criterion: str = "verdict", *, k: float = 32.0,
                 initial: float = 1000.0, n_bootstrap: int = ORDERS, seed: int = 0,
                 confidence: float = 0.95, point: str = "mle") -> pd.DataFrame:
    """Elo ratings from pairwise judgments.

    ``point="mle"`` (default): maximum-likelihood ratings (Bradley-Terry on the Elo scale, mean
    ``initial``) with the percentile interval over ``n_bootstrap`` question resamples (the
    same resamples as :func:`pairwise_bradley_terry`'s for the same seed). ``"median"``:
    CREAM's update ``R_a += K (S - E_a)``, ``E_a = 1 / (1 + 10^((R_b - R_a) / 400))``, the
    median of the final ratings over ``n_bootstrap`` random match orders and their percentile
    interval; ``"order"``: one pass in table order. The random draws come from a generator
    seeded by ``seed``, the evaluator and the criterion.

    Returns
    -------
    pandas.DataFrame
        :data:`RATING_COLUMNS`, per evaluator best first; ``note`` as in
        :func:`pairwise_bradley_terry`.

    References
    ----------
    Gong, Z. et al. (2024). CREAM: Comparison-Based Reference-Free ELO-Ranked Automatic
    Evaluation for Meeting Summarization. arXiv:2409.10883. Chiang, W.-L. et al. (2024).
    Chatbot Arena. ICML 2024 (maximum-likelihood Elo).
    """
    check_elo_options(point, n_bootstrap, confidence)
    parts = []
    for m in battles(df, criterion):
        rng = pair_rng(seed, m.evaluator, criterion)
        table = elo_ratings(m.matches(), point, rng, n_bootstrap, confidence, k=k,
                            initial=initial)
        parts.append(table.assign(evaluator=m.evaluator, criterion=criterion))
    return _sorted(parts, "rating", RATING_COLUMNS)


def _sorted(parts: list[pd.DataFrame], value: str, columns: tuple[str, ...]) -> pd.DataFrame:
    """Rows per evaluator and group of models that met, best first, in contract order."""
    out = pd.concat(parts, ignore_index=True).astype({"ci_low": "Float64", "ci_high": "Float64"})
    return out.sort_values(["evaluator", "group", value], ascending=[True, True, False],
                           kind="stable").reset_index(drop=True)[list(columns)]


def pairwise_bradley_terry(df: pd.DataFrame, criterion: str = "verdict", *,
                           n_bootstrap: int = 200, seed: int = 0,
                           confidence: float = 0.95) -> pd.DataFrame:
    """Bradley-Terry strengths from pairwise judgments, with cluster-bootstrap intervals.

    ``P(i beats j) = p_i / (p_i + p_j)``, ties half a win to each side; ``strength = log p``
    centred to mean zero (Hunter's MM fit, :func:`elitr_core.stats.elo.bt_fit`). The interval
    is the percentile interval over question resamples, each resample rating the models it
    can (:func:`elitr_core.stats.elo_mle.replicate_strengths`). A model rated in too few
    resamples (a sparse model, or one that almost never wins) has no interval and ``note``
    says so, while the others keep theirs; a zero-width interval (every battle a tie, a judge
    that always prefers one position, a single question) is empty with its cause; groups of
    models that never met are rated apart, each on its own scale (the note names them).

    Returns
    -------
    pandas.DataFrame
        :data:`BT_COLUMNS`, per evaluator best first.

    References
    ----------
    Bradley, R. A., Terry, M. E. (1952). Rank analysis of incomplete block designs.
    Biometrika 39, 324-345. Hunter, D. R. (2004). MM algorithms for generalized
    Bradley-Terry models. Annals of Statistics 32(1), 384-406.
    """
    if n_bootstrap < 0 or not 0 < confidence < 1:
        raise UserError("n_bootstrap must be >= 0 and confidence strictly between 0 and 1")
    parts = []
    for m in battles(df, criterion):
        table = strengths(m.matches(), n_bootstrap, pair_rng(seed, m.evaluator, criterion),
                          confidence)
        parts.append(table.assign(evaluator=m.evaluator, criterion=criterion))
    return _sorted(parts, "strength", BT_COLUMNS)


def _human_sums(m: Battles, scores: pd.DataFrame, reference: str) -> tuple[np.ndarray, ...]:
    """Per (question code, model) sums and counts of ``reference``'s per-response scores."""
    human = per_response(scores)
    human = human[human["evaluator"] == reference]
    questions = m.questions.assign(_g=np.arange(len(m.questions)))
    # keys compared as text: a question number may be read as int on one side, str on the other
    as_text = {k: "string" for k in QUESTION_KEY}
    merged = human.astype(as_text).merge(questions.astype(as_text), on=list(QUESTION_KEY),
                                         how="inner")
    code_of = {str(name): i for i, name in enumerate(m.models)}
    merged = merged[merged["model"].astype(str).isin(code_of)]
    codes = merged["model"].astype(str).map(code_of).to_numpy(np.int64)
    n_q, n_m = len(questions), len(m.models)
    cell = merged["_g"].to_numpy() * n_m + codes
    sums = np.bincount(cell, weights=merged["score"].to_numpy(float), minlength=n_q * n_m)
    counts = np.bincount(cell, minlength=n_q * n_m).astype(float)
    return sums.reshape(n_q, n_m), counts.reshape(n_q, n_m)


def _tau(rating: np.ndarray, human: np.ndarray) -> float:
    """Kendall tau-b over the models both rank (NaN with fewer than 3, or a constant side)."""
    return float(kendall_rows(rating[None, :], human[None, :])[0])


def _ratings(m: Battles, ranking: str, idx: np.ndarray, rng: np.random.Generator,
             point: str) -> np.ndarray:
    """One replicate's ratings on the resampled matches ``idx``: Bradley-Terry (also the
    maximum-likelihood Elo's ranking), or the order-based Elo's one pass in a random order
    (which also carries the order's randomness)."""
    n = len(m.models)
    if ranking == "elo" and point != "mle":
        p = rng.permutation(idx)
        return np.asarray(elo_pass(m.a[p].tolist(), m.b[p].tolist(), m.s[p].tolist(), n))
    return replicate_strengths(*bt_counts(m.a[idx], m.b[idx], m.s[idx], n))


def published_ratings(pairwise: pd.DataFrame, criterion: str, point: str = "mle",
                      seed: int = 0) -> dict[str, pd.DataFrame]:
    """Ranking -> the ratings ``export elo --source pairwise`` and ``export bradley-terry``
    print for these options (columns model, evaluator, value), so that the agreement ranks
    exactly those numbers."""
    elo = pairwise_elo(pairwise, criterion, point=point, seed=seed,
                       n_bootstrap=ORDERS if point == "median" else 0)
    bt = pairwise_bradley_terry(pairwise, criterion, n_bootstrap=0)
    return {"elo": elo.rename(columns={"rating": "value"}),
            "bradley-terry": bt.rename(columns={"strength": "value"})}


def ranking_agreement(pairwise: pd.DataFrame, scores: pd.DataFrame,
                      reference: str = "gold-human", criterion: str = "verdict", *,
                      n_bootstrap: int = 200, seed: int = 0, confidence: float = 0.95,
                      point: str = "mle") -> pd.DataFrame:
    """Kendall tau between each pairwise ranking and the ranking by mean human score.

    For every evaluator and ranking, tau-b between the ratings that ``export elo --source
    pairwise`` (Elo by ``point``, see :func:`pairwise_elo`; with the default maximum-likelihood
    Elo its ranking is Bradley-Terry's) and ``export bradley-terry`` print for the same
    ``seed``, and the models' mean ``reference`` score over the questions of the battles. The
    interval is a percentile cluster bootstrap over those questions: each replicate re-rates
    the models on the drawn questions (order-based Elo: one pass in a random order) and
    recomputes their human means on the same questions.

    Parameters
    ----------
    pairwise : pandas.DataFrame
        Pairwise judgments (:data:`elitr_core.stats.pairwise.JUDGMENT_COLUMNS`).
    scores : pandas.DataFrame
        Long scores table holding ``reference``'s scores of the same models' responses.
    reference : str, default "gold-human"
        The human evaluator.
    point : {"mle", "median", "order"}
        Which Elo (as :func:`pairwise_elo`).

    Returns
    -------
    pandas.DataFrame
        :data:`RANKING_AGREEMENT_COLUMNS`; ``n_models`` counts the models both rank. An
        evaluator whose ranking cannot be compared (fewer than three models with both
        battles and ``reference`` scores, groups of models that never met, strengths that
        are infinite) keeps its rows with an empty ``tau`` and the cause in ``note``; a
        sparse model that leaves some resamples without it does not empty the interval (each
        resample ranks the models it rates).

    Raises
    ------
    DegenerateDataError
        When no evaluator's tau can be computed (the notes joined).

    References
    ----------
    Gong, Z. et al. (2024). CREAM, arXiv:2409.10883 (rank correlation with human rankings).
    Kendall, M. G. (1945). The treatment of ties in ranking problems. Biometrika 33, 239-251.
    """
    if n_bootstrap < 0 or not 0 < confidence < 1:
        raise UserError("n_bootstrap >= 0 and 0 < confidence < 1 are needed")
    if not (scores["evaluator"] == reference).any():
        raise UserError(f"no {reference} score here: choose a human evaluator with scores")
    options = _AgreementOptions(reference, criterion, n_bootstrap, seed, confidence, point)
    rows = [row for m in battles(pairwise, criterion)
            for row in _agreement_rows(m, pairwise[pairwise["evaluator"] == m.evaluator],
                                       scores, options)]
    out = pd.DataFrame(rows, columns=list(RANKING_AGREEMENT_COLUMNS))
    if out["tau"].isna().all():
        raise DegenerateDataError("no ranking agreement can be computed: "
                                  + "; ".join(dict.fromkeys(out["note"])))
    return out.astype({"tau": "Float64", "ci_low": "Float64", "ci_high": "Float64"})


class _AgreementOptions(NamedTuple):
    reference: str
    criterion: str
    n_bootstrap: int
    seed: int
    confidence: float
    point: str


def _agreement_rows(m: Battles, own: pd.DataFrame, scores: pd.DataFrame,
                    o: _AgreementOptions) -> list[tuple[object, ...]]:
    """One evaluator's rows of :func:`ranking_agreement` (``own``: its judgments): tau with
    its interval, or empty cells and the cause in ``note``."""
    sums, counts = _human_sums(m, scores, o.reference)
    with np.errstate(invalid="ignore", divide="ignore"):
        human = sums.sum(0) / counts.sum(0)
    n_models = int(np.isfinite(human).sum())

    def row(ranking: str, tau: float = np.nan, low: float = np.nan, high: float = np.nan,
            note: str = "") -> tuple[object, ...]:
        return (m.evaluator, o.criterion, ranking, o.reference, n_models, len(m.questions), tau,
                low, high, note)

    if n_models < 3:
        return [row(r, note=f"{o.reference} scored {n_models} of the models {m.evaluator} "
                            "compared: a ranking agreement needs at least 3 models with both")
                for r in RANKINGS]
    if len(comparison_groups(m.a, m.b, len(m.models))) > 1:
        return [row(r, note=f"{m.evaluator}'s comparison graph is disconnected (groups of "
                            "models never met): its ratings have no common scale, so no one "
                            "ranking to compare; see export elo --source pairwise")
                for r in RANKINGS]
    try:
        published = published_ratings(own, o.criterion, o.point, o.seed)
    except DegenerateDataError as exc:
        return [row(r, note=str(exc)) for r in RANKINGS]
    weights = cluster_weights(len(m.questions), o.n_bootstrap, pair_rng(o.seed, m.evaluator))
    rows = []
    for ranking in RANKINGS:
        rating = published[ranking].set_index("model")["value"]
        tau = _tau(rating.reindex(m.models).to_numpy(float), human)
        low = high = np.nan
        note = ""
        if o.n_bootstrap:
            rng = pair_rng(o.seed, m.evaluator, o.criterion, ranking)
            with np.errstate(invalid="ignore", divide="ignore"):  # a model's human drawn 0x
                ratings = [_ratings(m, ranking, resample_indices(m.clusters, w), rng, o.point)
                           for w in weights]
                boot = kendall_rows(np.array(ratings).reshape(len(weights), len(m.models)),
                                    np.array([(w @ sums) / (w @ counts) for w in weights]
                                             ).reshape(len(weights), len(m.models)))
            try:
                low, high = percentile_ci(boot, o.confidence, "tau")
            except DegenerateDataError:
                note = (f"no interval: tau is undefined in {np.isnan(boot).mean():.0%} of the "
                        f"{o.n_bootstrap} question resamples (fewer than 3 models rated there, "
                        "or every model rated alike)")
        rows.append(row(ranking, tau, low, high, note))
    return rows
