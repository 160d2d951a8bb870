"""A table as a page shows it, and its "as shown" downloads rendered from that same table.

A page's grid and the CSV/JSON/LaTeX under it come from one :class:`ShownTable`
(``ui.tables.show_table`` builds it, draws it and offers its downloads): the same columns in
the same order under the same headings (the labels of :mod:`elitr_core.export.column_labels`),
the same rows in the same order, and in LaTeX the same text in each cell as the page (its
rounding: ``0.123`` where the export's LaTeX writes ``0.12``). CSV and JSON keep each number's
full precision; an interval the page shows as one ``[low, high]`` column is that text there
too. The export contract's own table, with its names, is the "Full table" download
(:func:`elitr_core.export.formats.render`, byte-identical to the CLI).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from elitr_core.errors import UserError
from elitr_core.export.column_labels import column_labels
from elitr_core.export.display import shown_texts

#: the formats of an "as shown" download
SHOWN_FORMATS = ("csv", "json", "latex")


@dataclass(frozen=True)
class ShownTable:
    """What the grid draws: ``data`` (the frame the grid gets, with an interval's text column
    beside its bounds), the ``columns`` it shows in their order (its index first when
    ``index``) and the heading of each (``labels``: a column's display name unless given)."""

    data: pd.DataFrame
    columns: tuple[str, ...]
    index: bool = False
    given_labels: dict[str, str] = field(default_factory=dict)

    def _with_index(self) -> pd.DataFrame:
        if not self.index:
            return self.data
        return self.data.reset_index(names=self.index_name)

    @property
    def index_name(self) -> str:
        """The index column's name (the index's own, ``index`` when it has none)."""
        return str(self.data.index.name) if self.data.index.name is not None else "index"

    @property
    def shown_columns(self) -> list[str]:
        """Every column shown, in order: the index first (when shown), then ``columns``."""
        return [self.index_name, *self.columns] if self.index else list(self.columns)

    @property
    def labels(self) -> dict[str, str]:
        """Each shown column's heading."""
        return {**column_labels(self.shown_columns), **self.given_labels}

    def frame(self) -> pd.DataFrame:
        """The table shown: its columns in order, under their headings, with their values."""
        labels = self.labels
        shown = self._with_index()[self.shown_columns].reset_index(drop=True)
        shown.columns = [labels[c] for c in self.shown_columns]
        return shown

    def texts(self) -> list[list[str]]:
        """Each shown cell's text, row by row, as the page shows it."""
        full = self._with_index()
        positions = [list(map(str, full.columns)).index(c) for c in self.shown_columns]
        return [[row[i] for i in positions] for row in shown_texts(full)]

    def render(self, fmt: str) -> Any:
        """The table shown as CSV, JSON or LaTeX (:data:`SHOWN_FORMATS`)."""
        from elitr_core.export.formats import to_csv, to_json, to_latex

        if fmt == "csv":
            return to_csv(self.frame())
        if fmt == "json":
            return to_json(self.frame())
        if fmt == "latex":
            return to_latex(self.frame(), texts=self.texts())
        raise UserError(f"unknown format {fmt!r}: choose one of {', '.join(SHOWN_FORMATS)}")
