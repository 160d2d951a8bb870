"""The one bounded reader (issue 41, item 1): regular files only, no links out of a folder,
size before and while reading, JSON values bounded; each refusal one line, nothing written."""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
import time
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from elitr_core.cli.main import main
from elitr_core.data import bounded, validation
from elitr_core.data.benchmark import ARCHIVE_PASSWORD
from elitr_core.errors import DataFileError
from tests.dbstate import snapshot

ROOT = Path(__file__).resolve().parents[3]
RESPONSES = "elitr-bench-qa_dev_st_gpt-4-eval.json"


def _responses() -> dict:
    with zipfile.ZipFile(ROOT / "data" / "generated-responses.zip") as archive:
        name = next(n for n in archive.namelist() if n.endswith(RESPONSES))
        return json.loads(archive.read(name, pwd=ARCHIVE_PASSWORD))


def test_special_files_are_refused_on_what_was_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    cases = {fifo: "a named pipe (FIFO), not a regular file",
             tmp_path / "zero.json": "a device, not a regular file",
             tmp_path: "is a folder, not a file"}
    for path, expected in cases.items():
        started = time.monotonic()
        with pytest.raises(DataFileError, match=re.escape(expected)):
            bounded.read_bytes(path)
        assert time.monotonic() - started < 5  # a FIFO with no writer never blocks the open


def test_a_link_out_of_the_folder_is_refused_and_one_inside_is_read(tmp_path: Path) -> None:
    outside = tmp_path / "secret.json"
    outside.write_text('{"secret": 1}')
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "out.json").symlink_to(outside)
    (folder / "real.json").write_text("{}")
    (folder / "in.json").symlink_to(folder / "real.json")
    with pytest.raises(DataFileError, match="links to .*secret.json, outside the folder"):
        bounded.read_bytes(folder / "out.json", within=folder)
    assert bounded.read_bytes(folder / "in.json", within=folder) == b"{}"


def test_a_file_that_grows_past_the_limit_while_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "growing.csv"
    path.write_bytes(b"x" * 100)
    with bounded.open_regular(path, max_bytes=1000) as handle:
        path.write_bytes(b"x" * 5000)  # grew after the size was checked
        with pytest.raises(DataFileError, match="grew past the 1 MB read at most"):
            handle.read()


def _reference(value: object, depth: int = 0) -> tuple[int, int]:
    """(depth, values) of parsed JSON: each array or object counts its items, at least one."""
    if not isinstance(value, list | dict):
        return depth, 0
    items = list(value.values()) if isinstance(value, dict) else value
    found = [_reference(item, depth + 1) for item in items]
    return max([depth + 1, *(d for d, _ in found)]), max(len(items), 1) + sum(
        n for _, n in found)


@pytest.mark.parametrize("text", [
    b'{"a": [1, 2, {"b": "x,y[{"}], "c": {}}',
    json.dumps(["\\", "\"[", {"k\\\"": [[], {}]}, 3]).encode(),
    b'{"pad": "' + b",[{" * 30_000 + b'", "x": ' + b"[{}," * 10 + b"[]" + b"]" * 10 + b"}",
    json.dumps({"a": [{"b": ["\\\"," * 5000, {}] * 300}] * 3}).encode(),
])
def test_json_values_are_counted_outside_strings_in_one_piece_and_in_chunks(
        text: bytes) -> None:
    expected = _reference(json.loads(text))
    assert validation.json_shape(text) == expected  # the small path or the scan, by size
    assert validation.scan_shape(text[i:i + 999] for i in range(0, len(text), 999)) == expected


def test_too_many_json_values_under_an_unknown_key_are_refused(bundled_db: str, tmp_path: Path,
                                                               capsys) -> None:
    """A responses file with a million and one empty objects under a key no reader knows:
    before, parsed whole (63 MB of them peaked at 1.75 GB) and accepted."""
    document = _responses()
    document["notes"] = [{}] * (validation.MAX_JSON_ELEMENTS + 1)
    path = tmp_path / RESPONSES
    path.write_text(json.dumps(document, separators=(",", ":")))
    zipped = tmp_path / "responses.zip"
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(path, RESPONSES)
    before = snapshot(bundled_db)
    for given in (path, zipped):
        assert main(["import", str(given), "--db", bundled_db]) == 2
        err = capsys.readouterr().err
        assert "more than the 1,000,000 read at most" in err and err.count("\n") == 1, err
        assert snapshot(bundled_db) == before


def _body(size: int) -> AsyncIterator[bytes]:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(0, size, 65536):
            yield b"t" * 65536
    return chunks()


def test_a_request_body_is_refused_by_its_length_and_as_it_arrives() -> None:
    read = bounded.read_body
    assert asyncio.run(read(_body(0), declared="0", max_bytes=1024)) == b""
    for declared in ("2000", "abc", "-1", "\u0661\u0662"):  # Arabic-Indic 12
        with pytest.raises(bounded.BodyTooLarge):
            asyncio.run(read(_body(10), declared=declared, max_bytes=1024))
    with pytest.raises(bounded.BodyTooLarge):  # chunked: no length declared
        asyncio.run(read(_body(200 * 1024 * 1024), declared=None, max_bytes=1024))


def test_the_scores_csv_reader_refuses_a_fifo_without_waiting(bundled_db: str, tmp_path: Path,
                                                              capsys) -> None:
    fifo = tmp_path / "scores.csv"
    os.mkfifo(fifo)
    before = snapshot(bundled_db)
    done: list[int] = []
    worker = threading.Thread(target=lambda: done.append(
        main(["import", str(fifo), "--db", bundled_db])), daemon=True)
    worker.start()
    worker.join(60)
    if worker.is_alive():  # unblock the reader so the test run ends
        with open(fifo, "wb") as writer:
            writer.write(b"")
        worker.join(10)
    assert done == [2]
    err = capsys.readouterr().err
    assert "not a regular file" in err and err.count("\n") == 1, err
    assert snapshot(bundled_db) == before


def test_a_job_log_is_read_from_its_end_only(tmp_path: Path) -> None:
    from elitr_core.generation.jobs import LOG_TAIL_BYTES, log_tail

    log = tmp_path / "job.log"
    log.write_bytes(b"old line\n" * (LOG_TAIL_BYTES // 4) + b"10/10 done\r\n")
    assert log_tail(log, lines=1) == "10/10 done"
    (tmp_path / "fifo.log").unlink(missing_ok=True)
    os.mkfifo(tmp_path / "fifo.log")
    assert log_tail(tmp_path / "fifo.log") == ""


