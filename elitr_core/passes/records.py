"""What generation runs and judge passes record about themselves, and how they report progress.

The schema belongs to ``db/``: a run's progress, failures, process and versions live in the
JSON ``Run.config`` (generation) or ``Evaluator.config`` (LLM judges), never in new columns.
"""

from __future__ import annotations

import os
import platform
import re
import socket
import sys
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

#: Seed used when neither the user nor the judged run gives one (the protocol's first seed).
DEFAULT_SEED = 2023
#: Failures kept per run or judge (the oldest are dropped).
MAX_FAILURES = 20
#: Characters of a failure's message kept.
MAX_ERROR_CHARS = 500
#: Packages whose versions are stored with each run (looked up without importing them).
TRACKED_PACKAGES: tuple[str, ...] = ("openai", "torch", "transformers", "tokenizers", "vllm")


class Progress(Protocol):
    """Where runs report progress (the CLI draws a tqdm bar; tests may count)."""

    def start(self, total: int, label: str) -> None:
        """``total`` answers are about to be asked."""

    def advance(self, count: int = 1) -> None:
        """``count`` more answers are stored."""

    def close(self) -> None:
        """The run ended (successfully or not)."""


class NullProgress:
    """A progress sink that reports nothing."""

    def start(self, total: int, label: str) -> None:
        """Ignore."""

    def advance(self, count: int = 1) -> None:
        """Ignore."""

    def close(self) -> None:
        """Ignore."""


def now_iso() -> str:
    """The current UTC time as ISO-8601 text (JSON-friendly)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def library_versions() -> dict[str, str]:
    """Python, elitr_core and the installed versions of :data:`TRACKED_PACKAGES`."""
    from elitr_core import __version__

    versions = {"python": platform.python_version(), "elitr_core": __version__}
    installed = installed_versions()
    for package in TRACKED_PACKAGES:
        if (version := installed.get(_normalized(package))) is not None:
            versions[package] = version
    return versions


def installed_versions() -> dict[str, str]:
    """Installed distributions' versions by normalized name, read from their folder names.

    A wheel installs ``NAME-VERSION.dist-info`` (setuptools' develop mode
    ``NAME-VERSION[-pyX.Y].egg-info``), so listing the ``sys.path`` folders gives every version
    in a millisecond; ``importlib.metadata.version`` parses each package's whole METADATA file
    (transformers' holds its README) and took 80 ms for five packages, before a run's first
    request.
    """
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as folder:
                names = [item.name for item in folder]
        except OSError:
            continue
        for name in names:
            stem, dot, kind = name.rpartition(".")
            if dot and kind in ("dist-info", "egg-info") and "-" in stem:
                package, version = stem.split("-")[:2]
                found.setdefault(_normalized(package), version)
    return found


def _normalized(name: str) -> str:
    """A distribution name as PEP 503 compares them (``Foo_bar.baz`` -> ``foo-bar-baz``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def process_info() -> dict[str, Any]:
    """This process's id and host, so a page can tell a live run from a killed one."""
    return {"pid": os.getpid(), "host": socket.gethostname()}


def with_failure(
    failures: list[dict[str, Any]] | None, error: BaseException
) -> list[dict[str, Any]]:
    """``failures`` plus one entry for ``error`` (time and one-line message), capped.

    The message may quote a server (its error text): it is stored by the storage policy of
    model text, within :data:`MAX_ERROR_CHARS` (a NUL kept in the JSON config would make
    PostgreSQL refuse the config's next update, which compares it as ``jsonb``).
    """
    # here, not at the top: the CLI's parser reads DEFAULT_SEED and starts without SQLAlchemy
    from elitr_core.data.model_text import storable

    message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if isinstance(error, KeyboardInterrupt):
        message = "interrupted (Ctrl-C or a stop signal); rerun the same command to resume"
    entry = {"at": now_iso(), "error": storable(message, MAX_ERROR_CHARS).text,
             "type": type(error).__name__}
    return [*(failures or []), entry][-MAX_FAILURES:]


def usage_totals(metas: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Summed token usage of completions' metadata (missing counts count as 0)."""
    totals = {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0}
    for meta in metas:
        for key in totals:
            value = meta.get(key)
            if isinstance(value, int):
                totals[key] += value
    return totals


def completion_meta(completion: Any, **extra: Any) -> dict[str, Any]:
    """The JSON metadata stored with one answer: usage, finish reason, backend details."""
    meta: dict[str, Any] = {
        "prompt_tokens": completion.prompt_tokens,
        "completion_tokens": completion.completion_tokens,
        "cached_tokens": completion.cached_tokens,
        "finish_reason": completion.finish_reason,
    }
    meta.update({k: v for k, v in completion.metadata.items() if _json_scalar(v)})
    meta.update(extra)
    meta["at"] = now_iso()
    return meta


def _json_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)
