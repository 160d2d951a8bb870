"""What the pages pick first, and each page's declaration of the views it shows by default.

A page declares, once and before it draws anything, the views a first visit of each of its
tabs computes under the default choices::

    @declare_views
    def default_views(d: Defaults) -> Iterator[View]:
        board = export_table("leaderboard", d.flt)
        yield FIGURE, lambda: cached_figure(figures.leaderboard_bars, board, ...)
        ...

``ui.warm`` reads every page's declaration (:func:`page_views`: it runs the page file only
up to ``declare_views``, which then stops it) and computes the views at server start, so the
cache keys are the page's own. ``tests/pages/test_warm.py`` visits every tab of every page
after the warm-up and fails on a view computed anew or a page without a declaration.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from elitr_core.export.views import DEFAULT_JUDGE  # one default judge, core and pages

if TYPE_CHECKING:
    from elitr_core.data.browse import ScoreFilter

DEFAULT_HUMAN = "gold-human"
DEFAULT_MODEL = "GPT-4"
#: the Judge audit's planner and sampling-design defaults
DEFAULT_HALF_WIDTH = 0.5
DEFAULT_BUDGET = 100

View = tuple[str, Callable[[], Any]]
"""(tab label, or the page title for a page without tabs; the step computing its views)."""
Views = Callable[["Defaults"], Iterable[View]]


@dataclass(frozen=True)
class Defaults:
    """The default choices of a first visit: the sidebar's default filters and the evaluators
    they keep (computed by ``ui.warm``)."""

    flt: ScoreFilter
    evaluators: list[str] = field(default_factory=list)
    judge: str = DEFAULT_JUDGE
    human: str = DEFAULT_HUMAN
    model: str = DEFAULT_MODEL

    @cached_property
    def model_flt(self) -> ScoreFilter:
        """The filters narrowed to the default model (the drilldown's first view)."""
        return replace(self.flt, models=(self.model,))

    @property
    def pair(self) -> bool:
        """Whether the default judge and human both have scores."""
        return self.judge in self.evaluators and self.human in self.evaluators


class Declared(Exception):  # noqa: N818 - a signal, not an error
    """Stops a page file read by :func:`page_views` once it has declared its views."""


_READING = threading.local()


def declare_views(views: Views) -> Views:
    """Declare a page's default views (a decorator; see the module docstring). In a page run
    it returns ``views`` unchanged; while :func:`page_views` reads the page it records them
    and stops the page there, before anything is drawn."""
    found = getattr(_READING, "found", None)
    if found is not None:
        found.append(views)
        raise Declared
    return views


def page_views(path: Path) -> Views | None:
    """The views the page file ``path`` declares, None when it declares none. The file runs
    as Streamlit runs it (``__name__ == "__main__"``, so a function it caches has the page's
    own cache key) up to its declaration; a file without one is not run at all."""
    source = path.read_text(encoding="utf-8")
    if "@declare_views" not in source:
        return None
    found: list[Views] = []
    _READING.found = found
    try:
        exec(compile(source, str(path), "exec"), {"__name__": "__main__",  # noqa: S102
                                                   "__file__": str(path)})
    except Declared:
        return found[0]
    finally:
        _READING.found = None
    return None
