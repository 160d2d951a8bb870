"""The trees a side-by-side benchmark runs: this one and, with ``--before REF``, a git worktree
of an older commit made in a temporary folder (every ``bench_*.py`` that takes ``--before``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def checkout(ref: str, tmp: Path) -> Path:
    """A detached worktree of ``ref`` at ``tmp/before`` (removed by :func:`clean_up`)."""
    path = tmp / "before"
    subprocess.run(["git", "-C", str(HERE), "worktree", "add", "--detach", str(path), ref],
                   check=True, capture_output=True)
    return path


def clean_up(tmp: Path, before: str | None) -> None:
    """Remove the ``--before`` worktree (when there is one) and the temporary folder."""
    if before:
        subprocess.run(["git", "-C", str(HERE), "worktree", "remove", "--force",
                        str(tmp / "before")], capture_output=True)
    shutil.rmtree(tmp, ignore_errors=True)
