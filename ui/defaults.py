"""What the pages pick first: the default judge, human, model and audit settings, and a first
visit's choices (:class:`Defaults`) under which each analysis page computes its default views
(``ui.analysis.<page>.default_views``; ``ui.warm`` computes them at server start)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
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
