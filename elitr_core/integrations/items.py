"""The benchmark as a harness asks it: one item per question (single-turn) or per meeting
(multi-turn), with the benchmark's own prompts (``elitr_core.prompts``) and the transcripts
stored in the database.

An item's id names its meeting and question(s): ``MEETING/q3`` asks question 3 alone,
``MEETING/mt`` asks all of the meeting's questions in one conversation (their numbers in
``questions``, in the order asked). :func:`parse_item_id` reads an id back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session

from elitr_core.backends.base import Message
from elitr_core.data.strict import id_number
from elitr_core.errors import UserError
from elitr_core.generation.spec import GenerationSpec, load_work
from elitr_core.prompts.assembly import multi_turn_plan, single_turn_messages

#: The single-turn and multi-turn ids: ``MEETING/qN`` and ``MEETING/mt``.
_ID = re.compile(r"^(?P<meeting>[^/]+)/(?:q(?P<number>[^/]+)|(?P<mt>mt))$")


@dataclass(frozen=True)
class BenchmarkItem:
    """One conversation to ask: ``history`` (a system prompt or nothing), then ``turns`` (the
    user turns, each answered before the next), for ``questions`` of ``meeting``."""

    id: str
    meeting: str
    questions: tuple[int, ...]
    history: list[Message]
    turns: list[str]
    references: tuple[str, ...]
    texts: tuple[str, ...]
    metadata: dict[str, Any] = field(default_factory=dict)


def item_id(meeting: str, number: int | None) -> str:
    """The id of a single-turn item (``number``) or of a meeting's multi-turn item (None)."""
    return f"{meeting}/mt" if number is None else f"{meeting}/q{number}"


def parse_item_id(value: object) -> tuple[str, int | None] | None:
    """``(meeting, number)`` of an item id (number None for ``MEETING/mt``); None when the
    value is not an ELITR-Bench item id, the number included: ASCII digits written as
    :func:`item_id` writes them (``q3``; never ``q03``, ``q３`` or ``q٣``, which would make a
    second spelling of one question: ``data.strict.id_number``)."""
    match = _ID.match(str(value))
    if match is None:
        return None
    if match["mt"]:
        return match["meeting"], None
    number = id_number(match["number"])
    return None if number is None else (match["meeting"], number)


def benchmark_items(session: Session, *, split: str, setting: str, mode: str,
                    meetings: tuple[str, ...] = (), language: str = "en",
                    length_instruction: bool = False, system_prompt: bool = False,
                    qa_markers: bool = False) -> list[BenchmarkItem]:
    """The items of one run's settings, as ``generate`` would ask them (same checks: known
    meetings, transcripts present, the conv setting only multi-turn)."""
    spec = GenerationSpec(model="harness", setting=setting, mode=mode, split=split,
                          language=language, meetings=meetings,
                          length_instruction=length_instruction, system_prompt=system_prompt,
                          qa_markers=qa_markers).checked()
    refs = _references(session, spec)
    items: list[BenchmarkItem] = []
    options = {"system_prompt": system_prompt, "qa_markers": qa_markers}
    for work in load_work(session, spec):
        common = {"split": split, "setting": setting, "mode": mode, "language": language}
        if mode == "mt":
            history, turns = multi_turn_plan(
                work.transcript, [q.text for q in work.questions],
                length_words=[q.length_words for q in work.questions], **options)
            numbers = tuple(q.number for q in work.questions)
            items.append(BenchmarkItem(
                item_id(work.meeting, None), work.meeting, numbers, history, turns,
                tuple(refs[(work.meeting, n)] for n in numbers),
                tuple(q.text for q in work.questions),
                {**common, "meeting": work.meeting, "questions": list(numbers)}))
            continue
        for q in work.questions:
            messages = single_turn_messages(work.transcript, q.text,
                                            length_words=q.length_words, **options)
            items.append(BenchmarkItem(
                item_id(work.meeting, q.number), work.meeting, (q.number,), messages[:-1],
                [str(messages[-1]["content"])], (refs[(work.meeting, q.number)],), (q.text,),
                {**common, "meeting": work.meeting, "question": q.number}))
    if not items:
        raise UserError(f"no question to ask in {split} {setting} {mode}: import the benchmark "
                        "first (python -m elitr_core init)")
    return items


def _references(session: Session, spec: GenerationSpec) -> dict[tuple[str, int], str]:
    """(meeting, number) -> the reference answer, in the run's language where translated."""
    from db import benchmark as bq

    found = bq.question_references(session=session, split=spec.split)
    if spec.language == "en":
        return {key: reference for key, (_, reference) in found.items()}
    translated = bq.translations(session=session, languages=[spec.language],
                                 question_ids=[qid for qid, _ in found.values()])
    out = {}
    for key, (qid, reference) in found.items():
        t = translated.get((qid, spec.language))
        out[key] = (t.reference if t is not None and t.reference else reference)
    return out


def jsonl_text(items: list[BenchmarkItem]) -> str:
    """The single-turn items as JSON Lines, one question a line: what the lm-evaluation-harness
    task (``integrations/lm_eval/elitr_bench.yaml``) reads. ``prompt`` is the one user turn
    (answer prompt, transcript and question); ``system`` the system prompt, if any."""
    import json

    lines = []
    for item in items:
        if len(item.turns) != 1:
            raise UserError("the JSONL export holds single-turn questions (lm-evaluation-"
                            "harness asks one question at a time): use --mode st")
        lines.append(json.dumps({
            "id": item.id, "meeting": item.meeting, "question": item.questions[0],
            **{k: item.metadata[k] for k in ("split", "setting", "mode", "language")},
            "system": "".join(str(m["content"]) for m in item.history),
            "prompt": item.turns[0], "reference": item.references[0],
        }, ensure_ascii=False))
    return "".join(line + "\n" for line in lines)
