"""Names in figures are text (issue 27, item 2): ``plain_figure`` escapes the pseudo-HTML
Plotly would draw, keeps the builders' own line breaks, and leaves a figure without any alone."""

from __future__ import annotations

import pandas as pd
import pytest

from elitr_core.export import figures
from elitr_core.export.figure_text import plain_figure, plain_text

LINK = '<a href="https://example.org/">GPT-5</a>'


@pytest.mark.parametrize(("text", "shown"), [
    (LINK, "&lt;a href=\"https://example.org/\"&gt;GPT-5&lt;/a&gt;"),
    ('<span style="font-size:90px">x</span>', '&lt;span style="font-size:90px"&gt;x&lt;/span&gt;'),
    ("A &amp; B", "A &amp;amp; B"), ("a<br>b", "a<br>b"), ("%{x}<extra>m</extra>",
                                                          "%{x}<extra>m</extra>"),
    ("<BR>", "&lt;BR&gt;"), ("plain", "plain"),
])
def test_plain_text(text: str, shown: str) -> None:
    assert plain_text(text) == shown


def _board(models: list[str], evaluator: str = "gpt-4") -> pd.DataFrame:
    return pd.DataFrame({"evaluator": evaluator, "split": "dev", "setting": "qa", "mode": "st",
                         "model": models, "mean": [5.0] * len(models),
                         "std": [None] * len(models), "n": 3, "n_seeds": 1})


def test_every_text_of_a_figure_is_escaped() -> None:
    fig = figures.leaderboard_bars(_board([LINK, "GPT-4"], LINK), LINK, "dev")
    plain = plain_figure(fig)
    assert list(plain.data[0].x) == [plain_text(LINK), "GPT-4"]
    assert plain.layout.title.text == f"Leaderboard ({plain_text(LINK)}, dev)"
    assert plain.data[0].hovertemplate == fig.data[0].hovertemplate  # its own <br> kept


def test_a_figure_without_markup_is_returned_as_it_is() -> None:
    fig = figures.leaderboard_bars(_board(["GPT-4", "LongAlign-7B"]), "gpt-4", "dev")
    assert plain_figure(fig) is fig
