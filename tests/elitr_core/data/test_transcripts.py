"""Transcripts from an ELITR Minuting Corpus layout (synthetic transcripts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from db.engine import get_engine
from elitr_core.cli.main import main

SYNTHETIC = "(PERSON4) So, uh, we should start. <laugh/>\n(PERSON7) [ORGANIZATION2] sent it.\n"


def test_transcripts_are_stored(bundled_sqlite: str, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "elitr-minuting-corpus-en"
    for split, meeting in (("dev", "meeting_en_dev_003"), ("test2", "meeting_en_test2_001")):
        folder = corpus / split / meeting
        folder.mkdir(parents=True)
        (folder / "transcript_MAN_v2.txt").write_text("later version", encoding="utf-8")
        (folder / "transcript_MAN_v1.txt").write_text(SYNTHETIC + meeting, encoding="utf-8")
    (corpus / "dev" / "meeting_en_dev_999").mkdir()  # not a benchmark meeting: ignored
    assert main(["transcripts", str(tmp_path), "--db", bundled_sqlite]) == 0
    out = capsys.readouterr().out
    assert "2 transcript(s) stored" in out and "16 meeting(s) not in the folder" in out
    with get_engine(bundled_sqlite).connect() as conn:
        rows = dict(conn.exec_driver_sql(
            "SELECT external_id, transcript FROM meeting WHERE transcript IS NOT NULL").all())
    assert rows == {"meeting_en_dev_003": SYNTHETIC + "meeting_en_dev_003",
                    "meeting_en_test2_001": SYNTHETIC + "meeting_en_test2_001"}


def test_folder_without_meetings(bundled_sqlite: str, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["transcripts", str(tmp_path), "--db", bundled_sqlite]) == 2
    assert "no benchmark meeting folder found" in capsys.readouterr().err


@pytest.fixture(params=["sqlite", "postgresql"])
def small_db(request: pytest.FixtureRequest) -> str:
    """``tests.small_db`` (meetings meeting_en_dev_901 and meeting_en_test2_901) on both."""
    if request.param == "sqlite":
        return str(request.getfixturevalue("small_sqlite"))
    from tests import small_db as small

    url = str(request.getfixturevalue("pg_url"))
    small.build(url)
    return url


def _stored(url: str) -> dict[str, str | None]:
    with get_engine(url).connect() as conn:
        return dict(conn.exec_driver_sql("SELECT external_id, transcript FROM meeting").all())


@pytest.mark.parametrize("link", ["file-out", "proc", "folder-out", "minutes-out", "fifo"])
def test_files_reached_out_of_the_corpus_are_refused(link: str, small_db: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    """Issue 27 item 10: a transcript or minutes file that is a symbolic link out of the
    corpus (or in a folder linked from outside, or not a regular file) is refused with one
    line, and nothing is stored; a link inside the corpus is a file of the corpus."""
    import os

    corpus = tmp_path / "elitr-minuting-corpus-en"
    secret = tmp_path / "elsewhere" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("SECRET outside the corpus", encoding="utf-8")
    good = corpus / "test2" / "meeting_en_test2_901"
    good.mkdir(parents=True)
    (good / "kept.txt").write_text(SYNTHETIC, encoding="utf-8")
    (good / "transcript_MAN1.txt").symlink_to(good / "kept.txt")  # inside: fine
    dev = corpus / "dev" / "meeting_en_dev_901"
    if link == "folder-out":
        (secret.parent / "transcript_MAN1.txt").write_text("SECRET", encoding="utf-8")
        dev.parent.mkdir(parents=True)
        dev.symlink_to(secret.parent, target_is_directory=True)
    else:
        dev.mkdir(parents=True)
        transcript = dev / "transcript_MAN1.txt"
        if link == "file-out":
            transcript.symlink_to(secret)
        elif link == "proc":
            transcript.symlink_to("/proc/self/status")
        elif link == "fifo":
            os.mkfifo(transcript)
        else:
            transcript.write_text(SYNTHETIC, encoding="utf-8")
            (dev / "minutes_1.txt").symlink_to(secret)
    before = _stored(small_db)
    assert main(["transcripts", str(tmp_path), "--db", small_db]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert ("outside the folder" in err) if link != "fifo" else "not a regular file" in err
    assert "SECRET" not in err and _stored(small_db) == before
