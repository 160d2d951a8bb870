"""The tables of the export contract, built from the database through the statistics."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import pandas as pd
from sqlmodel import Session

from db.benchmark import differentiating_keys
from db.runs import ScoreFilter
from elitr_core.data.scores import scores_table, unscored_table
from elitr_core.errors import UserError
from elitr_core.export.judge_audit import (
    AUDIT_TABLES,
    NEEDS_LENGTHS,
    NEEDS_SPANS,
    AuditOptions,
    audit_table,
)
from elitr_core.export.unusable import (
    LEFT_OUT_COLUMNS,
    UNUSABLE_KEYS,
    note_left_out,
    note_unusable,
)
from elitr_core.stats.frame import by_named_annotator
from elitr_core.vocab import (
    EXPORT_COLUMNS,
    TABLE_NAMES,  # re-exported: the names live in vocab
)


@dataclass(frozen=True)
class TableOptions:
    """Options of the statistics tables (hashable, so pages can cache on them).

    ``groups``: model families of the ``breakdown`` table, e.g.
    ``(("GPT", ("GPT-4", "GPT-3.5")),)``. ``differentiating``: (meeting, question number) keys
    of the QA/Conv differentiating questions (read from the database by :func:`build_table`).
    """

    reference: str = "gold-human"
    groups: tuple[tuple[str, tuple[str, ...]], ...] = ()
    differentiating: tuple[tuple[str, int], ...] = ()
    elo: str = "mle"  # which Elo rating: mle, median (over random orders) or order
    rank_by: str | None = None  # the main table's ranking column (default: QA-st mean)
    evaluator: str | None = None  # the main table's evaluator (default: views.DEFAULT_JUDGE)
    aggregate: str = "gaussian"  # the silver aggregate's method (stats/silver_aggregate)


TableBuilder = Callable[[pd.DataFrame, TableOptions], pd.DataFrame]


def _icc(df: pd.DataFrame, options: TableOptions) -> pd.DataFrame:
    """ICC across the evaluators as raters (``raters`` = ``evaluators``), then the annotator
    ICCs of every human pool with individual scores (``<pool> annotators``: ICC(2,k) per
    meeting, ICC(1,k) overall). A block that cannot give an ICC (one evaluator, annotators
    who never overlap yet) has rows with only its note and the others keep theirs; when no
    block gives one, the first block's reason is raised."""
    from elitr_core.errors import DegenerateDataError
    from elitr_core.stats import icc

    individual = by_named_annotator(df)
    pools = sorted(individual["evaluator"].unique())
    blocks: list[tuple[str, tuple[str, ...], Callable[[], pd.DataFrame]]] = []
    if df["evaluator"].nunique() >= 2 or not pools:
        blocks.append(("evaluators", icc.ICC_TYPES, partial(icc.evaluator_icc, df)))
    for pool in pools:
        blocks.append((f"{pool} annotators", ("ICC(2,k)",), partial(
            icc.annotator_icc_per_meeting, df, evaluator=pool, raise_if_none=False)))
        blocks.append((f"{pool} annotators", ("ICC(1,k)",),
                       partial(icc.annotator_icc_overall, df, evaluator=pool)))
    tables, errors = [], []
    for raters, forms, build in blocks:
        try:
            table = build()
        except DegenerateDataError as error:
            errors.append(error)
            table = _icc_note_rows(forms, str(error))
        tables.append(table.assign(raters=raters))
    if len(errors) == len(blocks):
        raise errors[0]
    return pd.concat(tables, ignore_index=True)[list(EXPORT_COLUMNS["icc"])]


def _icc_note_rows(forms: tuple[str, ...], note: str) -> pd.DataFrame:
    """Rows of an ICC block (group ``all``) that cannot be computed: only the note."""
    from elitr_core.stats.icc import ICC_COLUMNS

    nan = float("nan")
    return pd.DataFrame([("all", form, nan, nan, nan, 0, 0, nan, note) for form in forms],
                        columns=list(ICC_COLUMNS))


def _builders() -> dict[str, TableBuilder]:
    # imported here so that `python -m elitr_core --help` stays fast
    from elitr_core.export import views
    from elitr_core.stats import agreement, breakdown, calibration, elo, leaderboard, paired

    return {
        "leaderboard": lambda df, o: leaderboard.leaderboard(df),
        "main-table": lambda df, o: views.main_table(leaderboard.leaderboard(df), o.evaluator,
                                                     o.rank_by),
        "breakdown": lambda df, o: breakdown.breakdown(
            df, {name: list(models) for name, models in o.groups} or None),
        "lost-in-middle": lambda df, o: breakdown.lost_in_middle(df),
        "differentiating": lambda df, o: breakdown.differentiating_questions(
            df, [(m, str(q)) for m, q in o.differentiating]),
        "evaluator-means": lambda df, o: calibration.evaluator_means(df),
        "evaluator-correlation": lambda df, o: agreement.evaluator_correlation(df),
        "calibration": lambda df, o: calibration.calibration(df, reference=o.reference),
        "icc": _icc,
        "elo": lambda df, o: elo.elo(df, point=o.elo),
        "model-difference": lambda df, o: paired.model_difference(df),
        "silver-aggregate": lambda df, o: _per_pool(df, o, 0),
        "annotator-reliability": lambda df, o: _per_pool(df, o, 1),
        "silver-aggregate-agreement": lambda df, o: _per_pool(df, o, 2),
    }


def _per_pool(df: pd.DataFrame, o: TableOptions, which: int) -> pd.DataFrame:
    """A silver aggregate table (0: aggregate, 1: reliability, 2: agreement with
    ``o.reference``) of method ``o.aggregate`` for every human pool with named annotators under
    the filters (``--evaluator`` picks one); a pool that cannot be fitted is left out unless
    none can."""
    from elitr_core.errors import DegenerateDataError
    from elitr_core.stats import silver_aggregate as silver

    silver.check_method(o.aggregate)
    named = by_named_annotator(df)
    pools = [p for p in pd.unique(named["evaluator"]) if p != o.reference or which < 2]
    if not pools:
        raise UserError("no evaluator with named annotators here: the silver aggregate needs a "
                        "study's individual scores (--evaluator silver-human:STUDY)")
    tables, errors = [], []
    for pool in pools:
        try:
            tables.append(silver.agreement_with_gold(df, pool, o.reference, o.aggregate)
                          if which == 2 else silver.silver_aggregate(df, pool, o.aggregate)[which])
        except DegenerateDataError as error:
            errors.append(error)
    if not tables:
        raise errors[0]
    return pd.concat(tables, ignore_index=True)



def build_table(
    name: str, session: Session, flt: ScoreFilter, *, reference: str = "gold-human",
    groups: tuple[tuple[str, tuple[str, ...]], ...] = (), scores: pd.DataFrame | None = None,
    audit: AuditOptions | None = None, elo: str = "mle", rank_by: str | None = None,
    aggregate: str = "gaussian",
) -> pd.DataFrame:
    """Build one table of the export contract for the filters.

    ``scores``: the ``scores`` table for ``flt`` when the caller already holds it (the pages
    cache it); read from ``session`` otherwise. ``audit``: options of the judge-audit tables
    (``AUDIT_TABLES``; their ``groups`` default to ``groups``). ``aggregate``: the silver
    aggregate's method (``gaussian`` or, for dense studies, ``dawid-skene``).
    """
    if name == "unscored":
        return unscored_table(session, flt)
    if name == "runs":
        from elitr_core.export.runs import runs_table

        return runs_table(session, flt)
    if name == "fillers":
        from elitr_core.export.runs import fillers_table

        return fillers_table(session, flt)
    if name in ("study-monitor", "study-monitor-sequences"):
        from elitr_core.annotation.stopping import monitor_table
        from elitr_core.export.judge_audit import study_of

        audit = audit or AuditOptions()
        return monitor_table(session, study_of(audit.human, name), name,
                             half_width=audit.half_width, confidence=audit.confidence,
                             seed=audit.seed)
    if scores is None:
        scores = scores_table(session, flt)
    if name == "scores":
        return scores
    if name in AUDIT_TABLES:
        return _audit(name, session, flt, scores, audit or AuditOptions(), groups)
    builders = _builders()
    if name not in builders:
        raise UserError(f"unknown table {name!r}: choose one of {', '.join(TABLE_NAMES)}")
    keys = differentiating_keys(session) if name == "differentiating" else ()
    # the main table lays out one evaluator: the first --evaluator, else the default judge
    evaluator = flt.evaluators[0] if name == "main-table" and flt.evaluators else None
    options = TableOptions(reference=reference, groups=groups, differentiating=keys, elo=elo,
                           rank_by=rank_by, evaluator=evaluator, aggregate=aggregate)
    if name in UNUSABLE_KEYS:
        return _with_unusable(name, session, flt, scores, options)
    table = stat_table(name, scores, options=options)
    if name in LEFT_OUT_COLUMNS:
        return note_left_out(name, table, scores, unscored_table(session, flt))
    return table


def _with_unusable(name: str, session: Session, flt: ScoreFilter, scores: pd.DataFrame,
                   options: TableOptions) -> pd.DataFrame:
    """The table with a noted row for each model none of whose scores of an evaluator is
    usable (``export.unusable``); when no score at all is usable, those rows alone."""
    from elitr_core.errors import DegenerateDataError

    unscored = unscored_table(session, flt)
    try:
        table = stat_table(name, scores, options=options)
    except DegenerateDataError:
        if unscored.empty:
            raise
        table = pd.DataFrame(columns=list(EXPORT_COLUMNS[name]))
    return note_unusable(name, table, unscored)


def _audit(name: str, session: Session, flt: ScoreFilter, scores: pd.DataFrame,
           audit: AuditOptions, groups: tuple[tuple[str, tuple[str, ...]], ...]) -> pd.DataFrame:
    from dataclasses import replace

    from elitr_core.data.browse import response_rows
    from elitr_core.export.judge_audit import response_lengths

    if groups and not audit.groups:
        audit = replace(audit, groups=groups)
    lengths = probabilities = spans = None
    if name in NEEDS_SPANS:
        from elitr_core.data.scores import span_table

        spans = span_table(session, flt)
    if name in NEEDS_LENGTHS:
        lengths = response_lengths(pd.DataFrame(response_rows(session, flt)))
    if name == "ppi-active":
        from elitr_core.annotation.selection import study_probabilities
        from elitr_core.export.judge_audit import study_of

        probabilities = study_probabilities(session, study_of(audit.human))
    return audit_table(name, scores, audit, lengths, probabilities, spans)


def stat_table(
    name: str, scores: pd.DataFrame, *, reference: str = "gold-human",
    options: TableOptions | None = None,
) -> pd.DataFrame:
    """Build a statistics table of the export contract from a long-format scores frame."""
    from elitr_core.stats.frame import check_not_empty

    check_not_empty(scores)
    return _builders()[name](scores, options or TableOptions(reference=reference))
