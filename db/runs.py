"""Runs: a run's name (:func:`run_label`), the filters every table and page applies to runs
(:class:`ScoreFilter`), a run found by its key or id, created, listed (the Runs page, the Home
page's list) and the values the sidebar's filters offer. A run's answers are
:mod:`db.responses`; the Runs page's rules (progress, a stopped process, previews) live in
``elitr_core.generation.status``."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Text, and_, case, cast, func, or_
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from db.keyed import upsert
from db.models import Evaluator, Response, Run, Score


@dataclass(frozen=True)
class ScoreFilter:
    """Filters shared by the exports, the CLI and the pages' sidebar (None = no filter)."""

    split: str | None = None
    setting: str | None = None
    mode: str | None = None
    evaluators: tuple[str, ...] | None = None
    models: tuple[str, ...] | None = None
    status: str = "ok"


def run_label(run: Any = Run) -> Any:
    """A run's name in the analyses: its model, with its ``--variant`` in parentheses when it
    has one and its language in brackets when it is not English, so a full-context and a
    retrieval run of one model (``M`` and ``M (bm25)``), or an English and a Czech run (``M``
    and ``M [cs]``), are two rows of every table instead of one mixed row. The one place this
    rule is written: every table, page and pairwise judge reads the name from here (``run``:
    ``Run`` or an alias), and :func:`label_of` is the same rule on a run's values."""
    named = case((col(run.variant) == "", col(run.model)),
                 else_=col(run.model) + " (" + col(run.variant) + ")")
    return case((col(run.language) == "en", named),
                else_=named + " [" + col(run.language) + "]")


def label_of(model: str, variant: str = "", language: str = "en") -> str:
    """:func:`run_label` on a run's values (``M``, ``M (bm25)``, ``M (bm25) [cs]``)."""
    named = f"{model} ({variant})" if variant else model
    return named if language == "en" else f"{named} [{language}]"


def filter_runs(stmt: Any, flt: ScoreFilter) -> Any:
    """Apply the run filters (split, setting, mode, models) of ``flt`` to a statement on Run;
    a model filter matches a run's model name or its label (:func:`run_label`)."""
    for column, value in (("split", flt.split), ("setting", flt.setting), ("mode", flt.mode)):
        if value:
            stmt = stmt.where(getattr(Run, column) == value)
    if flt.models:
        stmt = stmt.where(or_(col(Run.model).in_(flt.models), run_label().in_(flt.models)))
    return stmt


def filtered_runs(session: Session, flt: ScoreFilter | None = None) -> list[Run]:
    """Every run, imported ones too, that the run filters of ``flt`` keep
    (:func:`filter_runs`, as every table's), in id order."""
    stmt = filter_runs(select(Run), flt or ScoreFilter()).order_by(col(Run.id))
    return list(session.exec(stmt))


def runs_per_model(session: Session) -> list[dict[str, Any]]:
    """One row per run: model (its label, :func:`run_label`, so ``M`` and ``M (bm25)`` stay two
    rows), setting, mode, split, seed, responses."""
    stmt: Any = (
        sa_select(
            run_label().label("model"),
            col(Run.setting),
            col(Run.mode),
            col(Run.split),
            col(Run.seed),
            col(Run.backend),
            func.count(col(Response.id)).label("responses"),
        )
        .outerjoin(Response, col(Response.run_id) == col(Run.id))
        .group_by(col(Run.id))
        .order_by(col(Run.model), col(Run.variant), col(Run.setting), col(Run.mode),
                  col(Run.split))
    )
    return [dict(r._mapping) for r in session.execute(stmt)]


def filter_options(session: Session) -> dict[str, list[str]]:
    """The values the sidebar filters offer, each sorted: ``split``, ``setting``, ``mode``,
    ``models`` (of the runs) and ``evaluators`` (those with at least one score)."""

    def distinct(stmt: Any) -> list[str]:
        return sorted(str(v) for (v,) in session.execute(stmt.distinct()) if v is not None)

    return {
        "split": distinct(sa_select(col(Run.split))),
        "setting": distinct(sa_select(col(Run.setting))),
        "mode": distinct(sa_select(col(Run.mode))),
        "models": distinct(sa_select(run_label())),
        "evaluators": distinct(
            sa_select(col(Evaluator.slug)).join(Score, col(Score.evaluator_id) == col(Evaluator.id))
        ),
    }


def run_by_key(*, session: Session, key: dict[str, Any]) -> Run:
    """The run whose key columns (model, setting, ..., language) hold these values."""
    return session.exec(select(Run).where(*(getattr(Run, k) == v for k, v in key.items()))).one()


def stored_run(*, session: Session, key: dict[str, Any]) -> Run | None:
    """The run with this key, if one is stored."""
    return session.exec(select(Run).where(
        *(getattr(Run, k) == v for k, v in key.items()))).one_or_none()


def run_by_id(*, session: Session, run_id: int) -> Run | None:
    """The run with this id."""
    return session.get(Run, run_id)


def run_id(
    *,
    session: Session,
    model: str,
    setting: str,
    mode: str,
    split: str,
    seed: int,
    variant: str = "",
    language: str = "en",
) -> int | None:
    """The id of the run with this key, or None."""
    stmt = sa_select(col(Run.id)).where(
        and_(
            col(Run.model) == model,
            col(Run.setting) == setting,
            col(Run.mode) == mode,
            col(Run.split) == split,
            col(Run.seed) == seed,
            col(Run.variant) == variant,
            col(Run.language) == language,
        )
    )
    return session.execute(stmt).scalar_one_or_none()


def upsert_run(*, session: Session, key: dict[str, Any], values: dict[str, Any]) -> None:
    """Create the run with this key (model, setting, mode, split, seed, variant, language) and
    ``values``; a stored run is left as it is."""
    upsert(session=session, table=Run, keys=list(key), rows=[{**key, **values}])


def run_ids(session: Session) -> dict[tuple[str, str, str, str, int], int]:
    """Map (model, setting, mode, split, seed) -> id of the runs a scores CSV can name: the
    English runs, ``model`` as ``export scores`` writes it (:func:`run_label`: ``M`` for a run
    without a variant, ``M (16k)`` for an interleaved run at a 16k span, ``M (bm25)``), so the
    CLI's own export reads back. A run without a variant wins a label two runs share."""
    stmt = sa_select(run_label().label("label"), col(Run.setting), col(Run.mode),
                     col(Run.split), col(Run.seed), col(Run.id)).where(
        col(Run.language) == "en").order_by((col(Run.variant) == "").desc(), col(Run.id))
    found: dict[tuple[str, str, str, str, int], int] = {}
    for row in session.execute(stmt):
        found.setdefault(tuple(row[:5]), row[5])  # type: ignore[arg-type]
    return found


def run_list(*, session: Session, include_imported: bool = False) -> list[Run]:
    """Every run, newest first (imported ones only with ``include_imported``)."""
    stmt = select(Run).order_by(col(Run.id).desc())
    if not include_imported:
        stmt = stmt.where(Run.backend != "import")
    return list(session.exec(stmt))


def metas_by_run(*, session: Session, run_ids: Collection[int]) -> dict[int, list[Any]]:
    """Run id -> the generation metadata of each of its stored answers (in no set order; to
    read, not to change: equal stored metadata are one object). Each distinct stored text is
    read once with its count: the bundled runs' 6,775 answers all hold ``{}``, and the Runs
    page reads this on every refresh."""
    metas: dict[int, list[Any]] = defaultdict(list)
    if run_ids:
        stored = cast(col(Response.meta), Text)
        stmt = sa_select(col(Response.run_id), stored, func.count()).where(
            col(Response.run_id).in_(list(run_ids))).group_by(col(Response.run_id), stored)
        for run_id, text, count in session.execute(stmt):
            metas[run_id].extend([json.loads(text)] * count)
    return metas




def interleave_plans(*, session: Session, run_ids: Collection[int]) -> dict[int, Any]:
    """Run id -> the conversations an interleaved run asked (``interleave_plan`` of its config,
    ``generation/interleave.plan_run``; None for a run stored without one, e.g. imported)."""
    if not run_ids:
        return {}
    stmt = select(Run.id, Run.config).where(col(Run.id).in_(list(run_ids)))
    return {run_id: (config or {}).get("interleave_plan")
            for run_id, config in session.exec(stmt) if run_id is not None}
