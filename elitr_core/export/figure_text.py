"""Names in a figure are text, never markup.

Plotly draws a subset of HTML in every text of a figure (trace names, tick labels, hover
texts, titles, annotations): ``<a href>`` becomes a live link (``xlink:href`` in the SVG),
``<span style="font-size:90px">`` is drawn 90 px tall, ``<b>``, ``<i>``, ``<sup>`` change the
text. A model, evaluator, meeting or judge name comes from an imported file, so
:func:`plain_figure` escapes every string of a finished figure (its data and its layout) the
way Plotly reads them, ``&lt;`` for ``<`` and so on, keeping only the line breaks (``<br>``) and
the hover box's ``<extra>`` that the figure builders write themselves. Every figure a page
draws or offers for download passes through it (``ui.data.cached_figure``).

Hand-written: Plotly has no option to turn its pseudo-HTML off, and ``html.escape`` would also
escape the builders' own ``<br>``.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import plotly.graph_objects as go

#: the only markup the figure builders write themselves
_KEPT = re.compile(r"(<br>|<extra>|</extra>)")
_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def plain_text(text: str) -> str:
    """``text`` with every ``&``, ``<`` and ``>`` escaped, but the builders' own tags."""
    if not any(c in text for c in "&<>"):
        return text
    escaped = "".join(part if _KEPT.fullmatch(part) else part.translate(_ESCAPES)
                      for part in _KEPT.split(text))
    return text if escaped == text else escaped  # the same object: nothing to escape


def _plain(value: Any) -> Any:
    """``value`` with its strings escaped (:func:`plain_text`); the very same object where
    nothing changes, so that an unchanged figure is seen as such without a comparison."""
    if isinstance(value, str):
        return plain_text(value)
    if isinstance(value, dict):
        items = {key: _plain(item) for key, item in value.items()}
        return value if all(items[k] is value[k] for k in value) else items
    if isinstance(value, list | tuple):
        escaped = [_plain(item) for item in value]
        return value if all(e is v for e, v in zip(escaped, value, strict=True)) \
            else type(value)(escaped)
    if isinstance(value, np.ndarray) and value.dtype.kind in "OU":
        flat = value.ravel().tolist()
        escaped = [_plain(item) for item in flat]
        if all(e is v for e, v in zip(escaped, flat, strict=True)):
            return value
        return np.array(escaped, dtype=object).reshape(value.shape)
    return value


def plain_figure(fig: go.Figure) -> go.Figure:
    """``fig`` with every text (data and layout) shown as written, never read as markup: the
    figure itself when no text holds ``&``, ``<`` or ``>`` beyond the builders' own tags (no
    second validation), else an escaped copy."""
    tree = fig.to_dict()
    escaped = _plain(tree)
    return fig if escaped is tree else go.Figure(escaped)
