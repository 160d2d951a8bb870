"""An interleaved run's part of a generation run (``runs.py``): its plan, made on its first
call and stored with the run so a resumed call asks the same conversations, and its
conversations asked; with answered fillers (``--answered-filler``) each reply is checked
(``fillers.check_reply``) and stored apart from the benchmark's answers (``db/fillers.py``,
through a store step of its own: never a response, never counted as an answer)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy.engine import Engine

from db import keyed
from db import runs as rq
from db.fillers import run_filler_replies, upsert_filler_answers
from db.models import FillerAnswer, utcnow
from db.transaction import writing
from elitr_core.backends.base import Backend, Completion
from elitr_core.data.model_text import as_generated
from elitr_core.errors import UserError
from elitr_core.generation.fillers import FillerTurn, check_reply
from elitr_core.generation.interleave import plan_run
from elitr_core.generation.interleaved import (
    Interleaved,
    InterleavedTurns,
    ask_interleaved,
    conversations,
)
from elitr_core.generation.run_config import GenerationConfig
from elitr_core.generation.spec import GenerationSpec, MeetingWork, QuestionItem
from elitr_core.passes.lifecycle import PassReport, ResumablePass
from elitr_core.passes.records import NullProgress, completion_meta
from elitr_core.passes.store import Store, Storing

#: ``put_answer(question, completion, meta)``: store a benchmark answer
PutAnswer = Callable[[QuestionItem, Completion, dict[str, Any]], None]


def stored_conversations(engine: Engine, run_id: int, spec: GenerationSpec, backend: Backend,
                         work: Sequence[MeetingWork], label: str) -> list[Interleaved]:
    """An interleaved run's conversations (none for another run), planned and stored on its
    first call; the questions it expects are those of its conversations (a meeting left over
    from the grouping is not asked). ``label``: the run's, for the message.

    Raises
    ------
    UserError
        A resumed run asked for other meetings than its stored conversations hold.
    """
    if spec.interleave is None:
        return []
    with writing(engine) as session:
        run = rq.run_by_id(session=session, run_id=run_id)
        assert run is not None
        config = GenerationConfig.read(run.config)
        plan = config.interleave_plan
        meetings = sorted(w.meeting for w in work)
        if plan is None:
            plan = plan_run(work, spec.interleave, spec.seed, backend.count_tokens,
                            max_new_tokens=spec.decoding.max_new_tokens,
                            qa_markers=spec.qa_markers)
        elif sorted([*(m for g in plan["groups"] for m in g["meetings"]),
                     *plan["left_out"]]) != meetings:
            raise UserError(f"{label} is stored with other meetings: rerun with the "
                            "stored --meetings to resume, or add --variant NAME")
        run.config = config.model_copy(update={
            "interleave_plan": plan,
            "questions": sum(len(g["order"]) for g in plan["groups"])}).stored()
        keyed.save(session=session, rows=[run])
    return conversations(plan, work, spec.interleave, spec.seed, backend.count_tokens,
                         qa_markers=spec.qa_markers)


def ask_interleaved_run(engine: Engine, spec: GenerationSpec, lifecycle: ResumablePass,
                        backend: Backend, interleaved: Sequence[Interleaved],
                        done: dict[int, str], put_answer: PutAnswer, run_id: int) -> None:
    """An interleaved run's conversations; with answered fillers each reply is checked and
    stored apart (``FillerAnswer``, its own writer), each benchmark answer by ``put_answer``
    (``runs.RunAnswers.put``), and a resumed conversation goes on after its stored answers
    and replies."""
    assert spec.interleave is not None
    answered = spec.interleave.answered_filler
    with writing(engine) as session:
        stored = run_filler_replies(session=session, run_id=run_id) if answered else {}
    replies = {key: as_generated(text, meta) for key, (text, meta) in stored.items()}
    counts = PassReport()  # the replies' own counts: never the run's answers
    store = Store(engine, Storing(FillerAnswer, upsert_filler_answers,
                                  key=("run_id", "conversation", "turn"), name="filler-writer",
                                  note="meta"), counts, NullProgress()) if answered else None

    def put(item: InterleavedTurns, turn: int, completion: Completion) -> None:
        kind, extra = item.answered(turn, completion)
        if isinstance(kind, FillerTurn):
            assert store is not None  # a filler turn only with answered fillers
            checked = check_reply(kind.expected, completion.text)
            store.put({"run_id": run_id, "conversation": item.group, "turn": turn,
                       "gap": kind.gap, "question": kind.question,
                       "expected": kind.expected_text, "text": completion.text, **checked,
                       "meta": completion_meta(completion, **extra), "created_at": utcnow()},
                      original=completion.text)
        else:
            put_answer(kind, completion, extra)

    try:
        ask_interleaved(spec.interleave, spec.decoding, lifecycle, backend, interleaved, done,
                        put, done_fillers=replies)
    finally:
        if store is not None:
            store.close()
