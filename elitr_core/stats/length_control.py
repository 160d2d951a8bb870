"""A length-controlled judge leaderboard: each model's judge score at a common response length.

LLM judges prefer longer answers (on the bundled data GPT-4 adds 0.69 points per 100 words
beyond the human, ``judge-effects``). AlpacaEval 2.0's length-controlled win rate removes that
preference by modelling the judge's verdict with the length difference and predicting it at a
difference of zero (Dubois et al. 2024). Applied to absolute scores: the judge's score of
response ``i`` of model ``m`` is modelled as

    score_i = alpha_m + beta * (length_i - common) / 100 + error_i

(ordinary least squares, one slope shared by all models, ``length`` in words, ``common`` the
mean length of all judged responses), and model ``m``'s length-controlled score is
``alpha_m``: its expected judge score had it answered at the common length. Intervals are
percentile intervals over a cluster bootstrap of questions (all models' answers to a question
move together), as in the rest of the judge audit. Beside it, Kendall's tau between the
models' human means and (a) their raw judge means, (b) their length-controlled scores: does
controlling for length bring the judge's ranking closer to the humans'?

The fit is normal equations per question summed with bootstrap weights (numpy), so 1,000
replicates cost one ``(B, G) @ (G, p^2)`` product and ``B`` small solves; statsmodels'
OLS is the independent reference in the tests.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from elitr_core.errors import DegenerateDataError
from elitr_core.stats._corr_bootstrap import kendall_rows
from elitr_core.stats.agreement import MIN_VALID_REPLICATES, cluster_weights, pair_rng
from elitr_core.stats.frame import ZERO_WIDTH
from elitr_core.stats.pairs import judge_human_table, with_response_columns
from elitr_core.vocab import EXPORT_COLUMNS

#: Length unit of the slope (words).
WORDS_UNIT = 100.0
LC_COLUMNS: tuple[str, ...] = EXPORT_COLUMNS["length-controlled"]
TAU_COLUMNS: tuple[str, ...] = EXPORT_COLUMNS["length-controlled-tau"]


def _design(table: pd.DataFrame, models: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Model indicators and the centred length (per 100 words), the judge scores, and the
    common length."""
    codes = pd.Categorical(table["model"], categories=models).codes
    length = table["length"].to_numpy(float)
    common = float(length.mean())
    x = np.zeros((len(table), len(models) + 1))
    x[np.arange(len(table)), codes] = 1.0
    x[:, -1] = (length - common) / WORDS_UNIT
    return x, table["judge"].to_numpy(float), common


def _fits(x: np.ndarray, y: np.ndarray, clusters: np.ndarray,
          weights: np.ndarray) -> np.ndarray:
    """OLS coefficients of every bootstrap replicate (rows of ``weights``: how often each
    question cluster is drawn); NaN where a replicate's design is singular (a model absent)."""
    p, g = x.shape[1], int(clusters.max()) + 1
    xx = np.zeros((g, p, p))
    np.add.at(xx, clusters, x[:, :, None] * x[:, None, :])
    xy = np.zeros((g, p))
    np.add.at(xy, clusters, x * y[:, None])
    a = (weights @ xx.reshape(g, -1)).reshape(-1, p, p)
    b = weights @ xy
    out = np.full((len(weights), p), np.nan)
    ok = np.linalg.matrix_rank(a) == p
    out[ok] = np.linalg.solve(a[ok], b[ok][:, :, None])[:, :, 0]
    return out


def _judged(df: pd.DataFrame, judge: str, human: str, lengths: pd.DataFrame) -> pd.DataFrame:
    table = with_response_columns(judge_human_table(df, judge, human), lengths, ["length"])
    missing = int(table["length"].isna().sum())
    if missing:
        raise DegenerateDataError(f"{missing} judged response(s) have no stored text to measure:"
                                  " import the generated responses")
    if table["length"].nunique() < 2:
        raise DegenerateDataError("every judged response has the same length: a length "
                                  "effect cannot be separated from the models'")
    return table


def length_controlled(df: pd.DataFrame, judge: str, human: str, lengths: pd.DataFrame, *,
                      n_bootstrap: int = 1000, seed: int = 0,
                      confidence: float = 0.95) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The length-controlled leaderboard of ``judge`` and the rankings' agreement with ``human``.

    Parameters
    ----------
    df : pandas.DataFrame
        Long scores table (``elitr_core.vocab.SCORE_COLUMNS``) holding the judge's scores
        (every model compared) and the human's (any subset).
    judge, human : str
        Evaluator slugs.
    lengths : pandas.DataFrame
        ``RESPONSE_KEY`` columns and ``length`` (words) of the responses.
    n_bootstrap, seed, confidence
        Cluster bootstrap over questions (0: no intervals).

    Returns
    -------
    (pandas.DataFrame, pandas.DataFrame)
        :data:`LC_COLUMNS`, one row per model best length-controlled score first:
        ``judge_mean`` (raw), ``lc_mean`` (at ``common_length`` words) with its interval,
        ``human_mean`` over the responses the human scored, ``slope`` (judge points per 100
        words, shared); and :data:`TAU_COLUMNS`: Kendall tau-b of the human means with the raw
        judge means and with the length-controlled scores, over the models with human scores,
        with percentile intervals from the same question resamples (empty, with a note, below
        3 such models).

    References
    ----------
    Dubois, Y., Galambosi, B., Liang, P., Hashimoto, T. B. (2024). Length-Controlled
    AlpacaEval: A Simple Way to Debias Automatic Evaluators. arXiv:2404.04475.
    """
    table = _judged(df, judge, human, lengths)
    models = np.asarray(pd.unique(table["model"]))
    x, y, common = _design(table, models)
    coef = np.linalg.lstsq(x, y, rcond=None)[0]
    clusters = table["_question"].to_numpy()
    boot = np.full((0, len(coef)), np.nan)
    if n_bootstrap:
        weights = cluster_weights(int(clusters.max()) + 1, n_bootstrap,
                                  pair_rng(seed, judge, human, "length-controlled"))
        boot = _fits(x, y, clusters, weights)
    tail = (1 - confidence) / 2
    low, high = (np.nanquantile(boot, [tail, 1 - tail], axis=0) if len(boot)
                 else np.full((2, len(coef)), np.nan))
    by_model = table.groupby("model", sort=False)
    out = pd.DataFrame({
        "judge": judge, "human": human, "model": models,
        "n": by_model.size().reindex(models).to_numpy(),
        "mean_length": by_model["length"].mean().reindex(models).to_numpy(),
        "common_length": common, "judge_mean": by_model["judge"].mean().reindex(models).to_numpy(),
        "lc_mean": coef[:-1], "ci_low": low[:-1], "ci_high": high[:-1],
        "human_mean": by_model["human"].mean().reindex(models).to_numpy(),
        "slope": coef[-1], "slope_ci_low": low[-1], "slope_ci_high": high[-1]})
    out = out.sort_values("lc_mean", ascending=False, kind="stable").reset_index(drop=True)
    taus = _taus(out, table, boot, models, clusters, weights if n_bootstrap else None,
                 confidence)
    return out[list(LC_COLUMNS)], taus


#: Means closer than this are one value to a ranking: a constant judge's length-controlled
#: means differ by float rounding (1e-15), which must not order the models.
_SAME = 1e-9


def _taus_of_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Tau-b of each row of ``a`` with the same row of ``b``, values within ``_SAME`` one
    value (NaN below 3 models both rank, or a side constant)."""
    return kendall_rows(np.round(a / _SAME) * _SAME, np.round(b / _SAME) * _SAME)


def _tau(a: np.ndarray, b: np.ndarray) -> float:
    return float(_taus_of_rows(a[None, :], b[None, :])[0])


def _taus(out: pd.DataFrame, table: pd.DataFrame, boot: np.ndarray, models: np.ndarray,
          clusters: np.ndarray, weights: np.ndarray | None,
          confidence: float) -> pd.DataFrame:
    """Kendall tau of the human means with the raw and the length-controlled judge scores."""
    human = out.set_index("model")["human_mean"].reindex(models).to_numpy(float)
    n_models = int(np.isfinite(human).sum())
    judge, human_slug = out["judge"].iloc[0], out["human"].iloc[0]
    codes = pd.Categorical(table["model"], categories=models).codes
    rows = []
    for ranking in ("judge mean", "length-controlled"):
        if ranking == "judge mean":
            value = out.set_index("model")["judge_mean"].reindex(models).to_numpy(float)
        else:
            value = out.set_index("model")["lc_mean"].reindex(models).to_numpy(float)
        tau, low, high, note = _tau(value, human), np.nan, np.nan, ""
        if n_models < 3:
            note = (f"{human_slug} scored {n_models} of the models: a ranking agreement needs "
                    "at least 3")
        elif not np.isfinite(tau):
            who = judge if np.ptp(np.round(value[np.isfinite(value)] / _SAME)) == 0 else human_slug
            note = (f"{who} gives every model the same {ranking if who == judge else 'mean'} "
                    f"(within {_SAME:g}): no ranking to agree with, tau is undefined")
        elif weights is not None:
            reps = _replicate_taus(ranking, table, boot, codes, clusters, weights, len(models))
            finite = reps[np.isfinite(reps)]
            if finite.size < MIN_VALID_REPLICATES * reps.size:
                note = (f"no interval: tau is undefined in {1 - finite.size / reps.size:.0%} "
                        "of the question resamples")
            else:
                low, high = np.quantile(finite, [(1 - confidence) / 2, (1 + confidence) / 2])
                if high - low < 1e-12:  # e.g. 3 models far apart: tau 1 in > 97.5% of them
                    share = float(np.mean(np.isclose(finite, low)))
                    note = (f"no interval: tau = {low:g} in {share:.1%} of "
                            f"the question resamples ({n_models} models), so the "
                            f"percentile interval has zero width; {ZERO_WIDTH}")
                    low = high = np.nan
        rows.append((judge, human_slug, ranking, n_models, tau, low, high, note))
    return pd.DataFrame(rows, columns=list(TAU_COLUMNS))


def _replicate_taus(ranking: str, table: pd.DataFrame, boot: np.ndarray, codes: np.ndarray,
                    clusters: np.ndarray, weights: np.ndarray, n_models: int) -> np.ndarray:
    """Tau in each question resample: the replicate's judge means or fits against its human
    means (both over the drawn questions)."""
    cell = clusters * n_models + codes
    size = (int(clusters.max()) + 1) * n_models
    human = table["human"].to_numpy(float)
    has = np.isfinite(human)

    def sums(values: np.ndarray, keep: np.ndarray) -> np.ndarray:
        flat = np.bincount(cell[keep], weights=values[keep], minlength=size)
        return (weights @ flat.reshape(-1, n_models))

    with np.errstate(invalid="ignore", divide="ignore"):
        human_means = sums(human, has) / sums(np.ones_like(human), has)
        if ranking == "judge mean":
            every = np.ones(len(table), bool)
            values = sums(table["judge"].to_numpy(float), every) / sums(np.ones(len(table)),
                                                                         every)
        else:
            values = boot[:, :-1]
    return _taus_of_rows(values, human_means)
