"""Plotly figures of the analysis pages: pure functions, tidy DataFrame in, ``go.Figure`` out.

No Streamlit here: the pages show the figures with ``st.plotly_chart`` and offer them as PNG and
SVG through :func:`figure_bytes`, which renders with kaleido 1.x in the system Chromium.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from elitr_core import settings
from elitr_core.errors import UserError
from elitr_core.export.display import p_text
from elitr_core.export.theme import MARGIN, THEME
from elitr_core.export.views import correlation_matrix
from elitr_core.vocab import setting_mode_label

FIGURE_FORMATS: tuple[str, ...] = ("png", "svg")
BROWSER_NAMES: tuple[str, ...] = ("chromium", "chromium-browser", "google-chrome",
                                  "google-chrome-stable")
BROWSER_PATHS: tuple[str, ...] = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
NO_BROWSER_MESSAGE = "figure export needs Chromium: apt-get install chromium"
TEMPLATE = THEME  # elitr_core.export.theme: the one chart theme, registered on import
WIDTH, HEIGHT = 900, 520


def _layout(fig: go.Figure, title: str, **kwargs: object) -> go.Figure:
    settings: dict[str, object] = {"template": TEMPLATE, "title": title, "width": WIDTH,
                                   "height": HEIGHT, "margin": MARGIN}
    fig.update_layout(**{**settings, **kwargs})
    return fig


def _ci_error(frame: pd.DataFrame, value: str = "mean") -> dict[str, object]:
    """Asymmetric error bars from ``ci_low``/``ci_high`` (missing bounds draw no bar)."""
    upper = (frame["ci_high"].astype("Float64") - frame[value]).astype(float).fillna(0)
    lower = (frame[value] - frame["ci_low"].astype("Float64")).astype(float).fillna(0)
    return {"type": "data", "symmetric": False, "array": upper.to_numpy(),
            "arrayminus": lower.to_numpy()}


def leaderboard_bars(board: pd.DataFrame, evaluator: str, split: str) -> go.Figure:
    """Mean score per model, one bar per setting-mode, std over seeds as error bars.

    ``board`` is the ``leaderboard`` export table; ``split`` is ``dev``, ``test2`` or ``mean``.
    """
    rows = board[(board["evaluator"] == evaluator) & (board["split"] == split)]
    if rows.empty:
        raise UserError(f"no {split} leaderboard row for {evaluator}: change the split")
    fig = go.Figure()
    for (setting, mode), group in rows.groupby(["setting", "mode"], sort=False):
        std = group["std"].astype("Float64").astype(float)
        fig.add_bar(
            x=group["model"], y=group["mean"], name=setting_mode_label(setting, mode),
            error_y={"type": "data", "array": std.fillna(0).to_numpy(),
                     "visible": bool(std.notna().any())},
            customdata=np.stack([group["n"], group["n_seeds"]], axis=-1),
            hovertemplate="%{x}<br>mean %{y:.2f}<br>n=%{customdata[0]}, "
                          "seeds=%{customdata[1]}<extra></extra>",
        )
    fig.update_yaxes(title="mean score (1-10)", range=[0, 10])
    return _layout(fig, f"Leaderboard ({evaluator}, {split})", barmode="group")


def correlation_heatmap(corr: pd.DataFrame, method: str) -> go.Figure:
    """Evaluator x evaluator heatmap of ``r``; hover shows the 95% CI, n and p."""
    r = correlation_matrix(corr, method)
    low, high = (correlation_matrix(corr, method, c) for c in ("ci_low", "ci_high"))
    n, p = (correlation_matrix(corr, method, c) for c in ("n", "p"))
    hover = [[
        f"{a} vs {b}<br>r = {r.loc[a, b]:.3f}<br>95% CI [{low.loc[a, b]:.3f}, {high.loc[a, b]:.3f}]"
        + ("" if a == b else f"<br>n = {n.loc[a, b]:.0f}, {p_text(p.loc[a, b])}")
        for b in r.columns] for a in r.index]
    # a pair without a correlation (a constant evaluator) is an empty cell, its note says why
    text = [["" if pd.isna(r.loc[a, b]) else f"{r.loc[a, b]:.2f}" if a == b
             or pd.isna(low.loc[a, b]) else
             f"{r.loc[a, b]:.2f}<br>[{low.loc[a, b]:.2f}, {high.loc[a, b]:.2f}]"
             for b in r.columns] for a in r.index]
    fig = go.Figure(go.Heatmap(
        z=r.to_numpy(), x=list(r.columns), y=list(r.index), zmin=-1, zmax=1,
        colorscale="RdBu", reversescale=False, text=text, texttemplate="%{text}",
        hovertext=hover, hoverinfo="text", colorbar={"title": method},
    ))
    fig.update_yaxes(autorange="reversed")
    return _layout(fig, f"{method.capitalize()} correlation (95% cluster-bootstrap CI)")


def pair_scatter(pairs: pd.DataFrame, a: str, b: str, *, jitter: float = 0.15,
                 seed: int = 0) -> go.Figure:
    """Scores of two evaluators on the responses both scored, jittered so ties stay visible.

    The jitter is uniform in ``[-jitter, jitter]`` from ``numpy.random.default_rng(seed)``, so
    the same call draws the same figure; hover shows the exact scores.
    """
    rng = np.random.default_rng(seed)
    fig = go.Figure()
    for model, group in pairs.groupby("model", sort=False):
        x, y = group[b].to_numpy(float), group[a].to_numpy(float)
        fig.add_scatter(
            x=x + rng.uniform(-jitter, jitter, len(x)), y=y + rng.uniform(-jitter, jitter, len(y)),
            mode="markers", name=str(model), marker={"size": 7, "opacity": 0.6},
            customdata=np.stack([x, y], axis=-1),
            hovertemplate=f"{b} %{{customdata[0]:g}}<br>{a} %{{customdata[1]:g}}"
                          f"<extra>{model}</extra>",
        )
    fig.add_scatter(x=[1, 10], y=[1, 10], mode="lines", name="y = x",
                    line={"dash": "dot", "color": "grey"}, hoverinfo="skip")
    fig.update_xaxes(title=b, range=[0.5, 10.5], dtick=1)
    fig.update_yaxes(title=a, range=[0.5, 10.5], dtick=1)
    return _layout(fig, f"{a} vs {b} ({len(pairs)} responses, jittered)")


def bias_plot(bias: pd.DataFrame) -> go.Figure:
    """Judge minus human mean per model with its cluster-bootstrap CI (``judge_bias`` output)."""
    judge, human = bias["judge"].iloc[0], bias["human"].iloc[0]
    fig = go.Figure(go.Scatter(
        x=bias["bias"], y=bias["model"], mode="markers", marker={"size": 11},
        error_x=_ci_error(bias, "bias"), customdata=bias["n"],
        hovertemplate="%{y}: %{x:+.2f} (n=%{customdata})<extra></extra>",
    ))
    fig.add_vline(x=0, line={"dash": "dot", "color": "grey"})
    fig.update_xaxes(title=f"{judge} - {human} (mean score difference)")
    return _layout(fig, f"Bias of {judge} relative to {human} per model (95% CI)",
                   height=max(300, 80 + 45 * len(bias)))


#: a bin with fewer responses shows its mean without a t interval (too wide to read)
MIN_BIN_FOR_INTERVAL = 5
#: the smallest text on a figure, in pixels
SMALL_TEXT_PX = 11


def calibration_plot(calibration: pd.DataFrame) -> go.Figure:
    """Score-bin calibration: reference bins on x, each evaluator's mean and 95% CI on y. The
    bin sizes n: under each bin when every evaluator has the same, else beside each point in
    its evaluator's colour (at least ``SMALL_TEXT_PX``). A bin with fewer than
    ``MIN_BIN_FOR_INTERVAL`` responses shows its mean as an open marker without an interval."""
    reference = calibration["reference"].iloc[0]
    same = bool(calibration.groupby("bin")["n"].nunique().le(1).all())
    fig = go.Figure()
    for evaluator, group in calibration.groupby("evaluator", sort=False):
        small = (group["n"] < MIN_BIN_FOR_INTERVAL).to_numpy()
        error = _ci_error(group)
        for side in ("array", "arrayminus"):
            error[side] = np.where(small, 0.0, np.asarray(error[side], dtype=float))
        fig.add_scatter(
            x=group["bin"], y=group["mean"], name=str(evaluator),
            mode="lines+markers" if same else "lines+markers+text",
            error_y=error, customdata=group["n"],
            marker={"symbol": ["circle-open" if s else "circle" for s in small], "size": 9},
            text=None if same else [f"n={n}" for n in group["n"]], textposition="top right",
            textfont={"size": SMALL_TEXT_PX},
            hovertemplate="bin %{x}: mean %{y:.2f} (n=%{customdata})<extra>"
                          f"{evaluator}</extra>",
        )
    fig.add_scatter(x=[1, 10], y=[1, 10], mode="lines", name="perfect calibration",
                    line={"dash": "dot", "color": "grey"}, hoverinfo="skip")
    sizes = calibration.groupby("bin", sort=True)["n"].first()
    fig.update_xaxes(title=f"{reference} score (bin)", tickmode="array",
                     tickvals=list(sizes.index), range=[0.5, 10.5], tickfont={"size": 12},
                     ticktext=[f"{b}<br>n={n}" if same else str(b) for b, n in sizes.items()])
    fig.update_yaxes(title="mean score of the evaluator (95% CI)", range=[0, 10.5])
    where = ("under each bin (the same for every evaluator)" if same
             else "beside each point, in its evaluator's colour")
    return _layout(fig, f"Score-bin calibration against {reference}", annotations=[{
        "text": f"n = responses in the bin, {where}; open marker: fewer than "
                f"{MIN_BIN_FOR_INTERVAL}, mean only (no interval)",
        "xref": "paper", "yref": "paper", "x": 0, "y": -0.24, "showarrow": False,
        "xanchor": "left", "font": {"size": SMALL_TEXT_PX}}],
        margin={"l": 60, "r": 20, "t": 60, "b": 90})


def breakdown_bars(breakdown: pd.DataFrame, facet: str) -> go.Figure:
    """Mean score per level of one facet (question type or answer position), one bar group per
    evaluator and model (``breakdown`` export table)."""
    rows = breakdown[breakdown["facet"] == facet]
    if rows.empty:
        raise UserError(f"no {facet} breakdown under these filters")
    fig = go.Figure()
    for (model, evaluator), group in rows.groupby(["model", "evaluator"], sort=False):
        fig.add_bar(x=group["level"], y=group["mean"], name=f"{model} ({evaluator})",
                    customdata=group["n"],
                    hovertemplate="%{x}: %{y:.2f} (n=%{customdata})<extra></extra>")
    fig.update_xaxes(title=facet.replace("_", " "))
    fig.update_yaxes(title="mean score (1-10)", range=[0, 10])
    return _layout(fig, f"Mean score by {facet.replace('_', ' ')}", barmode="group")


def find_chromium(names: Sequence[str] | None = None,
                  paths: Sequence[str] | None = None) -> str:
    """The Chromium kaleido should drive: ``$BROWSER_PATH``, else the first of ``names``
    (default :data:`BROWSER_NAMES`) on ``PATH``, else the first executable of ``paths``
    (default :data:`BROWSER_PATHS`).

    Raises
    ------
    UserError
        When ``BROWSER_PATH`` names no executable, or no browser is found.
    """
    explicit = settings.value(settings.BROWSER_PATH)
    if explicit:
        if os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return explicit
        raise UserError(f"BROWSER_PATH={explicit!r} is not an executable; {NO_BROWSER_MESSAGE}")
    for name in BROWSER_NAMES if names is None else names:
        found = shutil.which(name)
        if found:
            return found
    for path in BROWSER_PATHS if paths is None else paths:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise UserError(NO_BROWSER_MESSAGE)


_RENDERER_LOCK = threading.Lock()


def _warm_renderer() -> None:
    """Start kaleido's sync server once per process: one Chromium kept open for every later
    figure (a one-shot browser per figure took 4.4-8.6 s a download on the 2-core machine)."""
    import kaleido

    with _RENDERER_LOCK:
        if not kaleido._global_server.is_running():  # no public way to ask kaleido 1.x
            kaleido.start_sync_server(path=find_chromium(), mathjax=False, n=1,
                                      silence_warnings=True)


def figure_bytes(fig: go.Figure, fmt: str, *, scale: float = 2.0,
                 keep_warm: bool = False) -> bytes:
    """The figure as PNG or SVG, rendered by kaleido in the system Chromium.

    With ``keep_warm`` (the pages) the Chromium is started on the first call and kept for the
    process's later ones; otherwise (a command) a one-shot browser per call (about 3-4 s).
    MathJax is off since the machine may be offline and the figures use no TeX.

    Raises
    ------
    UserError
        For an unknown format, or when no Chromium is installed.
    """
    if fmt not in FIGURE_FORMATS:
        raise UserError(f"unknown figure format {fmt!r}: choose one of {', '.join(FIGURE_FORMATS)}")
    import kaleido
    from kaleido.errors import ChromeNotFoundError

    layout = fig.layout
    opts = {"format": fmt, "width": layout.width or WIDTH, "height": layout.height or HEIGHT,
            "scale": scale if fmt == "png" else 1}
    try:
        if keep_warm or kaleido._global_server.is_running():  # a warm browser serves all
            _warm_renderer()
            try:
                data = kaleido.calc_fig_sync(fig.to_dict(), opts=opts)
            except Exception:  # noqa: BLE001 - a warm browser that died: one fresh try below
                kaleido.stop_sync_server(silence_warnings=True)
                _warm_renderer()
                data = kaleido.calc_fig_sync(fig.to_dict(), opts=opts)
        else:
            data = kaleido.calc_fig_sync(fig.to_dict(), opts=opts,
                                         kopts={"path": find_chromium(), "mathjax": False})
    except ChromeNotFoundError:
        raise UserError(NO_BROWSER_MESSAGE) from None
    return data if isinstance(data, bytes) else str(data).encode()


__all__ = [
    "FIGURE_FORMATS",
    "NO_BROWSER_MESSAGE",
    "bias_plot",
    "breakdown_bars",
    "calibration_plot",
    "correlation_heatmap",
    "figure_bytes",
    "find_chromium",
    "leaderboard_bars",
    "pair_scatter",
]
