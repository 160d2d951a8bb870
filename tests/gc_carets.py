"""No ``ast.parse`` from inside the garbage collector: Python 3.11's error carets are left out
of a traceback formatted while a collection runs.

Formatting a traceback on Python 3.11 parses each line's source with ``ast.parse`` to place
the ``~~~^^^`` carets (``traceback._extract_caret_anchors_from_line_segment``). A finalizer
that logs a traceback (asyncio's "Task exception was never retrieved", SQLAlchemy's pool
resetting a connection the server ended: ``tests/pg_noise.py``) runs inside whatever the
cyclic collector interrupted; when that was itself an ``ast.parse`` (Streamlit compiling a
page script in an AppTest, pytest rewriting a module), Debian's Python 3.11.2 fails the outer
parse with "SystemError: AST constructor recursion depth mismatch" (CPython gh-106905, fixed in
3.11.5): an unrelated test fails, on whichever worker the garbage of an earlier test happened to
be collected. This is the cause; pg_noise only quiets one of the finalizers.

While a collection runs (``gc.callbacks``), the caret function returns no anchors: the
traceback is printed whole, with its lines underlined without the finer carets. Outside a
collection nothing changes. Installed for the test run by ``tests/conftest.py``.
"""

from __future__ import annotations

import gc
import traceback
from typing import Any

_ORIGINAL: Any = getattr(traceback, "_extract_caret_anchors_from_line_segment", None)
_collecting = 0  # collections running now (the callbacks come in start/stop pairs)


def _track(phase: str, info: dict[str, Any]) -> None:
    global _collecting
    _collecting += 1 if phase == "start" else -1


def _anchors(segment: str) -> Any:
    return None if _collecting > 0 else _ORIGINAL(segment)


def install() -> None:
    """Track collections and route caret anchoring through :func:`_anchors` (once; a Python
    without the caret function, 3.10 and older, is left as it is)."""
    if _ORIGINAL is None or _track in gc.callbacks:
        return
    gc.callbacks.append(_track)
    traceback._extract_caret_anchors_from_line_segment = _anchors  # type: ignore[attr-defined]


def collecting() -> bool:
    """Whether a garbage collection is running now (in this process)."""
    return _collecting > 0
