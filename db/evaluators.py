"""Evaluators (who scores: an LLM judge, a human pool, a metric, with its scale) and the
annotators of a human pool: created, looked up, listed. Keyword-only, ``session`` first.
Their scores are :mod:`db.scores`; the studies that gather annotators are :mod:`db.studies`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import bindparam, func, tuple_
from sqlalchemy import select as sa_select
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, col, select

from db.keyed import upsert
from db.models import Annotator, Evaluator, Score, utcnow
from elitr_core.errors import UserError

#: Every way scores come in, as an evaluator's ``source``: only its own source writes an
#: evaluator's scores (:func:`evaluator_for`). The words name it in a refusal.
SOURCES: dict[str, str] = {
    "release": "the ELITR-Bench release's",
    "csv": "a scores CSV's",
    "judge": "a judge pass's",
    "metric": "an n-gram metric's",
    "study": "a human study's",
    "pool": "no (a pool of annotators holds none)",
    "inspect": "an inspect_ai log's",
    "lm-eval": "an lm-evaluation-harness log's",
    "label-studio": "a Label Studio export's",
}
class OtherSource(UserError):
    """The evaluator is another source's (its id in ``evaluator_id``): nothing may be added
    under it (a file that repeats its stored scores exactly changes nothing, see
    ``data/scores_csv``)."""

    def __init__(self, message: str, evaluator_id: int) -> None:
        super().__init__(message)
        self.evaluator_id = evaluator_id


class OtherSetup(UserError):
    """An evaluator's stored identity (a grader and its settings) differs from the writer's."""


#: Slug namespaces: an evaluator named ``inspect:...`` is made by an inspect_ai log only.
NAMESPACES: dict[str, str] = {"inspect": "inspect", "lm-eval": "lm-eval",
                              "label-studio": "label-studio"}


def evaluator_for(*, session: Session, slug: str, kind: str, source: str,
                  description: str = "", identity: dict[str, Any] | None = None) -> int:
    """The id of the evaluator ``slug`` that ``source`` may write scores into, created (of
    ``kind``, with ``identity`` in its config) when missing. Every writer of scores gets its
    evaluator here: the one place that decides whether a source may write to an evaluator.

    An evaluator is written by the source that made it, with its kind and its identity (a
    harness grader's model and settings); a human source may take over a pool of annotators
    that holds no score yet (made by a study before the release was imported). A slug in a
    namespace
    (``inspect:``, ``lm-eval:``, ``label-studio:``) is only ever made by that namespace's
    source.

    Raises
    ------
    UserError
        One line naming the evaluator, whose scores it holds and what to do.
    """
    if source not in SOURCES:
        raise ValueError(f"unknown evaluator source {source!r}")
    namespace = NAMESPACES.get(slug.split(":", 1)[0]) if ":" in slug else None
    if namespace is not None and namespace != source:
        raise UserError(f"evaluator {slug!r} is in the {namespace}: namespace, which only "
                        f"{SOURCES[namespace]} scores use: {SOURCES[source]} scores need "
                        "another name")
    config = {"identity": identity} if identity is not None else {}
    evaluator_id = upsert_evaluator(session=session, slug=slug, kind=kind,
                                    description=description, source=source, config=config)
    stored = session.get(Evaluator, evaluator_id)
    assert stored is not None
    session.refresh(stored)
    if stored.source != source or stored.kind != kind:
        # a pool (or a test fixture's evaluator, made without a source) holding no score
        free = stored.source in ("", "pool") and session.execute(sa_select(col(Score.id)).where(
            col(Score.evaluator_id) == evaluator_id).limit(1)).first() is None
        if not free or stored.kind != kind:
            raise OtherSource(
                f"evaluator {slug!r} holds {SOURCES.get(stored.source, 'other')} {stored.kind} "
                f"scores: {SOURCES[source]} {kind} scores never go under it; give them "
                "another evaluator name", evaluator_id)
        stored.source = source
        session.add(stored)
        session.flush()
    if identity is not None:
        known = stored.config.get("identity")
        if known is None:
            stored.config = {**stored.config, "identity": identity}
            session.add(stored)
            session.flush()
        elif known != identity:
            fields = sorted(k for k in set(known) | set(identity)
                            if known.get(k) != identity.get(k))
            raise OtherSetup(f"evaluator {slug!r} was made by another setup ({', '.join(fields)}"
                             f" differ: {_shown(known, fields)} stored, "
                             f"{_shown(identity, fields)} now): its scores would mix two "
                             "graders; import this one as a variant (--variant NAME), whose "
                             "judge is then named apart")
    return evaluator_id


def _shown(identity: dict[str, Any], fields: list[str]) -> str:
    text = ", ".join(f"{k}={identity.get(k)!r}" for k in fields)
    return text if len(text) <= 120 else text[:110] + "..."


def annotator_pool(*, session: Session, slug: str) -> int:
    """The id of the human pool ``slug`` (``gold-human``, ``silver-human``) whose annotators a
    study draws; made by a study when missing. A pool holds annotators, not scores (a study's
    scores go under its own ``<pool>:<study>`` evaluator), so any human evaluator of that name
    is the pool. One read when it exists (every Prolific arrival asks), the upsert only when
    it does not."""
    row = session.connection().execute(_POOL, {"b_slug": slug}).one_or_none()
    if row is None:
        evaluator_id = upsert_evaluator(session=session, slug=slug, kind="human",
                                        source="pool")
        kind = session.execute(sa_select(col(Evaluator.kind)).where(
            col(Evaluator.id) == evaluator_id)).scalar_one()
    else:
        evaluator_id, kind = int(row.id), str(row.kind)
    if kind != "human":
        raise UserError(f"evaluator {slug!r} is an {kind} evaluator, not a pool of human "
                        "annotators: rename it before running a study")
    return evaluator_id


def upsert_evaluator(
    *,
    session: Session,
    slug: str,
    kind: str,
    description: str = "",
    scale_min: float = 1.0,
    scale_max: float = 10.0,
    source: str = "",
    config: dict[str, Any] | None = None,
) -> int:
    """Create the evaluator if missing; return its id. Writers of scores call
    :func:`evaluator_for`, which checks the source may write to it."""
    upsert(
        session=session,
        table=Evaluator,
        keys=["slug"],
        rows=[
            {
                "slug": slug,
                "kind": kind,
                "description": description,
                "config": config or {},
                "scale_min": scale_min,
                "scale_max": scale_max,
                # (a fixture's evaluator has no source: the first writer takes it)
                **({"source": source} if source else {}),
            }
        ],
    )
    return session.execute(
        sa_select(col(Evaluator.id)).where(col(Evaluator.slug) == slug)
    ).scalar_one()


def evaluator_by_id(*, session: Session, evaluator_id: int) -> Evaluator | None:
    """The evaluator with this id."""
    return session.get(Evaluator, evaluator_id)


def evaluator_list(*, session: Session) -> list[Evaluator]:
    """Every evaluator, by slug."""
    return list(session.exec(select(Evaluator).order_by(col(Evaluator.slug))))


def evaluator_slug(*, session: Session, evaluator_id: int) -> str:
    """The slug of an evaluator id."""
    return str(session.execute(
        sa_select(col(Evaluator.slug)).where(col(Evaluator.id) == evaluator_id)).scalar_one())


def annotator_by_id(*, session: Session, annotator_id: int) -> Annotator | None:
    """The annotator with this id."""
    return session.get(Annotator, annotator_id)


def annotator_by_token_hash(*, session: Session, token_hash: str) -> Annotator | None:
    """The annotator holding this token hash."""
    return session.execute(
        sa_select(Annotator).where(col(Annotator.token_hash) == token_hash)).scalar_one_or_none()


def annotator_by_external_id(
    *, session: Session, evaluator_id: int, external_id: str
) -> Annotator | None:
    """The annotator of a pool with this external id (a Prolific PID)."""
    return session.execute(sa_select(Annotator).where(
        col(Annotator.evaluator_id) == evaluator_id, col(Annotator.external_id) == external_id,
    )).scalar_one_or_none()


def annotator_by_name(*, session: Session, evaluator_id: int, name: str) -> Annotator | None:
    """The annotator of a pool with this name."""
    return session.execute(sa_select(Annotator).where(
        col(Annotator.evaluator_id) == evaluator_id, col(Annotator.name) == name,
    )).scalar_one_or_none()


def annotator_count(*, session: Session, evaluator_id: int) -> int:
    """How many annotators the evaluator (a pool, a project) holds."""
    return int(session.execute(sa_select(func.count(col(Annotator.id))).where(
        col(Annotator.evaluator_id) == evaluator_id)).scalar_one())


def add_annotator(*, session: Session, **values: Any) -> Annotator:
    """Insert one annotator and return it (with its id)."""
    row = Annotator(**values)
    session.add(row)
    session.flush()
    return row


_ANNOTATORS = Annotator.__table__  # type: ignore[attr-defined]
_ADD_ANNOTATOR = _ANNOTATORS.insert().returning(_ANNOTATORS.c.id)
_POOL = sa_select(col(Evaluator.id), col(Evaluator.kind)).where(
    col(Evaluator.slug) == bindparam("b_slug"))


def new_annotator_id(*, session: Session, **values: Any) -> int:
    """Insert one annotator and return its id: one statement, no ORM object (a Prolific
    arrival needs only the id; the ORM's flush was a tenth of a join's CPU)."""
    return int(session.connection().execute(_ADD_ANNOTATOR, {"created_at": utcnow(), **values})
               .scalar_one())


def annotator_ids(session: Session, pairs: Iterable[tuple[int, str]]) -> dict[tuple[int, str],
                                                                           int]:
    """Create the annotators ``(evaluator id, name)`` that are missing; map each to its id."""
    wanted = sorted(set(pairs))
    if not wanted:
        return {}
    table = Annotator.__table__  # type: ignore[attr-defined]
    insert = postgresql.insert if session.get_bind().dialect.name == "postgresql" \
        else sqlite.insert
    out: dict[tuple[int, str], int] = {}
    for start in range(0, len(wanted), 1000):  # SQLite's limit of bound variables
        chunk = wanted[start:start + 1000]
        session.execute(insert(table).values(
            [{"evaluator_id": e, "name": n} for e, n in chunk]).on_conflict_do_nothing(
            index_elements=["evaluator_id", "name"]))
        found = session.execute(sa_select(table.c.evaluator_id, table.c.name, table.c.id).where(
            tuple_(table.c.evaluator_id, table.c.name).in_(chunk)))
        out.update({(e, n): i for e, n, i in found})
    return out


def annotator_id_order(*, session: Session) -> list[int]:
    """Every annotator's id, in the order they were added (first id first)."""
    return [int(i) for i in session.execute(sa_select(col(Annotator.id)).order_by(
        col(Annotator.id))).scalars()]
