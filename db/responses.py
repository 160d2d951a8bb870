"""Responses: a run's answers, found by (run, question), stored, counted and read with their
question (the drilldown table, the passes' questions to judge, the interleaved runs' memory
spans, the answers an evaluator has not scored yet). Keyword-only writes, ``session`` first."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import and_, case, func, tuple_
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from db.keyed import upsert
from db.models import NO_SEED, Meeting, Question, QuestionTranslation, Response, Run, Score
from db.runs import ScoreFilter, filter_runs, run_label

# SQLite allows 32,766 bound variables per statement; rows of up to ~12 columns fit in 1,000.
_CHUNK = 1000


def response_ids(
    *, session: Session, pairs: Sequence[tuple[int, int]]
) -> dict[tuple[int, int], int]:
    """Map (run id, question id) -> response id for the given pairs."""
    out: dict[tuple[int, int], int] = {}
    for start in range(0, len(pairs), _CHUNK):
        chunk = pairs[start : start + _CHUNK]
        stmt = sa_select(col(Response.id), col(Response.run_id), col(Response.question_id)).where(
            tuple_(col(Response.run_id), col(Response.question_id)).in_(chunk)
        )
        out.update({(r, q): i for i, r, q in session.execute(stmt)})
    return out


def upsert_responses(*, session: Session, rows: Sequence[dict[str, Any]],
                     update: Sequence[str] = ()) -> None:
    """Store answers, one per (run, question); a stored answer changes only in ``update``."""
    upsert(session=session, table=Response, rows=rows, keys=["run_id", "question_id"],
           update=update)


def response_key_columns() -> list[Any]:
    """The columns that identify a response (``stats.frame.RESPONSE_KEY``), labelled."""
    return [
        col(Meeting.external_id).label("meeting"), col(Question.number).label("question_id"),
        col(Run.split), col(Run.setting), col(Run.mode), col(Run.seed),
        run_label().label("model"),
    ]


def response_rows(session: Session, flt: ScoreFilter, *,
                  ids: bool = False) -> list[dict[str, Any]]:
    """Responses with their question and reference texts, for the drilldown question table.

    Keys are those of the ``scores`` export (meeting, question_id, split, setting, mode, seed,
    model) plus question_type, answer_position, ``question`` (the Conv text in the conv setting
    when the question has one, else the QA text), ``reference`` and ``response``. The evaluator
    filter does not apply: a response is listed even when no chosen evaluator scored it.
    With ``ids``, each row's ``run_id`` too.
    """
    question_text = case(
        (
            (col(Run.setting) == "conv") & col(Question.conv_text).is_not(None),
            col(Question.conv_text),
        ),
        else_=col(Question.qa_text),
    )
    stmt: Any = (
        sa_select(
            *response_key_columns(),
            col(Question.question_type),
            col(Question.answer_position),
            question_text.label("question"),
            col(Question.reference),
            col(Response.text).label("response"),
            *((col(Run.id).label("run_id"),) if ids else ()),
        )
        .join(Run, col(Run.id) == col(Response.run_id))
        .join(Question, col(Question.id) == col(Response.question_id))
        .join(Meeting, col(Meeting.id) == col(Question.meeting_id))
        .order_by(col(Run.split), col(Run.setting), col(Run.mode), col(Run.model),
                  col(Meeting.external_id), col(Question.number), col(Run.seed))
    )
    rows = [dict(row._mapping) for row in session.execute(filter_runs(stmt, flt))]
    for row in rows:
        row["seed"] = None if row["seed"] == NO_SEED else row["seed"]
    return rows


def responses_without_score(
    session: Session, evaluator_id: int, flt: ScoreFilter
) -> list[tuple[int, str, str]]:
    """(response id, response text, reference) of the filtered responses that this evaluator
    has not scored; a run in another language is compared with the translated reference."""
    stmt: Any = (
        sa_select(col(Response.id), col(Response.text), col(Question.reference),
                  col(QuestionTranslation.reference))
        .join(Run, col(Run.id) == col(Response.run_id))
        .join(Question, col(Question.id) == col(Response.question_id))
        .outerjoin(QuestionTranslation, and_(
            col(QuestionTranslation.question_id) == col(Question.id),
            col(QuestionTranslation.language) == col(Run.language),
        ))
        .outerjoin(Score, and_(col(Score.response_id) == col(Response.id),
                               col(Score.evaluator_id) == evaluator_id))
        .where(col(Score.id).is_(None))
        .order_by(col(Response.id))
    )
    return [(rid, text, translated or reference)
            for rid, text, reference, translated in session.execute(filter_runs(stmt, flt))]


def response_ids_of_runs(session: Session, runs: Iterable[int]) -> dict[tuple[int, int], int]:
    """Map (run id, question id) -> response id for every response of ``runs``."""
    table = Response.__table__  # type: ignore[attr-defined]
    runs = list(runs)
    stmt = sa_select(table.c.run_id, table.c.question_id, table.c.id).where(
        table.c.run_id.in_(runs))
    return {(r, q): i for r, q, i in session.execute(stmt)}


def response_index(*, session: Session) -> list[tuple[int, int, str, int]]:
    """(response id, run id, meeting, question number) of every stored response: what names
    a response in another database or tool (``export/dataset.response_key``)."""
    stmt = (sa_select(col(Response.id), col(Response.run_id), col(Meeting.external_id),
                      col(Question.number))
            .join(Question, col(Question.id) == col(Response.question_id))
            .join(Meeting, col(Meeting.id) == col(Question.meeting_id)))
    return [(int(r), int(run), str(m), int(n)) for r, run, m, n in session.execute(stmt)]


def response_texts(*, session: Session, ids: Sequence[int]) -> dict[int, str]:
    """Response id -> its stored text, for ``ids``."""
    out: dict[int, str] = {}
    for start in range(0, len(ids), _CHUNK):
        stmt = sa_select(col(Response.id), col(Response.text)).where(
            col(Response.id).in_(list(ids[start:start + _CHUNK])))
        out.update({int(i): str(text) for i, text in session.execute(stmt)})
    return out


def run_answers(*, session: Session, run_id: int) -> dict[int, tuple[str, Mapping[str, Any]]]:
    """Question id -> (stored answer text, its metadata) of a run."""
    stmt = select(Response.question_id, Response.text, Response.meta).where(
        Response.run_id == run_id)
    return {qid: (text, meta) for qid, text, meta in session.exec(stmt)}


def response_count(*, session: Session, run_id: int) -> int:
    """How many answers a run has stored."""
    stmt = sa_select(func.count(col(Response.id))).where(col(Response.run_id) == run_id)
    return int(session.execute(stmt).scalar_one())


def responses_to_judge(*, session: Session, filters: dict[str, str | None],
                       models: Collection[str] = (), except_type: str | None = None,
                       labels: bool = False, by_question: bool = False,
                       ) -> list[tuple[Any, ...]]:
    """Stored responses with their run and question, in run and question order: response id,
    text, run seed, setting, language, question id, QA text, Conv text, reference; with
    ``labels`` the run's model, label (:func:`db.runs.run_label`), mode and split follow.

    ``filters`` maps run columns (split, setting, mode, language) to a value or None (any);
    ``models`` keeps the runs of these models (by name; empty: every run). ``by_question``
    orders by question, then run.
    """
    columns: list[Any] = [col(Response.id), col(Response.text), col(Run.seed),
                          col(Run.setting), col(Run.language), col(Question.id),
                          col(Question.qa_text), col(Question.conv_text),
                          col(Question.reference)]
    if labels:
        columns += [col(Run.model), run_label(), col(Run.mode), col(Run.split)]
    stmt: Any = (sa_select(*columns)
                 .join(Run, col(Run.id) == col(Response.run_id))
                 .join(Question, col(Question.id) == col(Response.question_id))
                 .order_by(*((col(Question.id), col(Run.id)) if by_question
                             else (col(Run.id), col(Question.id)))))
    if except_type is not None:
        stmt = stmt.where(Question.question_type != except_type)
    for name, value in filters.items():
        if value:
            stmt = stmt.where(getattr(Run, name) == value)
    if models:
        stmt = stmt.where(col(Run.model).in_(list(models)))
    return [tuple(row) for row in session.execute(stmt)]


def interleaved_spans(*, session: Session, flt: ScoreFilter) -> list[dict[str, Any]]:
    """One row per answer of an interleaved run (mode ``int2``, ``int3``, ...) under the run
    filters of ``flt``: the columns that identify a response in the ``scores`` export
    (``model`` the run's label, :func:`db.runs.run_label`), the run's own ``model`` as
    ``base_model``, the answer's metadata (``meta``, which holds its memory span) and its
    ``run_id`` (whose config holds the run's conversations, :func:`db.runs.interleave_plans`)."""
    stmt: Any = (
        sa_select(col(Meeting.external_id).label("meeting"),
                  col(Question.number).label("question_id"), col(Run.split),
                  col(Run.setting), col(Run.mode), col(Run.seed), run_label().label("model"),
                  col(Run.model).label("base_model"), col(Response.meta),
                  col(Run.id).label("run_id"))
        .join(Run, col(Run.id) == col(Response.run_id))
        .join(Question, col(Question.id) == col(Response.question_id))
        .join(Meeting, col(Meeting.id) == col(Question.meeting_id))
        .where(col(Run.mode).like("int%"))
        .order_by(col(Response.id)))
    return [dict(row._mapping) for row in session.execute(filter_runs(stmt, flt))]
