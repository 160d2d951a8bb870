"""Pairwise battles: outcomes per criterion, per-pair tables and the win rate against a baseline.

Input is the long table of parsed pairwise judgments (:data:`JUDGMENT_COLUMNS`), one row per
(question, pair of models, order, sample):

- ``model_a``, ``model_b``: the pair as scheduled; every value below is from ``model_a``'s
  side, whichever answer the judge saw first.
- ``order``: ``"ab"`` when ``model_a``'s answer was shown first, ``"ba"`` otherwise.
- ``verdict``: ``"a"``, ``"b"`` or ``"tie"`` (L-Eval battles; empty for CREAM).
- ``completeness_a`` ... ``conciseness_b``: CREAM's scores of each model (empty for battles).

A *criterion* turns a judgment into an outcome ``s`` for ``model_a`` (1 win, 0.5 tie, 0 loss):
``verdict`` reads the verdict; ``completeness`` and ``conciseness`` compare the two models'
scores (CREAM ranks each criterion separately). Judgments where the criterion is empty are left
out, so one table may hold both styles.

Intervals come from a percentile cluster bootstrap over questions (``QUESTION_KEY``): both
orders and every sample of a question move together, as in :mod:`elitr_core.stats.agreement`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats.agreement import cluster_weights, pair_rng, percentile_ci
from elitr_core.stats.frame import QUESTION_KEY, ZERO_WIDTH, check_columns, group_codes
from elitr_core.stats.rating_groups import ZERO, first_shown_won, zero_width_cause
from elitr_core.vocab import EXPORT_COLUMNS

JUDGMENT_COLUMNS: tuple[str, ...] = EXPORT_COLUMNS["pairwise-judgments"]
CRITERIA: tuple[str, ...] = ("verdict", "completeness", "conciseness")
PAIRWISE_COLUMNS: tuple[str, ...] = EXPORT_COLUMNS["pairwise"]
WINRATE_COLUMNS: tuple[str, ...] = EXPORT_COLUMNS["winrate"]
_VERDICT_S = {"a": 1.0, "b": 0.0, "tie": 0.5}
#: one judgment of a pair: everything but the order and the outcome
_JUDGMENT_KEY = [*QUESTION_KEY, "setting", "mode", "seed", "evaluator", "model_a", "model_b",
                 "sample"]


def _check_options(criterion: str, n_bootstrap: int, confidence: float) -> None:
    if criterion not in CRITERIA:
        raise UserError(f"unknown criterion {criterion!r}; use one of {', '.join(CRITERIA)}")
    if n_bootstrap < 0 or not 0 < confidence < 1:
        raise UserError("n_bootstrap must be >= 0 and confidence strictly between 0 and 1")


def defined_criteria(df: pd.DataFrame) -> list[str]:
    """The criteria at least one judgment of ``df`` defines, in :data:`CRITERIA` order."""
    found = ["verdict"] if df["verdict"].notna().any() else []
    return found + [c for c in CRITERIA[1:]
                    if (df[f"{c}_a"].notna() & df[f"{c}_b"].notna()).any()]


def outcomes(df: pd.DataFrame, criterion: str = "verdict") -> pd.DataFrame:
    """The judgments where ``criterion`` is defined, with the outcome ``s`` for ``model_a``.

    Parameters
    ----------
    df : pandas.DataFrame
        Pairwise judgments (:data:`JUDGMENT_COLUMNS`).
    criterion : {"verdict", "completeness", "conciseness"}
        What decides a judgment: the battle verdict, or which model's CREAM score is higher
        (equal scores tie).

    Returns
    -------
    pandas.DataFrame
        The kept rows in their order, plus ``s`` (1, 0.5 or 0), ``first_won`` (1 where the
        answer shown first won, 0 the second, NaN a tie) and, for CREAM criteria,
        ``score_a``/``score_b`` (the compared scores).

    Raises
    ------
    UserError
        Missing columns, an unknown criterion or verdict.
    DegenerateDataError
        No judgment defines the criterion.
    """
    check_columns(df, JUDGMENT_COLUMNS, what="pairwise judgments")
    _check_options(criterion, 0, 0.5)
    if criterion == "verdict":
        kept = df[df["verdict"].notna()].copy()
        unknown = set(kept["verdict"]) - set(_VERDICT_S)
        if unknown:
            raise UserError(f"unknown verdict(s) {sorted(unknown)}; expected a, b or tie")
        kept["s"] = kept["verdict"].map(_VERDICT_S).astype(float)
    else:
        a, b = f"{criterion}_a", f"{criterion}_b"
        kept = df[df[a].notna() & df[b].notna()].copy()
        kept["score_a"], kept["score_b"] = kept[a].astype(float), kept[b].astype(float)
        kept["s"] = np.sign(kept["score_a"] - kept["score_b"]) / 2 + 0.5
    if kept.empty:
        raise DegenerateDataError(f"no pairwise judgment has a {criterion} outcome: judge with "
                                  f"--style {'battle' if criterion == 'verdict' else 'cream'}")
    kept["first_won"] = first_shown_won(kept["s"].to_numpy(float), kept["order"].to_numpy())
    return kept.reset_index(drop=True)


def cluster_mean_ci(values: np.ndarray, clusters: np.ndarray, n_bootstrap: int,
                    confidence: float, rng: np.random.Generator, what: str,
                    first_won: np.ndarray | None = None) -> tuple[float, float, float, str]:
    """Mean of ``values``, its percentile cluster-bootstrap interval and a note.

    A replicate's mean is ``sum_g w_g S_g / sum_g w_g N_g`` with per-cluster sums ``S_g`` and
    counts ``N_g``, the mean of the explicitly resampled rows. ``clusters`` are codes 0..G-1.
    Where every resample would give the same mean (one question, one value everywhere, or
    a judge that always prefers one position, so that each question's two orders cancel:
    a zero-width interval), the bounds are NaN and the note says why (``first_won``: 1 where
    the answer shown first won, :func:`elitr_core.stats.rating_groups.first_shown_won`).
    """
    mean = float(values.mean())
    n_clusters = int(clusters.max()) + 1
    if np.ptp(values) == 0:
        return mean, np.nan, np.nan, (f"{what}: every one of the {values.size} outcomes is "
                                      f"{values[0]:g}, {ZERO_WIDTH}")
    if n_clusters < 2:
        return mean, np.nan, np.nan, f"{what}: battles on 1 question only, no interval"
    if n_bootstrap == 0:
        return mean, np.nan, np.nan, ""
    sums = np.bincount(clusters, weights=values, minlength=n_clusters)
    counts = np.bincount(clusters, minlength=n_clusters).astype(float)
    weights = cluster_weights(n_clusters, n_bootstrap, rng)
    replicates = (weights @ sums) / (weights @ counts)
    if np.ptp(replicates) < ZERO:
        return mean, np.nan, np.nan, (f"{what}: no interval: "
                                      f"{zero_width_cause(values, clusters, first_won)}; "
                                      f"{ZERO_WIDTH}")
    low, high = percentile_ci(replicates, confidence, what)
    return mean, low, high, ""


def position_consistency(kept: pd.DataFrame) -> tuple[int, float]:
    """Judgments asked in both orders, and the share whose outcome did not change with order.

    References
    ----------
    Zheng, L. et al. (2023). Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena (position
    bias: "consistency" is the share of pairs with the same verdict in both orders).
    """
    key = group_codes(kept, _JUDGMENT_KEY)
    both = pd.DataFrame({"key": key, "order": kept["order"].to_numpy(), "s": kept["s"]})
    wide = both.pivot_table(index="key", columns="order", values="s", aggfunc="first")
    if not {"ab", "ba"} <= set(wide.columns):
        return 0, np.nan
    paired = wide.dropna(subset=["ab", "ba"])
    if paired.empty:
        return 0, np.nan
    return len(paired), float((paired["ab"] == paired["ba"]).mean())


def _pair_row(name: tuple[str, str, str], rows: pd.DataFrame, criterion: str, n_bootstrap: int,
              confidence: float, seed: int) -> dict[str, object]:
    evaluator, model_a, model_b = name
    s = rows["s"].to_numpy()
    out: dict[str, object] = {
        "n": len(s), "wins": int((s == 1).sum()), "ties": int((s == 0.5).sum()),
        "losses": int((s == 0).sum()),
    }
    clusters = group_codes(rows, QUESTION_KEY)
    notes = []
    for side in ("a", "b"):
        if criterion == "verdict":
            values: tuple[float, ...] = (np.nan, np.nan, np.nan)
        else:
            rng = pair_rng(seed, evaluator, criterion, model_a, model_b, side)
            mean, low, high, note = cluster_mean_ci(
                rows[f"score_{side}"].to_numpy(float), clusters, n_bootstrap, confidence, rng,
                f"{criterion} of {model_a if side == 'a' else model_b}")
            values = (mean, low, high)
            notes += [note] if note else []
        out.update(zip([f"mean_{side}", f"mean_{side}_ci_low", f"mean_{side}_ci_high"], values,
                       strict=True))
    out["n_both_orders"], out["position_consistency"] = position_consistency(rows)
    out["note"] = "; ".join(notes)
    return out


def pairwise_table(df: pd.DataFrame, criterion: str = "verdict", *, n_bootstrap: int = 1000,
                   confidence: float = 0.95, seed: int = 0,
                   unparsed: Mapping[tuple[str, str, str], int] | None = None) -> pd.DataFrame:
    """Per evaluator and pair of models: wins, ties, losses, mean scores, position consistency.

    Parameters
    ----------
    df : pandas.DataFrame
        Pairwise judgments (:data:`JUDGMENT_COLUMNS`).
    criterion : {"verdict", "completeness", "conciseness"}
        Which outcome counts as a win (see :func:`outcomes`).
    n_bootstrap, confidence, seed
        Cluster bootstrap over questions for the intervals of ``mean_a``/``mean_b`` (the
        model's mean CREAM score against this opponent; empty for ``verdict``); 0 skips them.
    unparsed : mapping, optional
        (evaluator, model_a, model_b) -> judgments of that pair the judge's output could not
        be read from (left out of ``n``), for the ``n_unparsed`` column (0 when absent).

    Returns
    -------
    pandas.DataFrame
        :data:`PAIRWISE_COLUMNS`, one row per (evaluator, model_a, model_b) in order of first
        appearance. ``wins`` are ``model_a``'s; ``n`` counts the parsed judgments,
        ``n_unparsed`` those left out. ``n_both_orders`` counts judgments asked in
        both orders; ``position_consistency`` is the share of them with the same outcome;
        ``note`` says why a mean's interval is empty (one question, or one score everywhere).

    References
    ----------
    Gong, Z. et al. (2024). CREAM: Comparison-Based Reference-Free ELO-Ranked Automatic
    Evaluation for Meeting Summarization. arXiv:2409.10883 (completeness, conciseness).
    """
    _check_options(criterion, n_bootstrap, confidence)
    kept = outcomes(df, criterion)
    groups = kept.groupby(["evaluator", "model_a", "model_b"], sort=False)
    dropped = unparsed or {}
    rows = [{"evaluator": name[0], "criterion": criterion, "model_a": name[1],
             "model_b": name[2], "n_unparsed": int(dropped.get(name, 0)),
             **_pair_row(name, part, criterion, n_bootstrap, confidence, seed)}
            for name, part in groups]
    out = pd.DataFrame(rows, columns=list(PAIRWISE_COLUMNS))
    floats = [c for c in PAIRWISE_COLUMNS if c.startswith("mean") or c == "position_consistency"]
    return out.astype(dict.fromkeys(floats, "Float64"))


def against_baseline(kept: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Outcomes of every battle with ``baseline``, turned to the other model's side (``model``)."""
    with_a = kept[kept["model_a"] == baseline]
    with_b = kept[kept["model_b"] == baseline]
    flipped = with_a.assign(model=with_a["model_b"], s=1.0 - with_a["s"])
    return pd.concat([with_b.assign(model=with_b["model_a"]), flipped]).sort_index()


def win_rate(df: pd.DataFrame, baseline: str, criterion: str = "verdict", *,
             n_bootstrap: int = 1000, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """L-Eval's table: each model's win rate in battles against one baseline model.

    ``win_rate = (wins + ties / 2) / n`` over the judgments (both orders, every sample) of the
    model against ``baseline``; its interval is the percentile cluster bootstrap over questions.

    Parameters
    ----------
    df : pandas.DataFrame
        Pairwise judgments (:data:`JUDGMENT_COLUMNS`).
    baseline : str
        The model every other model is compared with (L-Eval used turbo-16k-0613).
    criterion, n_bootstrap, confidence, seed
        As in :func:`pairwise_table`.

    Returns
    -------
    pandas.DataFrame
        :data:`WINRATE_COLUMNS`, one row per (evaluator, model), best win rate first; a
        model that won (or lost, or tied) every battle, or met the baseline on one question
        only, has no interval and a ``note`` saying so.

    Raises
    ------
    UserError
        ``baseline`` has no judged battle.

    References
    ----------
    An, C. et al. (2024). L-Eval: Instituting Standardized Evaluation for Long Context Language
    Models. ACL 2024.
    """
    _check_options(criterion, n_bootstrap, confidence)
    kept = against_baseline(outcomes(df, criterion), baseline)
    if kept.empty:
        models = sorted(set(df["model_a"]) | set(df["model_b"]))
        raise UserError(f"baseline {baseline!r} has no judged {criterion} battle; choose one of "
                        f"{models} or judge with --baseline {baseline}")
    rows = []
    for (evaluator, model), part in kept.groupby(["evaluator", "model"], sort=False):
        s = part["s"].to_numpy()
        rng = pair_rng(seed, str(evaluator), criterion, str(model), baseline)
        rate, low, high, note = cluster_mean_ci(s, group_codes(part, QUESTION_KEY),
                                                n_bootstrap, confidence, rng,
                                                f"win rate of {model}",
                                                part["first_won"].to_numpy(float))
        rows.append((evaluator, criterion, model, baseline, len(s), int((s == 1).sum()),
                     int((s == 0.5).sum()), int((s == 0).sum()), rate, low, high, note))
    out = pd.DataFrame(rows, columns=list(WINRATE_COLUMNS))
    out = out.astype({"ci_low": "Float64", "ci_high": "Float64"})
    return out.sort_values(["evaluator", "win_rate"], ascending=[True, False],
                           kind="stable").reset_index(drop=True)
