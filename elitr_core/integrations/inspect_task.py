"""ELITR-Bench as an inspect_ai task: any model inspect supports can answer the benchmark.

    inspect eval elitr_core/integrations/inspect_task.py -T split=test2 -T setting=qa \\
        -T mode=st --model openai/gpt-4o-mini
    python -m elitr_core import logs/*.eval

Task arguments (``-T``): ``split`` (dev, test2), ``setting`` (qa, conv), ``mode`` (st, mt),
``meetings`` (comma-separated ids; default all of the split), ``language`` (en, cs),
``length_instruction`` (the LIE option: "Answer this question with N words."),
``system_prompt``, ``qa_markers`` (as ``generate``'s options), ``db`` (a database URL;
default ``$DATABASE_URL``, else the project's SQLite file; give a SQLite path as an absolute
``sqlite:////...`` URL, since inspect runs a task file from its own folder) and ``judge``
(``gpt4`` or ``prometheus``: score each answer with the benchmark's judge prompt, by the
``grader`` model role or the evaluated model; default: no scorer).

Prompts, questions and transcripts are the project's (``elitr_core.integrations.items``, the
same conversations ``generate`` asks): a sample's id is ``MEETING/qN`` (single-turn) or
``MEETING/mt`` (a meeting's questions in one conversation, answered turn by turn).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

if importlib.util.find_spec("elitr_core") is None:  # `inspect eval FILE` loads it by path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    get_model,
)
from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import Generate, TaskState, solver

from elitr_core.integrations.items import BenchmarkItem, benchmark_items

#: The task's registry name; ``import`` refuses a log of any other task.
TASK_NAME = "elitr_bench"


def _message(message: dict[str, Any]) -> ChatMessage:
    if message["role"] == "system":
        return ChatMessageSystem(content=str(message["content"]))
    if message["role"] == "assistant":
        return ChatMessageAssistant(content=str(message["content"]))
    return ChatMessageUser(content=str(message["content"]))


def _sample(item: BenchmarkItem) -> Sample:
    first = [*item.history, {"role": "user", "content": item.turns[0]}]
    return Sample(id=item.id, input=[_message(m) for m in first],
                  target=list(item.references),
                  metadata={**item.metadata, "questions": list(item.questions),
                            "question_texts": list(item.texts), "later_turns": item.turns[1:]})


@solver
def answer_turns() -> Any:
    """Ask the sample's first turn, then each later turn with the answers so far in the
    history (the benchmark's multi-turn protocol; a single-turn sample has no later turn)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state = await generate(state)
        for turn in state.metadata.get("later_turns", []):
            state.messages.append(ChatMessageUser(content=turn))
            state = await generate(state)
        return state

    return solve


def answers(state: TaskState) -> list[str]:
    """The sample's answers, one per question in the order asked."""
    return [m.text for m in state.messages if isinstance(m, ChatMessageAssistant)]


@scorer(metrics=[mean()])
def elitr_judge(style: str = "gpt4") -> Any:
    """The benchmark's judge prompt on every answer (docs/protocol.md §3), on the 1..10 scale;
    the sample's value is the mean of its parsed scores, each question's score is in the
    score's metadata (``scores``: number -> score or None when unparsed)."""
    from elitr_core.judging.parser import parse_judgment
    from elitr_core.prompts.assembly import JUDGE_DECODING, judge_prompt

    config = GenerateConfig(temperature=JUDGE_DECODING.temperature, top_p=JUDGE_DECODING.top_p,
                            max_tokens=JUDGE_DECODING.max_new_tokens)

    async def score(state: TaskState, target: Target) -> Score:
        grader = get_model(role="grader")
        found: dict[str, float | None] = {}
        meta = state.metadata
        for number, text, reference, answer in zip(
                meta["questions"], meta["question_texts"], target.target, answers(state),
                strict=False):
            output = await grader.generate(judge_prompt(text, answer, reference, style=style),
                                           config=config)
            found[str(number)] = parse_judgment(output.completion, style).score
        parsed = [v for v in found.values() if v is not None]
        return Score(value=sum(parsed) / len(parsed) if parsed else float("nan"),
                     metadata={"scores": found, "style": style})

    return score


def _meeting_list(meetings: str | list[str]) -> tuple[str, ...]:
    """``-T meetings=a,b`` (inspect may already have read it as a list)."""
    names = meetings if isinstance(meetings, list) else str(meetings).split(",")
    return tuple(str(m).strip() for m in names if str(m).strip())


@task(name=TASK_NAME)
def elitr_bench(split: str = "test2", setting: str = "qa", mode: str = "st",
                meetings: str | list[str] = "", language: str = "en",
                length_instruction: bool = False, system_prompt: bool = False,
                qa_markers: bool = False, db: str | None = None,
                judge: str | None = None) -> Task:
    """ELITR-Bench questions of one split, setting and mode, from the project's database."""
    from elitr_core.data.database import open_database, reading

    with reading(open_database(db, write=False)) as session:
        items = benchmark_items(
            session, split=split, setting=setting, mode=mode, language=language,
            meetings=_meeting_list(meetings),
            length_instruction=bool(length_instruction), system_prompt=bool(system_prompt),
            qa_markers=bool(qa_markers))
    return Task(dataset=MemoryDataset([_sample(item) for item in items], name="elitr-bench"),
                solver=answer_turns(), scorer=elitr_judge(judge) if judge else None,
                metadata={"elitr_bench": {"split": split, "setting": setting, "mode": mode,
                                          "language": language}})
