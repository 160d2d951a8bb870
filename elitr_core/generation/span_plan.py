"""The span plan of an interleaved run, shown before anything is asked (``generate
--interleave K --span N``, and alone with ``--plan-only``): per question, its conversation,
meeting, turn, the target span and the span the plan puts it at, and their spread.

The planned span is what the run measures when every answer has its planned length (a
benchmark answer :data:`~elitr_core.generation.interleave.ANSWER_ESTIMATE` tokens or
``--max-new-tokens`` when fewer, an answered filler's reply its right reply's tokens); the run
stores each answer's measured ``span`` beside ``span_planned``, so how far the answers moved
it is read from the stored rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from sqlalchemy.engine import Engine

from db.transaction import reading
from elitr_core.backends.base import Backend
from elitr_core.generation.fillers import FillerTurn
from elitr_core.generation.interleave import check_span, plan_run
from elitr_core.generation.interleaved import Interleaved, conversations
from elitr_core.generation.spec import GenerationSpec, load_work

PLAN_COLUMNS = ("conversation", "turn", "meeting", "question", "target", "planned",
                "difference")


def plan_frame(asked: Sequence[Interleaved], target: int) -> pd.DataFrame:
    """One row per question of the conversations: where it is asked and its spans."""
    rows = []
    for index, conversation in enumerate(asked, 1):
        for turn, kind in enumerate(conversation.kinds):
            if isinstance(kind, FillerTurn):
                continue
            planned = conversation.planned_span(turn)
            rows.append((index, turn, conversation.meetings[turn], kind.number, target,
                         planned, planned - target))
    return pd.DataFrame(rows, columns=list(PLAN_COLUMNS))


def plan_lines(asked: Sequence[Interleaved], target: int, unit: str) -> list[str]:
    """The plan as the CLI prints it: a heading, the table and the spread."""
    frame = plan_frame(asked, target)
    fillers = sum(isinstance(k, FillerTurn) for c in asked for k in c.kinds)
    planned = frame["planned"]
    heading = (f"span plan ({unit}): {len(frame)} question(s) in {len(asked)} "
               f"conversation(s), target {target:,}"
               + (f", {fillers} answered filler(s)" if fillers else ""))
    if frame.empty:
        return [heading]
    spread = (f"planned span: min {planned.min():,}, median {planned.median():,.0f}, max "
              f"{planned.max():,} (spread {planned.max() - planned.min():,}; "
              f"{(planned - target).abs().max() / max(target, 1):.1%} from the target at most)")
    return [heading, frame.to_string(index=False), spread]


def span_plan(engine: Engine, spec: GenerationSpec, backend: Backend) -> list[Interleaved]:
    """An interleaved run's conversations as its first call plans them, with nothing
    stored and nothing asked (``--plan-only``): the same plan, for the same settings and
    meetings, as the run makes."""
    spec = spec.checked()
    if spec.interleave is None:
        return []
    check_span(spec.interleave, backend, spec.decoding.max_new_tokens)
    with reading(engine) as session:
        work = load_work(session, spec)
    plan = plan_run(work, spec.interleave, spec.seed, backend.count_tokens,
                    max_new_tokens=spec.decoding.max_new_tokens, qa_markers=spec.qa_markers)
    return conversations(plan, work, spec.interleave, spec.seed, backend.count_tokens,
                         qa_markers=spec.qa_markers)
