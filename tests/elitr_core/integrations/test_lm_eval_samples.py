"""lm-evaluation-harness output read through the bounded reader (issue 41, item 1).

Written by hand in lm_eval's shape (``test_lm_eval.py`` runs the real lm_eval): the results
file beside the samples is read only as a regular file inside their folder, and the JSON of
both is bounded before it is parsed. Each refusal is one line with nothing written, on SQLite
and PostgreSQL.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from elitr_core.cli.main import main
from elitr_core.data.validation import MAX_JSON_ELEMENTS
from tests.dbstate import snapshot
from tests.elitr_core.run_helpers import MEETINGS

STAMP = "2026-11-27T10-00-00.000001"
SAMPLES = f"samples_elitr_bench_{STAMP}.jsonl"
RESULTS = f"results_{STAMP}.json"


def _line(number: int, **extra: object) -> str:
    doc = {"id": f"{MEETINGS[0]}/q{number}", "split": "test2", "setting": "qa", "mode": "st",
           "language": "en"}
    return json.dumps({"doc_id": number, "doc": doc, "filtered_resps": [f"answer {number}"],
                       **extra})


def _results(**extra: object) -> str:
    return json.dumps({"model_name": "bounded-model", "lm_eval_version": "0.4.13",
                       "config": {"model": "hf", "model_args": {"pretrained": "bounded-model"}},
                       **extra})


def _folder(tmp_path: Path, name: str, lines: list[str]) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / SAMPLES).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_the_results_file_is_read_only_as_a_regular_file_inside_the_folder(
        bundled_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outside = tmp_path / RESULTS
    outside.write_text(_results(), encoding="utf-8")
    lines = [_line(1), _line(2)]
    cases = {
        "a link to /dev/zero": (lambda f: (f / RESULTS).symlink_to("/dev/zero"),
                                "links to /dev/zero, outside the folder"),
        "a FIFO": (lambda f: os.mkfifo(f / RESULTS), "is a named pipe (FIFO), not a regular"),
        "a link out of the folder": (lambda f: (f / RESULTS).symlink_to(outside),
                                     f"links to {outside}, outside the folder"),
        "a million values": (lambda f: (f / RESULTS).write_text(_results(
            notes=[{}] * (MAX_JSON_ELEMENTS + 1))), "more than the 1,000,000 read at most"),
    }
    before = snapshot(bundled_db)
    for case, (make, expected) in cases.items():
        folder = _folder(tmp_path, case.replace(" ", "-").replace("/", ""), lines)
        make(folder)
        started = time.monotonic()
        assert main(["import", str(folder / SAMPLES), "--db", bundled_db]) == 2, case
        assert time.monotonic() - started < 30, case  # never reads for ever or hangs
        err = capsys.readouterr().err
        assert expected in err and err.count("\n") == 1 and "Traceback" not in err, (case, err)
        assert snapshot(bundled_db) == before, case


def test_too_many_values_in_the_samples_are_refused(
        bundled_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _folder(tmp_path, "samples", [_line(1), _line(2, notes=[{}] * MAX_JSON_ELEMENTS)])
    (folder / RESULTS).write_text(_results(), encoding="utf-8")
    before = snapshot(bundled_db)
    assert main(["import", str(folder / SAMPLES), "--db", bundled_db]) == 2
    err = capsys.readouterr().err
    assert "more than the 1,000,000 read at most" in err and err.count("\n") == 1, err
    assert snapshot(bundled_db) == before


def test_a_results_file_linked_inside_the_folder_imports(
        bundled_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _folder(tmp_path, "samples", [_line(1), _line(2)])
    (folder / "kept.json").write_text(_results(), encoding="utf-8")
    (folder / RESULTS).symlink_to(folder / "kept.json")
    assert main(["import", str(folder / SAMPLES), "--db", bundled_db]) == 0
    assert "2 responses, 1 runs" in capsys.readouterr().out
