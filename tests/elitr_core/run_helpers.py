"""Shared helpers of the run, judge, CLI and page tests: synthetic transcripts and DB reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text

from db.engine import get_engine
from elitr_core.passes.records import NullProgress
from tests.elitr_core.backends.tiny_model import synthetic_transcript

MEETINGS = ("meeting_en_test2_001", "meeting_en_test2_002")  # 12 + 16 questions


@dataclass
class StopAfter(NullProgress):
    """Raises KeyboardInterrupt once ``n`` answers are stored (a Ctrl-C mid-run)."""

    n: int
    count: int = 0
    started: list[int] = field(default_factory=list)  # each start's total

    def start(self, total: int, label: str) -> None:
        self.started.append(total)

    def advance(self, count: int = 1) -> None:
        self.count += count
        if self.count >= self.n:
            raise KeyboardInterrupt


@dataclass
class Events:
    """A progress sink that keeps every event, in order."""

    calls: list[tuple[Any, ...]] = field(default_factory=list)

    def start(self, total: int, label: str) -> None:
        self.calls.append(("start", total, label))

    def advance(self, count: int = 1) -> None:
        self.calls.append(("advance", count))

    def close(self) -> None:
        self.calls.append(("close",))


def transcript_of(meeting: str, lines: int = 12) -> str:
    """A short synthetic transcript that names its meeting (so prompts are told apart)."""
    return f"(PERSON1) This is {meeting}.\n" + synthetic_transcript(lines, seed=len(meeting) +
                                                                     int(meeting[-3:]))


def set_transcripts(url: str, meetings: tuple[str, ...] = MEETINGS, lines: int = 12) -> None:
    """Store synthetic transcripts directly in ``Meeting.transcript``."""
    with get_engine(url).begin() as conn:
        for meeting in meetings:
            conn.execute(text("UPDATE meeting SET transcript = :t WHERE external_id = :m"),
                         {"t": transcript_of(meeting, lines), "m": meeting})


def stored_transcript(url: str, meeting: str) -> str:
    """The transcript stored for a meeting."""
    (text,), = rows(url, "SELECT transcript FROM meeting WHERE external_id = :m", m=meeting)
    return str(text)


def rows(url: str, sql: str, **params: Any) -> list[tuple[Any, ...]]:
    """Plain rows of a query."""
    with get_engine(url).connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql), params)]


def questions(url: str, meetings: tuple[str, ...] = MEETINGS,
              setting: str = "qa") -> list[tuple[int, str, int, str]]:
    """(question id, meeting, number, text) of the meetings, in file order; the text is the
    one ``setting`` asks (conv: the Conv phrasing where there is one, as generation does)."""
    found = rows(url, "SELECT q.id, m.external_id, q.number, q.qa_text, q.conv_text FROM "
                      "question q JOIN meeting m ON m.id = q.meeting_id "
                      "ORDER BY m.external_id, q.number")
    return [(qid, meeting, number, (conv or qa) if setting == "conv" else qa)
            for qid, meeting, number, qa, conv in found if meeting in meetings]


def responses(url: str, run_id: int) -> dict[int, tuple[str, dict[str, Any]]]:
    """question id -> (text, meta) of a run; fails on a duplicate."""
    import json

    out: dict[int, tuple[str, dict[str, Any]]] = {}
    for qid, body, meta in rows(url, "SELECT question_id, text, meta FROM response "
                                     "WHERE run_id = :r", r=run_id):
        assert qid not in out, f"duplicate response for question {qid}"
        out[qid] = (body, json.loads(meta) if isinstance(meta, str) else meta)
    return out
