"""tests/gc_carets.py: a finalizer that formats a traceback while the collector interrupts an
``ast.parse`` no longer fails that parse (Debian's Python 3.11.2, CPython gh-106905)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import traceback
from pathlib import Path

from tests import gc_carets
from tests.tiers import ROOT

# Objects in reference cycles whose finalizer formats a traceback (as asyncio's unretrieved
# task exception and SQLAlchemy's pool log do), collected while ast.parse builds a large tree.
SCRIPT = textwrap.dedent("""
    import ast, gc, io, sys, traceback
    sys.path.insert(0, sys.argv[1])
    if sys.argv[2] == "guarded":
        from tests import gc_carets
        gc_carets.install()

    class Noisy:
        def __init__(self):
            self.me = self
        def __del__(self):
            try:
                raise ValueError("finalizer")
            except ValueError:
                io.StringIO().write(traceback.format_exc())

    source = "\\n".join(f"x{i} = f(a[{i}] + b.c * d(e, g[{i}:{i} + 1]))" for i in range(800))
    gc.set_threshold(50)
    failed = 0
    for _ in range(5):
        for _ in range(200):
            Noisy()
        try:
            ast.parse(source)
        except SystemError:
            failed += 1
    print(failed)
""")


def parses_failed(folder: Path, mode: str) -> int:
    """How many of the 5 parses failed (a file: the traceback needs its lines' source)."""
    script = folder / "collect_while_parsing.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script), str(ROOT), mode], capture_output=True,
                          text=True, timeout=120, check=True)
    return int(done.stdout.split()[-1])


def test_no_parse_fails_when_the_collector_formats_tracebacks(tmp_path: Path) -> None:
    assert parses_failed(tmp_path, "guarded") == 0
    if sys.version_info[:3] < (3, 11, 5):  # the bug is there: the scenario does trigger it
        assert parses_failed(tmp_path, "plain") == 5


def test_tracebacks_outside_a_collection_keep_their_carets() -> None:
    gc_carets.install()
    assert not gc_carets.collecting()
    try:
        {"a": 1}["b"] + 1  # noqa: B018 (a subscript inside an expression: carets under it)
    except KeyError:
        formatted = traceback.format_exc()
    assert "~~~^^^^^" in formatted
