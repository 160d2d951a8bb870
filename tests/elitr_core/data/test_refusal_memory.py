"""Refusing a file near the size limits stays under 300 MB of memory (issue 27, item 4).

The JSON nesting-depth check ran a regular expression whose memory grew with every escape in
a string: a 63 MB file of ``\\n`` escapes (under the 64 MB limit) peaked at 3.8 GB, the same file
zipped (61 KB) too, 60 MB of ``\\u00e9`` escapes at 1.3 GB. Each input kind is refused here by
the real command in its own process, whose peak resident memory is read with the resource
module (``ru_maxrss`` of the finished child).
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from elitr_core.data.validation import MAX_FILE_BYTES

LIMIT_MB = 300
RESPONSES = "elitr-bench-qa_dev_st_gpt-4-eval.json"
ROOT = Path(__file__).resolve().parents[3]
#: runs the command given after it and prints its peak resident memory (kB) and exit status
MEASURE = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], "
           "capture_output=True, text=True); print(resource.getrusage("
           "resource.RUSAGE_CHILDREN).ru_maxrss, done.returncode); "
           "print(done.stderr.strip()[-300:])")


def _escapes(escape: bytes) -> bytes:
    """A JSON document just under the file limit whose one string is all ``escape``."""
    count = (MAX_FILE_BYTES - 1024) // len(escape)
    return b'{"split": "dev", "x": "' + escape * count + b'"}'


def _empty_objects() -> bytes:
    """Issue 41: 63 MB of ``[{},{},...]`` under a key no reader knows (1.75 GB before)."""
    count = (MAX_FILE_BYTES - 1024) // 3
    return b'{"split": "dev", "notes": [' + b"{}," * count + b'{}]}'


def _zipped(data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(RESPONSES, data)
    return buffer.getvalue()


def _scores_line() -> bytes:
    return b"meeting,question_id,split,setting,mode,model,evaluator,score\n" + \
        b"x" * (MAX_FILE_BYTES - 100)


#: (file name, its bytes) per input kind; every one is refused
KINDS: dict[str, tuple[str, Callable[[], bytes]]] = {
    "json of \\n escapes": (RESPONSES, lambda: _escapes(b"\\n")),
    "json of \\u00e9 escapes": (RESPONSES, lambda: _escapes(b"\\u00e9")),
    "json of backslash pairs": (RESPONSES, lambda: _escapes(b"\\\\")),
    "json nested 63 MB deep": (RESPONSES, lambda: b"[" * (MAX_FILE_BYTES - 1024)),
    "zip of \\n escapes": ("archive.zip", lambda: _zipped(_escapes(b"\\n"))),
    "json of 63 MB of empty objects": (RESPONSES, _empty_objects),
    "zip of 63 MB of empty objects": ("archive.zip", lambda: _zipped(_empty_objects())),
    "scores csv of one endless line": ("scores.csv", _scores_line),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_refusal_stays_under_300_mb(kind: str, tmp_path: Path,
                                      schema_sqlite_template: Path) -> None:
    name, build = KINDS[kind]
    path = tmp_path / name
    path.write_bytes(build())
    # a database at the newest schema (a copy), so the child refuses the file without first
    # running every migration on a new one
    shutil.copy(schema_sqlite_template, tmp_path / "db.sqlite")
    command = [sys.executable, "-c", MEASURE, sys.executable, "-m", "elitr_core", "import",
               str(path), "--db", f"sqlite:///{tmp_path / 'db.sqlite'}"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600,
                          check=True)
    first, _, stderr = done.stdout.partition("\n")
    peak_kb, status = map(int, first.split())
    print(f"{kind}: peak {peak_kb / 1024:.0f} MB")  # -s shows the figures
    assert status == 2 and stderr.startswith("error: ") and "Traceback" not in stderr, stderr
    assert peak_kb / 1024 < LIMIT_MB, f"{kind}: {peak_kb / 1024:.0f} MB; {stderr}"
