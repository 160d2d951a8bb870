"""Transcripts from an ELITR Minuting Corpus folder (users download the corpus themselves).

Layout (docs/protocol.md §1): ``elitr-minuting-corpus-en/{dev,test2}/meeting_en_{split}_NNN/
transcript_MAN*.txt``; the meeting id is the folder name. A folder with several transcript
versions uses the first in name order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sqlmodel import Session

from db.benchmark import meeting_rows
from db.keyed import save
from elitr_core.data.bounded import read_text
from elitr_core.data.records import TRANSCRIPT, validate
from elitr_core.errors import DataFileError

CORPUS_FOLDER = "elitr-minuting-corpus-en"


@dataclass
class TranscriptReport:
    """Meetings whose transcript was stored, and benchmark meetings absent from the folder."""

    stored: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)

    def summary(self) -> str:
        text = f"{len(self.stored)} transcript(s) stored"
        if self.absent:
            text += f"; {len(self.absent)} meeting(s) not in the folder: {', '.join(self.absent)}"
        return text


def _corpus_root(folder: Path) -> Path:
    if not folder.is_dir():
        raise DataFileError(folder, "not a folder: pass the ELITR Minuting Corpus folder")
    nested = folder / CORPUS_FOLDER
    return nested if nested.is_dir() else folder


def read_corpus_file(root: Path, path: Path) -> str:
    """The text of ``path``, a regular file inside the corpus folder ``root``.

    A transcript or minutes file is later sent to an LLM server: a symbolic link (of the file
    or of a folder on the way) that leads out of the corpus (``/proc/self/status``, a file
    elsewhere) is refused with one line, and so is anything that is not a regular file.
    """
    return read_text(path, within=root)  # bounded.open_regular: links out refused too


def read_transcript(meeting_dir: Path, root: Path | None = None) -> str:
    """The text of a meeting folder's transcript (``transcript_MAN*.txt``), read only from
    inside ``root`` (the corpus folder; default the meeting folder itself)."""
    candidates = sorted(meeting_dir.glob("transcript_MAN*.txt"))
    if not candidates:
        raise DataFileError(meeting_dir, "missing transcript file (transcript_MAN*.txt)")
    text = read_corpus_file(root or meeting_dir, candidates[0])
    if not text.strip():
        raise DataFileError(candidates[0], "empty transcript")
    return text


def import_transcripts(session: Session, folder: Path) -> TranscriptReport:
    """Store the transcript of every benchmark meeting found under ``folder``.

    Raises
    ------
    DataFileError
        When the folder holds no benchmark meeting, or a meeting folder has no transcript.
    """
    root = _corpus_root(folder)
    meetings = {m.external_id: m for m in meeting_rows(session=session)}
    if not meetings:
        raise DataFileError(folder, "the database has no meetings yet: run `init` first")
    report = TranscriptReport()
    for external_id, meeting in sorted(meetings.items()):
        meeting_dir = root / meeting.split / external_id
        if not meeting_dir.is_dir():
            report.absent.append(external_id)
            continue
        checked = validate(TRANSCRIPT, {"text": read_transcript(meeting_dir, root),
                                        "source": str(meeting_dir)}, path=meeting_dir,
                           labels={"text": "transcript", "source": "folder name"})
        meeting.transcript, meeting.transcript_source = checked["text"], checked["source"]
        save(session=session, rows=[meeting])
        report.stored.append(external_id)
    if not report.stored:
        raise DataFileError(
            folder,
            f"no benchmark meeting folder found (expected {CORPUS_FOLDER}/dev/"
            "meeting_en_dev_001/transcript_MAN*.txt and so on)",
        )
    return report
