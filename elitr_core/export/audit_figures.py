"""Figures of the Judge audit page: tidy judge-audit tables in, ``go.Figure`` out."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from elitr_core.errors import DegenerateDataError
from elitr_core.export.figures import _ci_error, _layout

#: (label, mean column, low column, high column) of the estimates the ppi figure compares.
PPI_ESTIMATES: tuple[tuple[str, str, str | None, str | None], ...] = (
    ("judge only", "judge_mean", None, None),
    ("human only", "human_mean", "human_ci_low", "human_ci_high"),
    ("PPI", "ppi_mean", "ppi_ci_low", "ppi_ci_high"),
    ("PPI++", "ppipp_mean", "ppipp_ci_low", "ppipp_ci_high"),
)


def _as_float(series: pd.Series) -> np.ndarray:
    return series.astype("Float64").astype(float).to_numpy()


def ppi_estimates(ppi: pd.DataFrame) -> go.Figure:
    """Per model, the judge mean and the human-only, PPI and PPI++ means with 95% intervals.

    ``ppi`` is the ``ppi`` export table; models without human scores are left out.
    """
    rows = ppi[ppi["n_labelled"] >= 2]
    if rows.empty:
        raise DegenerateDataError("no model has 2 human scores: nothing to compare")
    labels = rows["model"].astype(str) + (
        " (" + rows["split"].astype(str) + " " + rows["setting"].astype(str) + "-"
        + rows["mode"].astype(str) + ")" if rows[["split", "setting", "mode"]]
        .drop_duplicates().shape[0] > 1 else "")
    fig = go.Figure()
    for name, mean, low, high in PPI_ESTIMATES:
        values = _as_float(rows[mean])
        error = None
        if low and high:
            error = {"type": "data", "symmetric": False,
                     "array": np.nan_to_num(_as_float(rows[high]) - values),
                     "arrayminus": np.nan_to_num(values - _as_float(rows[low]))}
        fig.add_scatter(x=labels, y=values, name=name, mode="markers", error_y=error,
                        marker={"size": 10, "symbol": "diamond" if low is None else "circle"})
    fig.update_yaxes(title="mean score (1-10) with 95% interval")
    return _layout(fig, "Human-corrected leaderboard", scattermode="group")


def design_widths(designs: pd.DataFrame) -> go.Figure:
    """Mean interval width per sampling design and model (coverage in the hover)."""
    rows = designs[designs["mean_width"].notna()]
    fig = go.Figure()
    for design, group in rows.groupby("design", sort=False):
        fig.add_bar(x=group["model"], y=group["mean_width"], name=str(design),
                    customdata=np.stack([group["coverage"], group["mean_labelled"]], axis=-1),
                    hovertemplate="%{x}<br>width %{y:.2f}<br>coverage %{customdata[0]:.3f}"
                                  "<br>human scores %{customdata[1]:.1f}<extra></extra>")
    budget = int(designs["budget"].iloc[0]) if len(designs) else 0
    fig.update_yaxes(title="mean width of the 95% interval")
    return _layout(fig, f"What {budget} human scores buy, by design", barmode="group")


def recalibration_plot(scores: pd.DataFrame) -> go.Figure:
    """Mean human score per judge score bin, before and after recalibration, with the diagonal.

    ``scores`` is :func:`~elitr_core.stats.recalibration.recalibrated_scores`; bins are the
    scores rounded half up.
    """
    fig = go.Figure()
    fig.add_scatter(x=[1, 10], y=[1, 10], mode="lines", name="perfect calibration",
                    line={"dash": "dot", "color": "grey"})
    lines = (("before (judge)", "judge"), ("after, least squares", "recalibrated"),
             ("after, least absolute", "recalibrated_l1"))
    for name, column in lines:
        if column not in scores:
            continue
        bins = np.floor(scores[column].to_numpy(float) + 0.5)
        means = scores.groupby(bins)["human"].agg(["mean", "size"])
        fig.add_scatter(x=means.index, y=means["mean"], name=name, mode="lines+markers",
                        customdata=means["size"],
                        hovertemplate="score %{x}<br>human mean %{y:.2f}<br>"
                                      "n=%{customdata}<extra></extra>")
    fig.update_xaxes(title="score given (rounded)", range=[0.5, 10.5], dtick=1)
    fig.update_yaxes(title="mean human score", range=[0.5, 10.5])
    return _layout(fig, "Calibration before and after isotonic recalibration")


def effects_forest(effects: pd.DataFrame) -> go.Figure:
    """Each judge effect's estimate with its 95% interval, one row per effect and level."""
    labels = effects["effect"].astype(str) + ": " + effects["level"].astype(str)
    fig = go.Figure(go.Scatter(
        x=effects["estimate"], y=labels, mode="markers", marker={"size": 10},
        error_x=_ci_error(effects, "estimate"),
        customdata=effects["n"], hovertemplate="%{y}<br>%{x:.3f}<br>n=%{customdata}"
                                               "<extra></extra>"))
    fig.add_vline(x=0, line={"dash": "dot", "color": "grey"})
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title="estimate (residual = judge - human)")
    return _layout(fig, "Judge effects", margin={"l": 220, "r": 20, "t": 60, "b": 60})


def turn_plot(turn: pd.DataFrame) -> go.Figure:
    """Kendall's tau of score against turn index per model, one series per setting."""
    fig = go.Figure()
    for (setting, evaluator), group in turn.groupby(["setting", "evaluator"], sort=True):
        fig.add_scatter(x=group["model"], y=group["tau"], mode="markers",
                        name=f"{setting}-mt ({evaluator})", error_y=_ci_error(group, "tau"),
                        marker={"size": 10})
    fig.add_hline(y=0, line={"dash": "dot", "color": "grey"})
    fig.update_yaxes(title="Kendall tau (score vs turn)")
    return _layout(fig, "Score along the conversation", scattermode="group")


def length_controlled_plot(table: pd.DataFrame) -> go.Figure:
    """Each model's raw judge mean and its length-controlled score (with the interval), and
    the human mean where there is one; best length-controlled score at the top."""
    rows = table.iloc[::-1]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=rows["judge_mean"], y=rows["model"], mode="markers",
                             name="judge mean (raw)", marker={"symbol": "circle-open"}))
    fig.add_trace(go.Scatter(x=rows["lc_mean"], y=rows["model"], mode="markers",
                             name="length-controlled", error_x=_ci_error(rows, "lc_mean")))
    human = rows[rows["human_mean"].notna()]
    if len(human):
        fig.add_trace(go.Scatter(x=human["human_mean"], y=human["model"], mode="markers",
                                 name="human mean", marker={"symbol": "diamond"}))
    fig.update_xaxes(title="score (1-10)")
    return _layout(fig, "Judge score at a common length", height=max(300, 40 * len(rows) + 140))


def sequence_plot(sequences: pd.DataFrame, target: str) -> go.Figure:
    """Per model, the confidence sequence (solid) and the fixed-n t interval (dotted) of
    ``target`` against the number of scored responses (``study-monitor-sequences``)."""
    rows = sequences[sequences["target"] == target]
    if rows.empty:
        raise DegenerateDataError(f"no {target} sequence yet: no scored response, or no judge "
                                  "score for the bias and PPI")
    fig = go.Figure()
    colours = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
    for i, (model, group) in enumerate(rows.groupby("model", sort=True)):
        colour = colours[i % len(colours)]
        n = group["n"].to_numpy()
        for low, high, dash, what in (("cs_low", "cs_high", "solid", "sequence"),
                                      ("fixed_low", "fixed_high", "dot", "fixed-n t")):
            for column, legend in ((low, True), (high, False)):
                fig.add_scatter(x=n, y=_as_float(group[column]), mode="lines",
                                name=f"{model}: {what}", legendgroup=f"{model}{what}",
                                showlegend=legend, line={"color": colour, "dash": dash})
    fig.update_xaxes(title="scored responses")
    fig.update_yaxes(title=f"{target} (95%)")
    return _layout(fig, f"Confidence sequence and fixed-n interval: {target}")
