"""How far the start-up warm-up (:mod:`ui.warm`) has got, for the pages: a first visit
while it runs says so and names the pages not ready yet. Apart from :mod:`ui.warm` because
the sidebar (:mod:`ui.filters`) reads it while the warm-up reads the sidebar's defaults."""

from __future__ import annotations

from pathlib import Path


class _Progress:
    """What the warm-up has computed so far (read by the pages: a first visit while it runs
    says so and names the pages that are ready)."""

    def __init__(self) -> None:
        self.running = False
        self.pending: list[str] = []  # page files whose first view is not computed yet


PROGRESS = _Progress()


def page_title(file: str) -> str:
    """A page file's menu title ("pages/judge_audit.py" -> "Judge audit")."""
    return Path(file).stem.replace("_", " ").capitalize()


def warming_line() -> str:
    """One sentence while the start-up warm-up has pages left ("" when it has none)."""
    if not PROGRESS.running or not PROGRESS.pending:
        return ""
    return ("Warming up: the server is still computing the analysis pages' first views, so "
            "this page may take a few seconds. Not ready yet: "
            + ", ".join(page_title(f) for f in PROGRESS.pending) + ".")
