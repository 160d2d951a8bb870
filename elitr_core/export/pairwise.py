"""The pairwise tables of the export contract (battles and CREAM comparisons).

``pairwise-judgments`` is the long table of parsed judgments (one row per question, pair,
order and sample; unparsed ones are left out, as ``scores`` leaves out unscored outputs); the
other tables are statistics over it (:mod:`elitr_core.stats.pairwise`,
:mod:`elitr_core.stats.pairwise_rank`). A run is named by its model, with its variant in
parentheses when it has one. Without ``criterion``, each evaluator is ranked on every criterion
its judgments define: ``verdict`` for battles, ``completeness`` and ``conciseness`` for CREAM.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from sqlmodel import Session

from db.pairwise import pairwise_rows
from db.runs import ScoreFilter
from elitr_core.data.scores import scores_table
from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats import pairwise, pairwise_rank
from elitr_core.vocab import (
    EXPORT_COLUMNS,
    PAIRWISE_TABLES,  # re-exported: the names live in vocab
)


def pairwise_frame(session: Session, flt: ScoreFilter) -> pd.DataFrame:
    """Parsed pairwise judgments under the filters (``EXPORT_COLUMNS["pairwise-judgments"]``).

    ``flt.evaluators`` selects pairwise judges; ``flt.models`` keeps pairs of two listed models.
    """
    columns = list(EXPORT_COLUMNS["pairwise-judgments"])
    rows = pairwise_rows(session, flt)
    if not rows:
        raise DegenerateDataError("no pairwise judgment matches the filters: run `judge --style "
                                  "battle` or `--style cream`, or widen the filters")
    df = pd.DataFrame(rows)
    df["question_id"] = df["question_id"].astype(str)
    df["seed"] = df["seed"].astype("Float64")
    floats = ["completeness_a", "completeness_b", "conciseness_a", "conciseness_b"]
    return df[columns].astype(dict.fromkeys(floats, "float64"))


def _per_criterion(df: pd.DataFrame, criterion: str | None,
                   stat: Callable[[pd.DataFrame, str], pd.DataFrame]) -> pd.DataFrame:
    """``stat`` for the chosen criterion, or for every criterion some evaluator defines."""
    if criterion is not None:
        return stat(df, criterion)
    criteria = pairwise.defined_criteria(df)
    if not criteria:
        raise DegenerateDataError("no pairwise judgment has a verdict or CREAM scores")
    parts = [stat(df, name) for name in criteria]
    return pd.concat(parts, ignore_index=True)


def pairwise_table(name: str, df: pd.DataFrame, *, criterion: str | None = None,
                   baseline: str | None = None, scores: pd.DataFrame | None = None,
                   reference: str = "gold-human", elo: str = "mle",
                   unparsed: dict[tuple[str, str, str], int] | None = None) -> pd.DataFrame:
    """One pairwise table from the judgments ``df`` (see :data:`PAIRWISE_TABLES`; ``elo`` for
    ``export elo --source pairwise``). ``elo``: which Elo rating (``mle``, ``median``,
    ``order``), the same in ``elo`` and ``pairwise-agreement``; ``unparsed``: the
    unreadable judgments per (evaluator, model_a, model_b), for ``pairwise``'s
    ``n_unparsed``."""
    if name == "pairwise-judgments":
        return df
    if name == "pairwise":
        return _per_criterion(df, criterion,
                              lambda d, c: pairwise.pairwise_table(d, c, unparsed=unparsed))
    if name == "elo":
        return _per_criterion(df, criterion,
                              lambda d, c: pairwise_rank.pairwise_elo(d, c, point=elo))
    if name == "bradley-terry":
        return _per_criterion(df, criterion,
                              lambda d, c: pairwise_rank.pairwise_bradley_terry(d, c))
    if name == "winrate":
        if not baseline:
            raise UserError("export winrate needs --baseline MODEL (the model every other "
                            "model battled)")
        return _per_criterion(df, criterion, lambda d, c: pairwise.win_rate(d, baseline, c))
    if name == "pairwise-agreement":
        if scores is None:
            raise ValueError("pairwise-agreement needs the human scores")
        return _per_criterion(df, criterion, lambda d, c: pairwise_rank.ranking_agreement(
            d, scores, reference, c, point=elo))
    raise UserError(f"unknown pairwise table {name!r}: choose one of {', '.join(PAIRWISE_TABLES)}")


def build_pairwise_table(name: str, session: Session, flt: ScoreFilter, *,
                         criterion: str | None = None, baseline: str | None = None,
                         reference: str = "gold-human", elo: str = "mle") -> pd.DataFrame:
    """Build a pairwise table from the database (what ``export`` prints)."""
    df = pairwise_frame(session, flt)
    scores, unparsed = None, None
    if name == "pairwise":
        unparsed = unparsed_counts(session, flt)
    if name == "pairwise-agreement":
        human = ScoreFilter(split=flt.split, setting=flt.setting, mode=flt.mode,
                            evaluators=(reference,))
        scores = scores_table(session, human)
    return pairwise_table(name, df, criterion=criterion, baseline=baseline, scores=scores,
                          reference=reference, elo=elo, unparsed=unparsed)


def unparsed_counts(session: Session, flt: ScoreFilter) -> dict[tuple[str, str, str], int]:
    """(evaluator, model_a, model_b) -> judgments stored unparsed (no verdict or alignment
    could be read) under the filters."""
    rows = pairwise_rows(session, flt, status="unparsed")
    counted: dict[tuple[str, str, str], int] = {}
    for r in rows:
        key = (r["evaluator"], r["model_a"], r["model_b"])
        counted[key] = counted.get(key, 0) + 1
    return counted


def win_matrix(table: pd.DataFrame, evaluator: str, criterion: str) -> pd.DataFrame:
    """Row model's win share ``(wins + ties / 2) / n`` against each column model (CREAM
    Table 3), from a ``pairwise`` table; NaN on the diagonal and for pairs never judged."""
    part = table[(table["evaluator"] == evaluator) & (table["criterion"] == criterion)]
    models = sorted(set(part["model_a"]) | set(part["model_b"]))
    matrix = pd.DataFrame(np.nan, index=models, columns=models)
    for row in part.itertuples():
        share = (row.wins + row.ties / 2) / row.n
        matrix.loc[row.model_a, row.model_b] = share
        matrix.loc[row.model_b, row.model_a] = 1 - share
    matrix.index.name = "model"
    return matrix


def position_summary(table: pd.DataFrame, evaluator: str, criterion: str) -> tuple[str, bool]:
    """One sentence on the judge's position consistency and unreadable outputs, from a
    ``pairwise`` table: what a reader of its ratings should know first; and whether it is a
    warning (consistency below 0.5)."""
    part = table[(table["evaluator"] == evaluator) & (table["criterion"] == criterion)]
    both = int(part["n_both_orders"].sum())
    unparsed = int(part["n_unparsed"].sum())
    dropped = (f"; {unparsed} judgment(s) could not be read and are left out"
               if unparsed else "")
    if not both:
        return f"No judgment of {evaluator} was asked in both orders{dropped}.", False
    agree = float((part["position_consistency"].fillna(0) * part["n_both_orders"]).sum()) / both
    warning = (" (below 0.5: the order the answers were shown in decides more verdicts than "
               "the answers do; read the ratings with care)" if agree < 0.5 else "")
    return (f"Position consistency of {evaluator}: {agree:.2f} of {both} judgments asked in "
            f"both orders kept their outcome when the order was swapped{warning}{dropped}.",
            bool(warning))


def judgment_choices(session: Session, flt: ScoreFilter, evaluator: str) -> pd.DataFrame:
    """One judge's parsed judgments with their ids, to pick one in the key-fact view."""
    rows = [r for r in pairwise_rows(session, flt) if r["evaluator"] == evaluator]
    frame = pd.DataFrame(rows)
    if frame.empty:
        raise DegenerateDataError(f"{evaluator} has no parsed judgment under these filters")
    frame["label"] = [f"{r.meeting} Q{r.question_id} · {r.model_a} vs {r.model_b} · shown "
                      f"{'A first' if r.order == 'ab' else 'B first'} · sample {r.sample}"
                      for r in frame.itertuples()]
    return frame[["id", "label", "model_a", "model_b", "order", "sample"]]


def key_fact_view(session: Session, judgment_id: int) -> dict[str, object]:
    """CREAM's interpretable view of one judgment: each key fact and the sentences of each
    answer that state it, and both answers with their sentences numbered.

    Returns ``{"facts": DataFrame(key_fact, a, b), "sentences_a": [...], "sentences_b": [...],
    "completeness_a" ...}``; ``a``/``b`` list the stating sentence numbers ("" for none).
    """
    from db.pairwise import pairwise_detail
    from elitr_core.prompts.pairwise import split_sentences

    detail = pairwise_detail(session, judgment_id)
    if detail is None or not detail.get("key_facts"):
        raise UserError(f"judgment {judgment_id} has no key facts: pick a CREAM judgment")
    support = detail.get("support") or {"a": [], "b": []}
    facts = pd.DataFrame({
        "key_fact": detail["key_facts"],
        "a": [", ".join(map(str, s)) for s in support["a"]] or "",
        "b": [", ".join(map(str, s)) for s in support["b"]] or "",
    })
    return {"facts": facts, "sentences_a": split_sentences(detail["text_a"] or ""),
            "sentences_b": split_sentences(detail["text_b"] or ""),
            **{k: detail[k] for k in ("completeness_a", "completeness_b", "conciseness_a",
                                      "conciseness_b", "status", "reason")}}
