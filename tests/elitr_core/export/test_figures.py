"""Figure builders (what each trace holds) and PNG/SVG export through kaleido + Chromium."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from elitr_core.errors import UserError
from elitr_core.export import figures


def _calibration() -> pd.DataFrame:
    return pd.DataFrame({
        "reference": "gold-human", "evaluator": ["gpt-4"] * 3 + ["prometheus"] * 3,
        "bin": [1, 5, 10] * 2, "n": [4, 7, 1, 4, 7, 1],
        "mean": [2.0, 5.5, 9.0, 3.0, 5.0, 6.0],
        "ci_low": pd.array([1.0, 5.0, None, 2.0, 4.0, None], dtype="Float64"),
        "ci_high": pd.array([3.5, 6.0, None, 4.0, 6.5, None], dtype="Float64"),
    })


def test_calibration_plot_bins_intervals_and_sizes() -> None:
    fig = figures.calibration_plot(_calibration())
    gpt4 = fig.data[0]
    assert gpt4.name == "gpt-4" and list(gpt4.x) == [1, 5, 10] and list(gpt4.y) == [2, 5.5, 9]
    # 4 and 1 responses: the mean without an interval, as an open marker
    assert list(gpt4.error_y.array) == [0.0, 0.5, 0.0]
    assert list(gpt4.error_y.arrayminus) == [0.0, 0.5, 0.0]
    assert list(gpt4.marker.symbol) == ["circle-open", "circle", "circle-open"]
    assert list(fig.layout.xaxis.tickvals) == [1, 5, 10]
    # every evaluator has the same bin sizes: written once under each bin, readable
    assert [t.split("n=")[1] for t in fig.layout.xaxis.ticktext] == ["4", "7", "1"]
    assert fig.layout.xaxis.tickfont.size >= 11 and gpt4.text is None
    assert fig.layout.annotations[0].font.size >= 11


def test_calibration_plot_labels_each_evaluators_bin_sizes() -> None:
    frame = _calibration()
    frame.loc[3, "n"] = 3
    fig = figures.calibration_plot(frame)
    # sizes that differ: beside each evaluator's own points, in its colour, readable
    assert {t.name: t.text[0] for t in fig.data[:2]} == {"gpt-4": "n=4", "prometheus": "n=3"}
    assert fig.data[0].textfont.size >= 11 and "n=" not in fig.layout.xaxis.ticktext[0]


def test_correlation_heatmap_is_symmetric_with_ci_text() -> None:
    corr = pd.DataFrame({
        "evaluator_a": ["a", "a", "b"], "evaluator_b": ["b", "c", "c"],
        "method": "pearson", "n": [10, 10, 10], "r": [0.5, -0.2, 0.9],
        "ci_low": [0.1, -0.6, 0.8], "ci_high": [0.8, 0.3, 0.95], "p": [0.1, 0.5, 0.001]})
    heat = figures.correlation_heatmap(corr, "pearson").data[0]
    z = np.array(heat.z)
    assert np.allclose(z, z.T) and np.allclose(np.diag(z), 1)
    assert z[0, 2] == pytest.approx(-0.2)
    assert heat.text[0][1] == "0.50<br>[0.10, 0.80]"
    assert "n = 10" in heat.hovertext[1][2]
    with pytest.raises(UserError, match="no kendall"):
        figures.correlation_heatmap(corr, "kendall")


def test_pair_scatter_jitter_is_bounded_and_reproducible() -> None:
    pairs = pd.DataFrame({"model": ["m1"] * 50 + ["m2"] * 50,
                          "judge": np.tile(np.arange(1, 11), 10).astype(float),
                          "human": np.repeat(np.arange(1, 11), 10).astype(float)})
    one = figures.pair_scatter(pairs, "judge", "human", jitter=0.2, seed=3)
    two = figures.pair_scatter(pairs, "judge", "human", jitter=0.2, seed=3)
    assert np.array_equal(one.data[0].x, two.data[0].x)
    shift = np.array(one.data[0].x) - pairs["human"].to_numpy()[:50]
    assert np.abs(shift).max() <= 0.2 and np.abs(shift).max() > 0
    assert np.array_equal(np.array(one.data[0].customdata)[:, 1], pairs["judge"].to_numpy()[:50])


def test_leaderboard_bars_one_trace_per_setting_with_std() -> None:
    board = pd.DataFrame({
        "model": ["A", "B", "A"], "setting": ["qa", "qa", "conv"], "mode": ["st", "st", "mt"],
        "split": "test2", "evaluator": "gpt-4", "n": [10, 10, 10],
        "mean": [7.0, 6.0, 5.0], "std": pd.array([0.5, None, None], dtype="Float64"),
        "n_seeds": [3, 1, 1]})
    fig = figures.leaderboard_bars(board, "gpt-4", "test2")
    assert [t.name for t in fig.data] == ["QA-st", "Conv-mt"]
    assert list(fig.data[0].error_y.array) == [0.5, 0.0] and fig.data[0].error_y.visible
    assert fig.data[1].error_y.visible is False
    with pytest.raises(UserError, match="no dev leaderboard row"):
        figures.leaderboard_bars(board, "gpt-4", "dev")


def test_bias_plot_and_breakdown_bars() -> None:
    bias = pd.DataFrame({"model": ["A", "B"], "judge": "j", "human": "h", "n": [5, 6],
                         "bias": [0.5, -1.0], "ci_low": [0.1, -1.5], "ci_high": [1.0, -0.2]})
    trace = figures.bias_plot(bias).data[0]
    assert list(trace.error_x.array) == pytest.approx([0.5, 0.8])
    assert list(trace.error_x.arrayminus) == pytest.approx([0.4, 0.5])
    breakdown = pd.DataFrame({"model": "A", "evaluator": "j", "facet": ["question_type"] * 2
                              + ["answer_position"], "level": ["who", "what", "M"],
                              "n": [3, 4, 7], "mean": [5.0, 6.0, 5.5]})
    fig = figures.breakdown_bars(breakdown, "question_type")
    assert list(fig.data[0].x) == ["who", "what"] and list(fig.data[0].y) == [5.0, 6.0]


@pytest.fixture(scope="module")
def rendered() -> dict[str, bytes]:
    fig = figures.calibration_plot(_calibration())
    return {fmt: figures.figure_bytes(fig, fmt) for fmt in figures.FIGURE_FORMATS}


def test_png_export(rendered: dict[str, bytes]) -> None:
    assert rendered["png"].startswith(b"\x89PNG\r\n\x1a\n")
    width = int.from_bytes(rendered["png"][16:20], "big")
    assert width == figures.WIDTH * 2  # scale 2


def test_svg_export(rendered: dict[str, bytes]) -> None:
    text = rendered["svg"].decode()
    assert "<svg" in text and "Score-bin calibration" in text


def test_unknown_format() -> None:
    with pytest.raises(UserError, match="unknown figure format"):
        figures.figure_bytes(figures.calibration_plot(_calibration()), "gif")


def test_no_browser_is_a_clear_message(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("BROWSER_PATH", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UserError, match="apt-get install chromium"):
        figures.find_chromium(paths=())
    with pytest.raises(UserError, match="apt-get install chromium"):
        monkeypatch.setattr(figures, "BROWSER_PATHS", ())
        figures.figure_bytes(figures.calibration_plot(_calibration()), "svg")


def test_browser_path_wins_and_is_checked(monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path) -> None:
    fake = tmp_path / "my-chromium"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("BROWSER_PATH", str(fake))
    assert figures.find_chromium() == str(fake)
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "missing"))
    with pytest.raises(UserError, match="BROWSER_PATH"):
        figures.find_chromium()
    assert os.environ["BROWSER_PATH"].endswith("missing")


def test_the_pages_renderer_keeps_one_browser_for_every_figure(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """keep_warm (the pages' downloads): the first figure starts kaleido's server, the later
    ones reuse its Chromium instead of starting one each (the time: bench/bench_figures.py)."""
    import kaleido

    fig = figures.calibration_plot(_calibration())
    oneshots: list[object] = []
    real_oneshot = kaleido._sync_server.oneshot_async_run
    monkeypatch.setattr(kaleido._sync_server, "oneshot_async_run",
                        lambda *a, **k: oneshots.append(a) or real_oneshot(*a, **k))
    try:
        png = figures.figure_bytes(fig, "png", keep_warm=True)
        assert kaleido._global_server.is_running()
        svg = figures.figure_bytes(fig, "svg", keep_warm=True)
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and b"<svg" in svg
        assert oneshots == []  # no one-shot browser for either
    finally:
        kaleido.stop_sync_server(silence_warnings=True)
    figures.figure_bytes(fig, "svg")  # a command's one-shot browser, as before
    assert len(oneshots) == 1
