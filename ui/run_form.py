"""The Runs page's job form: only the fields the current choices use, starting from the last
values.

A field shows when it applies: the chosen backend's declared options (hf's model path, openai's
base URL), Interleave for mode mt and its memory span once a number of meetings is chosen, a
judge's baseline for the pairwise styles. The fields are plain widgets in a fragment (not an
``st.form``, whose fields cannot follow a choice before Submit), so a choice redraws the form
alone. Every value is kept in the session across the runs that do not draw its field
(:func:`ui.state.kept`) and beside the job logs (:func:`elitr_core.generation.jobs.save_form`),
so a reload or a new tab starts from the last values typed.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from elitr_core.backends import registry
from elitr_core.backends.base import BackendOption
from elitr_core.backends.registry import backend_class
from elitr_core.data.database import reading
from elitr_core.errors import UserError
from elitr_core.generation import jobs, preflight
from elitr_core.vocab import INTERLEAVE_KS, JUDGE_STYLES, LANGUAGES, PAIRWISE_STYLES
from ui.data import engine
from ui.messages import guarded
from ui.state import KEPT_SUFFIX, kept
from ui.text import md, message


def backends() -> list[str]:
    """The form's backends: those asking a server first, then those loading the model here,
    the demo backends last (never a default); the registry's order within each (read on
    every run: a backend registered by one line shows at once)."""
    return sorted(registry.BACKENDS, key=lambda name: (backend_class(name).demo,
                                                       backend_class(name).loads_model))
JOB_KINDS = ["generate", "judge"]
SEEDED_KEY = "runs.seeded"  # this session's fields started from the last kept values
PREFIX = "runs."


def _save() -> None:
    jobs.save_form({key[:-len(KEPT_SUFFIX)]: value for key, value in st.session_state.items()
                    if isinstance(key, str) and key.startswith(PREFIX)
                    and key.endswith(KEPT_SUFFIX)})


def _changed(key: str) -> None:  # a widget callback: keep the value here and for a reload
    st.session_state[key + KEPT_SUFFIX] = st.session_state[key]
    _save()


def field(key: str, default: Any, options: list[Any] | None = None) -> dict[str, Any]:
    """A field's keyword arguments (``key``, ``on_change``): its value survives the runs
    that hide it and a reload (see the module)."""
    arguments = kept(key, default, options)
    arguments.update(on_change=_changed, args=(key,))
    return arguments


def _seed() -> None:
    """Once a session: the last kept values as the fields' starting values."""
    if st.session_state.get(SEEDED_KEY):
        return
    st.session_state[SEEDED_KEY] = True
    for key, value in jobs.last_form().items():
        if key.startswith(PREFIX) and key not in st.session_state:
            st.session_state.setdefault(key + KEPT_SUFFIX, value)


def _or_all(value: str) -> str:
    """A choice as the form shows it: the empty one (no filter) reads "all"."""
    return value or "all"


def backend_fields(backend: str, columns: list[Any]) -> dict[str, object]:
    """A field for each option ``backend`` declares with a form label, taking the columns in
    turn: option -> value."""
    labelled = [option for option in backend_class(backend).options if option.label]
    return {option.name: backend_field(column, option)
            for option, column in zip(labelled, columns * len(labelled), strict=False)}


def backend_field(column: Any, option: BackendOption) -> object:
    """The widget of one declared option: a checkbox, a choice, a number or a text."""
    key = PREFIX + option.name
    if option.type is bool:
        return column.checkbox(md("{}", option.label), **field(key, bool(option.default)))
    if option.choices:
        choices = [option.default, *option.choices]
        return column.selectbox(md("{}", option.label), choices,
                                **field(key, option.default, choices),
                                format_func=lambda c: "default" if c is None else str(c))
    if option.type in (int, float):
        return column.number_input(md("{}", option.label), **field(key, option.default),
                                   step=1 if option.type is int else None)
    return column.text_input(md("{}", option.label), placeholder=option.placeholder or "",
                             **field(key, ""))


def refusal(kind: str, options: dict[str, object]) -> str:
    """Why the job could not start, with the fix ("" when it can)."""
    try:
        with reading(engine()) as session:
            preflight.check_job(session, kind, options)
    except UserError as exc:
        return str(exc)
    return ""


def _generate_fields(left: Any, mid: Any, right: Any, mode: str) -> dict[str, object]:
    options: dict[str, object] = {
        "model": left.text_input("Model", placeholder="the name the server knows it by",
                                 **field("runs.model", "")),
        "seed": mid.number_input("Seed", step=1, **field("runs.seed", 2023)),
        "language": right.selectbox("Language", list(LANGUAGES),
                                    **field("runs.language", LANGUAGES[0], list(LANGUAGES)))}
    if left.checkbox("Nucleus sampling (T 0.6, top-p 0.9)", **field("runs.nucleus", False)):
        options["temperature"] = 0.6
    options["qa_markers"] = mid.checkbox("QA markers", **field("runs.qa_markers", False))
    options["length_instruction"] = right.checkbox(
        "Length instruction", **field("runs.length_instruction", False))
    options["meetings"] = st.text_input("Meetings (comma-separated, empty: all)",
                                        **field("runs.meetings", ""))
    if mode == "mt":  # the LTM benchmark interleaves multi-turn conversations only
        ks = [None, *INTERLEAVE_KS]
        options["interleave"] = left.selectbox(
            "Interleave", ks, **field("runs.interleave", None, ks),
            format_func=lambda k: "no" if k is None else f"{k} meetings a conversation",
            help="The LTM benchmark's method: K meetings' questions in one conversation")
        if options["interleave"] is not None:
            options["span"] = mid.number_input("Memory span (tokens)", min_value=0, step=1000,
                                               **field("runs.span", 0)) or None
    return options


def _judge_fields(left: Any, mid: Any, right: Any) -> dict[str, object]:
    styles = [*JUDGE_STYLES, *PAIRWISE_STYLES]
    options: dict[str, object] = {
        "judge_model": left.text_input("Judge model", placeholder="the name the server knows "
                                       "it by", **field("runs.judge_model", "")),
        "style": mid.selectbox("Style", styles, **field("runs.style", styles[0], styles),
                               help="cream / battle: pairwise, both orders"),
        "evaluator": right.text_input("Evaluator slug", placeholder="the judge's name in "
                                      "every table", **field("runs.evaluator", "")),
        "model": st.text_input("Judged model (empty: all)", **field("runs.judged", "")),
        "samples": left.number_input("Samples", min_value=1, max_value=20,
                                     **field("runs.samples", 1))}
    if options["style"] in PAIRWISE_STYLES:
        options["baseline"] = mid.text_input("Baseline model (empty: all pairs)",
                                             **field("runs.baseline", ""))
    return options


@st.fragment
def job_form() -> None:
    """Choose a job and its options; Start checks it first and starts it in the background."""
    _seed()
    kind = st.radio("Job", JOB_KINDS, horizontal=True,
                    **field("runs.kind", JOB_KINDS[0], JOB_KINDS))
    left, mid, right = st.columns(3)
    listed = backends()
    backend = left.selectbox("Backend", listed, **field("runs.backend", listed[0], listed))
    options: dict[str, object] = {"backend": backend,
                                  **backend_fields(backend, [mid, right, left])}
    any_ = [""] if kind == "judge" else []  # a judge pass may take every split/setting/mode
    splits, settings_, modes = [*any_, "test2", "dev"], [*any_, "qa", "conv"], [*any_, "st", "mt"]
    options.update(
        split=left.selectbox("Split", splits, format_func=_or_all,
                             **field(f"runs.split.{kind}", splits[0], splits)),
        setting=mid.selectbox("Setting", settings_, format_func=_or_all,
                              **field(f"runs.setting.{kind}", settings_[0], settings_)),
        mode=right.selectbox("Mode", modes, format_func=_or_all,
                             **field(f"runs.mode.{kind}", modes[0], modes)))
    if kind == "generate":
        options.update(_generate_fields(left, mid, right, str(options["mode"])))
    else:
        options.update(_judge_fields(left, mid, right))
    if st.button("Start", type="primary", key="runs.start"):
        with guarded():
            argv = jobs.build_command(kind, options)
            if reason := refusal(kind, options):
                st.error(md("Not started: ") + message(reason))
            else:
                jobs.start_job(argv)
                st.rerun()  # the status above shows the job and refreshes while it runs
