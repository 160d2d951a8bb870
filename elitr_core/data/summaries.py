"""Meeting summaries as a task: one *summary question* per meeting, minutes as its reference.

CREAM ranks meeting summaries; here a summary is the answer to a per-meeting question numbered
0, of type ``summary`` (``SUMMARY_REQUEST`` below), so summary runs, their answers, pairwise
judging and the Meeting browser need nothing new. These questions exist only in a database
where summaries were generated or minutes imported, and QA runs, absolute judging and the
benchmark's question counts leave them out. The reference of a summary question is the
meeting's minutes from the ELITR Minuting Corpus (``minutes*.txt`` in the meeting's folder, the
first in name order) when they were imported, else empty (CREAM needs no reference).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sqlmodel import Session

from db.benchmark import meeting_questions, meeting_rows
from db.keyed import save
from db.models import Meeting, Question
from elitr_core.data.records import TRANSCRIPT, validate
from elitr_core.data.transcripts import CORPUS_FOLDER, read_corpus_file

SUMMARY_TYPE = "summary"
SUMMARY_NUMBER = 0
#: What a summary run asks after the protocol's answer prompt (stored with each run).
SUMMARY_REQUEST = ("Summarise the whole meeting as minutes: its main topics, the decisions taken "
                   "and the action items with who is responsible for them, as a bulleted list.")


def ensure_summary_questions(session: Session, meetings: Iterable[Meeting]) -> dict[int, Question]:
    """The summary question of each meeting (created when missing), by meeting id."""
    found = {}
    for meeting in meetings:
        assert meeting.id is not None
        stored = meeting_questions(session=session, meeting_id=meeting.id, number=SUMMARY_NUMBER)
        question = stored[0] if stored else Question(
            meeting_id=meeting.id, number=SUMMARY_NUMBER, question_type=SUMMARY_TYPE,
            answer_position="S", qa_text=SUMMARY_REQUEST, conv_text=None, reference="")
        if not stored:
            save(session=session, rows=[question])
        found[meeting.id] = question
    return found


@dataclass
class MinutesReport:
    """Meetings whose minutes were stored (with the file used)."""

    stored: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        return f"{len(self.stored)} meeting minutes stored as reference summaries"


def import_minutes(session: Session, folder: Path) -> MinutesReport:
    """Store each benchmark meeting's minutes (when its corpus folder holds some) as the
    reference of its summary question. Meetings without minutes are left alone."""
    root = folder / CORPUS_FOLDER if (folder / CORPUS_FOLDER).is_dir() else folder
    report = MinutesReport()
    meetings = meeting_rows(session=session)
    for meeting in meetings:
        files = sorted((root / meeting.split / meeting.external_id).glob("minutes*.txt"))
        if not files:
            continue
        text = read_corpus_file(root, files[0])  # inside the corpus, size cap, clear error
        if not text.strip():
            continue
        question = ensure_summary_questions(session, [meeting])[meeting.id or 0]
        question.reference = validate(TRANSCRIPT, {"text": text, "source": files[0].name},
                                      path=files[0], labels={"text": "minutes"})["text"]
        save(session=session, rows=[question])
        report.stored[meeting.external_id] = files[0].name
    return report
