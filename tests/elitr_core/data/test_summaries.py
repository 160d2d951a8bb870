"""Minutes from the ELITR Minuting Corpus become the reference of each meeting's summary
question; the benchmark's question count is unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from db.benchmark import overview_counts
from db.engine import get_engine
from elitr_core.cli.main import main
from elitr_core.data.database import reading
from elitr_core.data.summaries import SUMMARY_REQUEST
from tests.elitr_core.run_helpers import MEETINGS, rows


def corpus(tmp_path: Path) -> Path:
    """A corpus folder with transcripts for both meetings and minutes for the first."""
    root = tmp_path / "elitr-minuting-corpus-en" / "test2"
    for meeting in MEETINGS:
        folder = root / meeting
        folder.mkdir(parents=True)
        (folder / "transcript_MAN01.txt").write_text(f"(PERSON1) This is {meeting}.\n"
                                                     "(PERSON2) We plan the demo for Friday.\n")
    first = root / MEETINGS[0]
    (first / "minutes_GENER_annot01.txt").write_text("- Demo planned for Friday.\n")
    (first / "minutes_GENER_annot02.txt").write_text("- Another annotator's minutes.\n")
    return tmp_path


def summary_questions(url: str) -> list[tuple[str, int, str, str, str]]:
    return rows(url, "SELECT m.external_id, q.number, q.question_type, q.qa_text, q.reference "
                     "FROM question q JOIN meeting m ON m.id = q.meeting_id "
                     "WHERE q.question_type = 'summary' ORDER BY m.external_id")


def test_minutes_become_reference_summaries(bundled_sqlite: str, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["transcripts", str(corpus(tmp_path)), "--db", bundled_sqlite]) == 0
    assert "1 meeting minutes stored as reference summaries" in capsys.readouterr().out
    assert summary_questions(bundled_sqlite) == [
        (MEETINGS[0], 0, "summary", SUMMARY_REQUEST, "- Demo planned for Friday.\n")]
    with reading(get_engine(bundled_sqlite)) as session:
        assert overview_counts(session)["questions"] == 271  # the benchmark's, not summaries


