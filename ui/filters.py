"""Sidebar filters shared by the analysis pages (split, setting, mode, evaluators, models).

The chosen values live in session state under the ``filters.*`` keys below, apart from the
widgets' own keys: Streamlit forgets a widget's state on a page that does not draw it (the home
page) and does not hand it to the same-keyed widget of another page, so each run seeds the
widget from the stored value and an ``on_change`` callback stores the widget's new value. The
filters therefore survive every page switch.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import streamlit as st

from elitr_core import settings, vocab
from elitr_core.data.browse import ScoreFilter
from ui.data import database_url, engine, score_cache
from ui.state import FILTERS_KEY
from ui.text import Markdown, plain
from ui.warm_progress import warming_line

if TYPE_CHECKING:
    import pandas as pd

SPLIT_KEY = "filters.split"
SETTING_KEY = "filters.setting"
MODE_KEY = "filters.mode"
EVALUATORS_KEY = "filters.evaluators"
MODELS_KEY = "filters.models"
MIN_SCORES_KEY = "filters.min_scores"
CURRENT_KEY = "filters.current"  # (page of the run, its filters): names the downloads
LEFT_OUT_KEY = "filters.left_out"  # evaluators the minimum left out on this run
WIDGET_SUFFIX = ".widget"

ALL = "all"
LABELS = {ALL: "all", **vocab.LABELS}


@score_cache(show_spinner=False)
def _options(url: str | None) -> dict[str, list[str]]:
    from elitr_core.data.browse import filter_options
    from elitr_core.data.database import reading

    with reading(engine()) as session:  # ``url`` keys the cache; engine() resolves it
        return filter_options(session)


def _store(key: str) -> None:
    """on_change: keep the widget's new value under the page-independent key."""
    st.session_state[key] = st.session_state[key + WIDGET_SUFFIX]


def _widget_key(key: str, default: str | list[str], valid: list[str], *,
                many: bool = False) -> str:
    """Seed the widget from the stored value on every run (dropping values no longer offered).

    Seeding every run, not only when the widget key is missing, matters: a widget of another
    page with the same key does not hand its value over on a page switch.
    """
    stored = st.session_state.get(key, default)
    if many:
        stored = [v for v in stored if v in valid]
    elif stored not in valid:
        stored = default
    st.session_state[key] = stored
    st.session_state[key + WIDGET_SUFFIX] = stored
    return key + WIDGET_SUFFIX


def _select(label: str, key: str, values: list[str]) -> str | None:
    options = [ALL, *values]
    widget = _widget_key(key, ALL, options)
    choice = st.selectbox(label, options, key=widget, on_change=_store, args=(key,),
                          format_func=lambda v: LABELS.get(v, v))
    return None if choice == ALL else choice


def _multi(label: str, key: str, values: list[str]) -> tuple[str, ...] | None:
    widget = _widget_key(key, [], values, many=True)
    chosen = st.multiselect(label, values, key=widget, on_change=_store, args=(key,),
                            placeholder="all")
    return tuple(chosen) or None


def sidebar_filters() -> ScoreFilter:
    """Draw the filters in the sidebar and return them as a :class:`ScoreFilter` (also stored
    under ``FILTERS_KEY``)."""
    options = _options(database_url())
    with st.sidebar:
        st.subheader("Filters")
        flt = ScoreFilter(
            split=_select("Split", SPLIT_KEY, options["split"]),
            setting=_select("Setting", SETTING_KEY, options["setting"]),
            mode=_select("Mode", MODE_KEY, options["mode"]),
            evaluators=_multi("Evaluators", EVALUATORS_KEY, options["evaluators"]),
            models=_multi("Models", MODELS_KEY, options["models"]),
        )
        flt = _apply_minimum(flt)
        st.caption("The paper compares evaluators on test2, QA, single-turn.")
    if line := warming_line():  # a first visit while the server warms up
        st.info(plain(line), icon=":material/hourglass_top:")
    st.session_state[FILTERS_KEY] = flt
    st.session_state[CURRENT_KEY] = (_page_id(), flt)
    return flt


def _page_id() -> str:
    """The page of this script run (a switch to a page without filters changes it)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return str(ctx.page_script_hash) if ctx is not None else ""


def file_label(name: str) -> str:
    """``name`` with the sidebar's split, setting and mode (those set and not already in it),
    on a page that shows the filters: a table's CSV and a figure's PNG name the same ones."""
    page, flt = st.session_state.get(CURRENT_KEY, ("", None))
    if flt is None or page != _page_id():
        return name
    parts = name.split("-")
    return "-".join([name, *[value for value in (flt.split, flt.setting, flt.mode)
                             if value and value not in parts]])


def _apply_minimum(flt: ScoreFilter) -> ScoreFilter:
    """With Evaluators = all, leave out evaluators with fewer scores than the minimum under
    these filters (a 3-score pilot study would otherwise enter every analysis), and say so.
    Evaluators picked by name are always kept."""
    minimum = int(st.number_input("Minimum scores per evaluator", 0, 100_000,
                                  st.session_state.get(MIN_SCORES_KEY, settings.min_scores()),
                                  step=10, key=MIN_SCORES_KEY + WIDGET_SUFFIX,
                                  on_change=_store, args=(MIN_SCORES_KEY,)))
    flt, left_out = with_minimum(flt, minimum)
    st.session_state[LEFT_OUT_KEY] = left_out
    if left_out:
        st.caption("Left out (fewer than " f"{minimum:d} scores here): " + plain(", ".join(
            f"{e} ({n})" for e, n in sorted(left_out.items()))) +
            ". Pick them under Evaluators, or lower the minimum, to include them.")
    return flt


def with_minimum(flt: ScoreFilter, minimum: int) -> tuple[ScoreFilter, dict[str, int]]:
    """``flt`` without the evaluators that have fewer than ``minimum`` scores under it (when
    Evaluators = all), and those left out with their number of scores."""
    from ui.data import scores_frame

    if flt.evaluators or minimum <= 0:
        return flt, {}
    counts = items_per_evaluator(scores_frame(flt))
    left_out = {str(e): int(n) for e, n in counts.items() if n < minimum}
    if not left_out:
        return flt, {}
    kept = tuple(str(e) for e in counts.index if str(e) not in left_out)
    return replace(flt, evaluators=kept or None), left_out


def items_per_evaluator(scores: pd.DataFrame) -> pd.Series:
    """How many responses each evaluator scored: a study's evaluator has a row per annotator
    and one for their mean, but it scored each response once."""
    keys = ["evaluator", "meeting", "question_id", "split", "setting", "mode", "seed", "model"]
    scored = scores.dropna(subset=["score"])
    return scored.drop_duplicates(subset=[k for k in keys if k in scored.columns]) \
        .groupby("evaluator").size()


def default_filters() -> ScoreFilter:
    """The filters an analysis page starts with (everything, less the evaluators under the
    default minimum number of scores); computed outside a page too (``ui.warm``)."""
    return with_minimum(ScoreFilter(), settings.min_scores())[0]


def narrowing(flt: ScoreFilter) -> Markdown:
    """The filters that narrow the data, in the sidebar's words (e.g. ``Split = dev``), or
    "the filters" when none does."""
    parts = [f"{label} = {LABELS.get(v, v)}" for label, v in
             (("Split", flt.split), ("Setting", flt.setting), ("Mode", flt.mode)) if v]
    if flt.models:
        parts.append(f"Models = {', '.join(flt.models)}")
    if flt.evaluators and not st.session_state.get(LEFT_OUT_KEY):
        parts.append(f"Evaluators = {', '.join(flt.evaluators)}")
    return plain(", ".join(parts) or "the filters")


def describe(flt: ScoreFilter) -> Markdown:
    """The filters in words, e.g. ``test2 · QA · single-turn (st) · all evaluators``."""
    parts = [LABELS.get(v, v) if v else f"all {name}" for name, v in
             (("splits", flt.split), ("settings", flt.setting), ("modes", flt.mode))]
    parts.append(", ".join(flt.evaluators) if flt.evaluators else "all evaluators")
    parts.append(", ".join(flt.models) if flt.models else "all models")
    return plain(" · ".join(parts))


def export_command(table: str, *options: str, flt: ScoreFilter) -> str:
    """``python -m elitr_core export TABLE OPTIONS FILTERS`` as one types it: its parts joined
    by one space, an empty part (no filter, no option) adding none."""
    parts = ("python -m elitr_core export", table, *options, cli_arguments(flt))
    return " ".join(part.strip() for part in parts if part.strip())


def cli_arguments(flt: ScoreFilter) -> str:
    """The ``python -m elitr_core export`` options giving the same filters."""
    args = [f"--{name} {value}" for name, value in
            (("split", flt.split), ("setting", flt.setting), ("mode", flt.mode)) if value]
    args += [f"--evaluator {e}" for e in flt.evaluators or ()]
    args += [f"--model '{m}'" for m in flt.models or ()]
    return " ".join(args)
