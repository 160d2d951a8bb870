"""The Studies page's Create form: only the fields the current choices use, keeping the last
values.

Batch size shows for random assignment (meeting assignment gives each annotator a meeting),
the stopping rule too (a confidence sequence needs the random order); the judge for active
selection or a bias / ppi stopping rule; Prolific's fields for the silver pool. The fields are
plain widgets in a fragment (an ``st.form`` cannot follow a choice before its Submit), each
kept in the session across the runs that hide it (:func:`ui.state.kept`).
"""

from __future__ import annotations

import re
from typing import Any

import streamlit as st

from elitr_core.annotation.admission import DEFAULT_JOIN_LIMIT, DEFAULT_LEASE_MINUTES
from elitr_core.annotation.study_setup import (
    MAX_ATTENTION_RATE,
    StudySpec,
    create_study,
    prolific_url,
)
from elitr_core.data.database import writing
from elitr_core.vocab import ATTENTION_RATE_DEFAULT, ATTENTION_RATE_LABEL
from ui.auth_ui import link_address_warning, public_base_url
from ui.data import engine
from ui.messages import guarded
from ui.state import kept
from ui.text import md, plain

POOL_KEY = "studies.create.pool"
CREATED_KEY = "studies.created"  # (name, items, units, pool) of the study created last
PER_ITEM_DEFAULT = {"silver": 10, "gold": 2}
LEASE_DEFAULT = {"silver": DEFAULT_LEASE_MINUTES, "gold": 0}  # gold: experts keep their task
JUDGED_RULES = ("bias", "ppi")  # stopping rules that read a judge's scores


def _k(name: str, default: Any, options: list[Any] | None = None) -> dict[str, Any]:
    return kept(f"studies.create.{name}", default, options)


def _scope(models: list[str], meeting_ids: list[str]) -> dict[str, Any]:
    """Which responses: split, setting, mode, models and meetings."""
    c1, c2, c3 = st.columns(3)
    splits, settings_, modes = [None, "dev", "test2"], [None, "qa", "conv"], [None, "st", "mt"]
    scope = {"split": c1.selectbox("Split", splits, **_k("split", "test2", splits)),
             "setting": c2.selectbox("Setting", settings_, **_k("setting", "qa", settings_)),
             "mode": c3.selectbox("Mode", modes, **_k("mode", "st", modes))}
    chosen = st.multiselect("Models (none = all)", models, **_k("models", [], models))
    meetings = st.multiselect("Meetings (none = all of the split)", meeting_ids,
                              **_k("meetings", [], meeting_ids))
    return {**scope, "models": tuple(chosen) or None, "meetings": tuple(meetings) or None}


def _admission(pool: str) -> dict[str, Any]:
    """Seed, attention checks, and (silver) Prolific's cap, code and join limit; the lease."""
    c1, c2, c3, c4 = st.columns(4)
    out: dict[str, Any] = {
        "seed": int(c1.number_input("Order seed", 0, 2**31 - 1, **_k("seed", 0))),
        "attention_rate": float(c2.number_input(
            plain(ATTENTION_RATE_LABEL), 0.0, MAX_ATTENTION_RATE, step=0.05,
            help="0.1 is one check per ten items (the same default as study create "
                 "--attention-rate)", **_k("rate", ATTENTION_RATE_DEFAULT)))}
    if pool == "silver":  # a gold study's experts have their personal links
        out["max_concurrent"] = int(c3.number_input(
            "Max concurrent participants (0 = no cap)", 0, 10_000, **_k("cap", 0))) or None
        out["prolific_code"] = c4.text_input("Prolific completion code", **_k("code", "")) \
            or None
    c1, c2, _ = st.columns(3)
    out["lease_minutes"] = int(c1.number_input(
        "Lease: minutes without an answer before a task goes to the next participant (0 = "
        "never)", 0, 100_000, help="their answers so far are kept, marked lapsed",
        **_k(f"lease.{pool}", LEASE_DEFAULT[pool])))
    if pool == "silver":
        out["join_limit"] = int(c2.number_input(
            "New participants per network address per hour (0 = no limit)", 0, 100_000,
            help="a Prolific id is cheap to invent, an address is not",
            **_k("joins", DEFAULT_JOIN_LIMIT)))
    return out


def _sampling(assignment: str) -> dict[str, Any]:
    """Sample size, selection, the stopping rule (random assignment) and the judge (when the
    selection or a rule reads one)."""
    c1, c2, c3 = st.columns(3)
    out: dict[str, Any] = {
        "sample": int(c1.number_input(
            "Sample: about N responses (0 = all)", 0, 100_000, **_k("sample", 0),
            help="each response drawn with a stored probability, so that export ppi-active "
                 "can weight by its inverse")) or None,
        "selection": c2.radio("Selection", ["uniform", "active"], horizontal=True,
                              help="active favours responses the judge is unsure about",
                              **_k("selection", "uniform", ["uniform", "active"]))}
    stop = ""
    if assignment == "random":
        stop = st.text_input("Stop when (optional)", **_k("stop", ""),
                             placeholder="half-width <= 0.5; ppi half-width <= 0.5",
                             help="admit nobody new once every model's 95% confidence "
                                  "sequence is this narrow (human mean, judge's bias or ppi; "
                                  "several separated by ; or , as study create --stop-when "
                                  "takes them)")
    # the CLI's --stop-when takes a comma list (ListOption) and prints rules joined by '; ':
    # either separator is read here, so a list copied from one to the other means the same
    out["stop_when"] = tuple(t.strip() for t in re.split(r"[;,]", stop) if t.strip())
    if out["selection"] == "active" or any(r.split()[0] in JUDGED_RULES
                                           for r in out["stop_when"]):
        out["judge"] = c3.text_input("Judge (active selection; bias/ppi stopping rules)",
                                     **_k("judge", "gpt-4"))
    return out


def _created(pool: str) -> None:
    """What the last Create made, with the link to paste into Prolific (silver)."""
    created = st.session_state.get(CREATED_KEY)
    if created is None:
        return
    name, items, units, its_pool = created
    st.success(md("Study {} created: {} items in {} unit(s).", name, items, units))
    if its_pool == "silver":
        st.caption("The study URL to paste into Prolific:")
        link_address_warning()
        st.code(prolific_url(name, host=public_base_url()), language=None, wrap_lines=True)


@st.fragment
def create_form(models: list[str], meeting_ids: list[str]) -> None:
    """The Create tab's fields; Create stores the study and reruns the page (its other tabs
    then offer it)."""
    pool = st.radio("Pool", ["silver", "gold"], horizontal=True, key=POOL_KEY,
                    help="silver: crowd workers through Prolific; gold: experts with personal "
                         "links (Annotators tab)")
    name = st.text_input("Name", **_k("name", ""))
    c1, c2, c3, c4 = st.columns(4)
    per_item = c1.number_input("Annotators per item", 1, 50,
                               **_k(f"per_item.{pool}", PER_ITEM_DEFAULT[pool]))
    c2.caption("Silver: 10 per item (the paper); gold: 2-3 experts per item.")
    assignment = c3.radio("Assignment", ["meeting", "random"], horizontal=True,
                          help="one meeting per annotator (the paper's task) or random batches",
                          **_k("assignment", "meeting", ["meeting", "random"]))
    batch = None
    if assignment == "random":
        batch = int(c4.number_input("Batch size", 1, 1000, **_k("batch", 45)))
    scope, admission = _scope(models, meeting_ids), _admission(pool)
    sampling = _sampling(assignment)
    if st.button("Create study", type="primary", key="studies.create-submit"):
        spec = StudySpec(name=name, pool=pool, per_item=int(per_item), assignment=assignment,
                         batch=batch, **scope, **admission, **sampling)
        with writing(engine()) as session, guarded() as call:
            summary = create_study(session, spec)
        if not call.failed:
            st.session_state[CREATED_KEY] = (name, summary["items"], summary["units"], pool)
            st.rerun()  # the whole page: the other tabs offer the new study
    _created(pool)
