"""Annotate: score one response at a time on the 10-point rubric, blind to the model.

Only the annotator's own queue is ever read (question, reference, response, their own previous
answer); no model name or other score reaches the browser. Submitting writes the answer and
commits before the next item renders. Keys: 1-9 and 0 (=10) pick a score, Enter submits, the
arrow keys go back and forward.

Texts are shown as plain text (``st.text``), never as Markdown or HTML: nothing in a model's
response (an image link, a raw ``<img>``) can make the annotator's browser fetch anything. The
page fits a 1366x768 screen: the response scrolls inside its own box, the scale and Submit stay
in view.
"""

import time

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from elitr_core.annotation.auth import StudyEnded
from elitr_core.annotation.guidelines import (
    Example,
    rubric_shown,
    score_meaning,
)
from elitr_core.annotation.studies import (
    ItemView,
    QueueView,
    item_view,
    queue_view,
    submit,
    take_another_unit,
)
from elitr_core.errors import UserError
from elitr_core.vocab import SCORE_MAX, SCORE_MIN
from ui.auth_ui import ANNOTATOR, ENTRY_KEY, require_role
from ui.data import get_engine_or_stop
from ui.guidelines import examples as study_examples
from ui.messages import PROLIFIC_COMPLETE, ended, guarded
from ui.text import code_span, md, message, plain

POSITION_KEY = "annotate.position"  # queue position shown, None = end screen
RESUME = -1  # POSITION_KEY until the queue is read: its first item without an answer
SHOWN_KEY = "annotate.shown"  # (position, monotonic time it was first shown)
ENTRY_SEEN_KEY = "annotate.entry"  # the entry POSITION_KEY belongs to
ERROR_KEY = "annotate.error"
TOUR_OPEN_KEY = "annotate.tour-open"  # a first entry or the "?" button: open the walkthrough
VIEW_KEY = "annotate.view"  # the queue as the submit just returned it, for the run it causes
REDRAW_KEY = "annotate.redraw"  # a pick cleared the error above: redraw the whole page
NOTICE_KEY = "annotate.notice"  # a key press that arrived for an item no longer on screen
# (queue view, position, item view) drawn last: while the database is away (a restart) the
# page says so in one sentence and shows that item again, Submit included, instead of stopping
LAST_KEY = "annotate.last"
ENDED_KEY = "annotate.ended"  # the StudyEnded a submit met: the page shows it and no item
KEEP_KEY = "annotate.keep"  # a submit just failed and said why: redraw LAST_KEY's item as it is
FAILED_KEY = "annotate.failed"  # the refusal a callback met, shown by the run it causes
FULL_KEY = "annotate.full"  # set by the whole page's run for the item area it calls
DRAWN_KEY = "annotate.drawn"  # what the item area drew last: "item" or "other"
SCORE_KEY = "annotate-score-{}"  # the picked score of a position (set by the scale's buttons)
# Every widget of an item carries its queue position in its key, so a click carries the
# identity of the item on screen: a key pressed while the next item is being drawn reaches
# the handler bound to the item the annotator saw, never the next one (which a shared key
# did: its handler was re-bound to the item drawn last). Keys double as CSS classes
# (st-key-...) that the keyboard script clicks.
PICK_KEY = "annotate-pick-{}-at-{}"  # value, position
SUBMIT_KEY, BACK_KEY, NEXT_KEY = ("annotate-submit-at-{}", "annotate-back-at-{}",
                                  "annotate-next-at-{}")
COMMENT_KEY, UNCLEAR_KEY = "annotate-comment-{}", "annotate-unclear-{}"
SCALE = list(range(int(SCORE_MIN), int(SCORE_MAX) + 1))  # the rubric's scores, from vocab
LOW, HIGH = SCALE[0], SCALE[-1]
KEYS = f"keys {LOW}-9, 0 = {HIGH}"  # a score's key is its last digit (10: 0)
ENDS = f":gray[{LOW} = Does not correspond at all · {HIGH} = Perfect match · {KEYS}]"
KEYS_JS = """<script>(function () {
  const w = window.parent || window, doc = w.document;
  if (w.__elitrKeys) doc.removeEventListener("keydown", w.__elitrKeys, true);
  w.__elitrKeys = function (e) {
    const t = e.target, tag = t && t.tagName;
    if (e.ctrlKey || e.metaKey || e.altKey || tag === "TEXTAREA" || (t && t.isContentEditable)
        || (tag === "INPUT" && t.type !== "checkbox")) return;  // typing a comment
    const click = (key) => {  // the widget of the item on screen: its key ends in -at-N
      const b = doc.querySelector('[class*="st-key-' + key + '-at-"] button');
      if (b && !b.disabled) { b.click(); return true; } return false; };
    let done = false;
    if (doc.querySelector('[role="dialog"]')) {  // the walkthrough: Enter closes it, no more
      if (e.key === "Enter") { const b = doc.querySelector(".st-key-annotate-tour-done button");
                               if (b) b.click(); e.preventDefault();
                               e.stopImmediatePropagation(); }
      return;
    }
    if (/^[0-9]$/.test(e.key)) {
      done = click("annotate-pick-" + (e.key === "0" ? "10" : e.key));
    } else if (e.key === "Enter") { done = click("annotate-submit");
    } else if (e.key === "ArrowLeft") { done = click("annotate-back");
    } else if (e.key === "ArrowRight") { done = click("annotate-next"); }
    if (done) e.preventDefault();
  };
  doc.addEventListener("keydown", w.__elitrKeys, true);
})();</script>"""
# Tighter page margins so question, reference, response, scale and Submit fit 1366x768.
COMPACT_CSS = """<style>
.block-container {padding-top: 1rem !important; padding-bottom: 0.5rem !important;}
.block-container [data-testid="stVerticalBlock"] {gap: 0.6rem;}
[class*="st-key-annotate-pick-"] button {min-height: 2.6rem;}
[class*="st-key-annotate-pick-"] button p {font-size: 1.05rem;}
.st-key-annotate-texts [data-testid="stText"] {font-size: 0.95rem;}
</style>"""

require_role(ANNOTATOR)
engine = get_engine_or_stop()
entry = st.session_state[ENTRY_KEY]
if st.session_state.get(ENTRY_SEEN_KEY) != entry:
    # a new link or a reload: resume at the first item without an answer
    st.session_state[ENTRY_SEEN_KEY] = entry
    st.session_state.pop(SHOWN_KEY, None)
    st.session_state.pop(ENDED_KEY, None)
    st.session_state[POSITION_KEY] = None
    # the annotator's first entry (recorded as seen when entering): the walkthrough, once,
    # alone; the queue is read when it closes
    st.session_state[TOUR_OPEN_KEY] = entry.first_visit
    if entry.first_visit:
        st.session_state[POSITION_KEY] = RESUME
    else:
        with guarded():
            # this run draws that view too, without reading it again
            st.session_state[VIEW_KEY] = queue_view(engine, entry)
            st.session_state[POSITION_KEY] = st.session_state[VIEW_KEY].first_open
if st.session_state.get(ENDED_KEY) is not None:
    ended(st.session_state[ENDED_KEY])
    st.stop()


def _go(position: int | None) -> None:
    st.session_state[POSITION_KEY] = position
    st.session_state.pop(ERROR_KEY, None)


def _on_screen(position: int) -> bool:
    """Whether ``position`` is the item this session drew last and still shows. A click for
    another item (pressed before the next item reached the browser, or resent by a browser
    reconnecting to a fresh session after a replica died) is dropped, with a notice when this
    session had shown that item."""
    shown = st.session_state.get(SHOWN_KEY)
    if shown is not None and shown[0] == position == st.session_state.get(POSITION_KEY):
        return True
    if shown is not None:
        st.session_state[NOTICE_KEY] = (
            f"A key press meant for item {position + 1} arrived after that item was left; "
            "it was not applied. Check the item on screen before pressing again.")
    return False


def _failed(exc: UserError) -> None:
    """A callback's refusal, for the run it causes to show (a callback of a fragment's
    widget draws nothing itself: Streamlit does not support it)."""
    st.session_state[FAILED_KEY] = exc


def _take_another() -> None:
    """Go to the first open item of another unit (none, the refusal shown, when refused)."""
    first_open = None
    try:
        first_open = take_another_unit(engine, entry).first_open
    except UserError as exc:
        _failed(exc)
    _go(first_open)


def _nav(position: int, to: int | None) -> None:
    if _on_screen(position):
        _go(to)


def _pick(position: int, value: int) -> None:
    if not _on_screen(position):
        st.session_state[REDRAW_KEY] = True  # the notice is drawn by the whole page
        return
    st.session_state[SCORE_KEY.format(position)] = value
    if st.session_state.pop(ERROR_KEY, None):
        st.session_state[REDRAW_KEY] = True


def _submit(position: int) -> None:
    if not _on_screen(position):
        return
    value = st.session_state.get(SCORE_KEY.format(position))
    if value is None:
        st.session_state[ERROR_KEY] = f"Pick a score from {LOW} to {HIGH} first ({KEYS})."
        return
    # the time counts from when this item was drawn (_on_screen: SHOWN_KEY is this item's)
    try:
        view = submit(engine, entry, position, int(value),
                      comment=st.session_state.get(COMMENT_KEY.format(position), ""),
                      unclear=bool(st.session_state.get(UNCLEAR_KEY.format(position))),
                      seconds=time.monotonic() - st.session_state[SHOWN_KEY][1])
    except StudyEnded as exc:  # closed, excluded, lapsed: the page ends with the message
        st.session_state[ENDED_KEY] = exc
        return
    except UserError as exc:  # a refusal is shown, and the item stays
        _failed(exc)  # said once: the run shows the item as drawn, without reading again
        st.session_state[KEEP_KEY] = True
        return
    st.session_state[VIEW_KEY] = view  # the run this causes draws it, without asking again
    after = position + 1 if position + 1 < view.total else None
    _go(after if view.first_open is None else min(position + 1, view.first_open))


def _guidelines() -> None:
    """The rubric as clean text and the study's worked examples, all one text element (a
    heading and a bordered box each cost every run of the item area an element more)."""
    examples: list[Example] = []
    with guarded():  # the database away: the rubric still shows
        examples = study_examples(str(engine.url), entry.study_id)
    st.text("\n\n".join(["How to score", rubric_shown(), "Worked examples" if examples else "",
                          *(f"Question: {e.question}\nReference: {e.reference}\n"
                            f"Response: {e.response}\nScore: {e.score}. {e.why}"
                            for e in examples)]).strip())


@st.fragment
def _scale(position: int) -> None:
    """The 10-point scale and the picked score's meaning. A fragment: a pick (a digit key)
    reruns only this, not the page's queries and texts (bench/bench_crowd.py)."""
    if st.session_state.pop(REDRAW_KEY, False):
        st.rerun()  # the pick also cleared the error shown above the texts
    picked = st.session_state[SCORE_KEY.format(position)]
    # one horizontal container, not st.columns(10): 1 block instead of 11, each a message
    # through the server's queue (a fifth of the rerun's CPU went to the columns)
    row = st.container(horizontal=True, gap="small")
    for value in SCALE:
        row.button(f"**{value:d}** · key {value % 10:d}", key=PICK_KEY.format(value, position),
                   type="primary" if picked == value else "secondary", width="stretch",
                   on_click=_pick, args=(position, value))
    if picked is None:
        st.markdown(md(":gray[No score picked yet.] " + ENDS))  # constants: no braces
    else:
        st.markdown(md(":blue-background[**Your score: {}**] {}", picked,
                       score_meaning(int(picked))))


@st.dialog("Scoring with the keyboard", on_dismiss="rerun")  # closed by x or Escape: the
def _tour() -> None:  # page draws the item (a first entry's page has none behind the dialog)
    st.text("1. Read the question, the reference answer (it scores 10) and the response.\n"
            "2. Press 1-9 to pick a score, 0 for 10; the picked score turns blue.\n"
            "3. Press Enter to submit; the next item appears.\n"
            "4. ← and → go back and forward; you can revise an answer until the study closes.\n"
            "The rubric and worked examples are under Guidelines (top right).")
    if st.button("Start scoring", type="primary", key="annotate-tour-done"):
        st.rerun()


def _last(position: int | None) -> tuple[QueueView, ItemView] | None:
    """(queue view, item view) drawn last for ``position``, None when another was."""
    last = st.session_state.get(LAST_KEY)
    return (last[0], last[2]) if last is not None and last[1] == position else None


@st.fragment
def _item_area(progress: DeltaGenerator) -> None:
    """Everything of the page but its style, keys and walkthrough: a submit, Back or Next
    (a fragment's widget) reruns only this, not app.py, the page and its other elements
    (bench/bench_launch.py: two fifths of an item's server CPU). The whole page's run draws
    it too; a run of its own that would draw something else than the next item in the place
    of the last one (the end screen, an ended study, the walkthrough, a refusal of another
    task) runs the whole page instead, so that nothing of the last is left over."""
    whole = st.session_state.pop(FULL_KEY, False)
    position = st.session_state.get(POSITION_KEY)
    if not whole and (st.session_state.get(ENDED_KEY) is not None or position is None
                      or st.session_state.get(TOUR_OPEN_KEY)
                      or st.session_state.get(DRAWN_KEY) != "item"):
        st.rerun(scope="app")
    st.session_state[DRAWN_KEY] = "other"
    view = st.session_state.pop(VIEW_KEY, None)
    last = _last(position)
    failed = st.session_state.pop(FAILED_KEY, None)
    # the database away (said once, by the submit or by the first read that failed): the
    # item drawn last stays, its Submit with it, and nothing more is read in this run
    away = bool(st.session_state.pop(KEEP_KEY, False)) and last is not None
    if view is None and not away:
        with guarded() as read:
            view = queue_view(engine, entry)
        if read.failed and last is None:
            return
        away = read.failed
    if away:
        assert last is not None
        view = last[0]
    if position == RESUME:  # the first entry's walkthrough closed: resume as a reload does
        position = st.session_state[POSITION_KEY] = view.first_open
    # the header's progress bar, drawn from here into its place in the header (the header
    # itself is the whole page's, drawn once, not on every submit)
    progress.progress(view.answered / max(view.total, 1), width="stretch",
                      text=md("{} of {} items scored", view.answered, view.total))
    # one place for the error, drawn empty when there is none: an item's run draws the
    # same elements in the same places as the last item's
    error = st.empty()
    if failed is not None:  # a callback's refusal (the database away: the item stays)
        error.error(message(failed))
    elif st.session_state.get(ERROR_KEY):
        error.error(plain(st.session_state[ERROR_KEY]))
    if st.session_state.get(NOTICE_KEY):
        st.toast(plain(st.session_state.pop(NOTICE_KEY)), icon=":material/block:")

    if position is None:
        st.success(md("All {} items are scored. Thank you!", view.total))
        if view.completion_code and entry.prolific:  # a token annotator: not from Prolific
            st.markdown("Your completion code: **" + code_span(view.completion_code) + "**")
            st.link_button("Back to Prolific to complete", type="primary",
                           url=PROLIFIC_COMPLETE.format(view.completion_code))
        st.caption("You can revise your answers until the study closes.")
        st.button("Review my answers", on_click=_go, args=(0,))
        if view.can_take_more:
            st.button("Take another task", on_click=_take_another)
        return

    if away:
        assert last is not None
        item = last[1]
    else:
        with guarded() as read:
            item = item_view(engine, entry, position)
        if read.failed and last is None:
            return
        if read.failed:
            assert last is not None
            item = last[1]
    st.session_state[LAST_KEY] = (view, position, item)
    if st.session_state.get(SHOWN_KEY, (None,))[0] != position:
        st.session_state[SHOWN_KEY] = (position, time.monotonic())
    score_key = SCORE_KEY.format(position)
    if score_key not in st.session_state:
        st.session_state[score_key] = item.value
    _item(view, item, position)
    st.session_state[DRAWN_KEY] = "item"


def _item(view: QueueView, item: ItemView, position: int) -> None:
    """The item's texts, the scale, comment, Unclear, Back, Submit and Next."""
    with st.container(key="annotate-texts"):
        left, right = st.columns([2, 3])
        with left:
            st.caption(md("Item {} of {} · Question", position + 1, view.total))
            st.container(border=True, height=95).text(item.question)
            st.caption("Reference answer (scores 10)")
            st.container(border=True, height=140).text(item.reference)
        with right:
            st.caption("Response to evaluate")
            st.container(border=True, height=300).text(item.response)

    _scale(position)
    # one horizontal container, not st.columns: 1 block instead of 6
    row = st.container(horizontal=True, vertical_alignment="center", gap="small")
    row.text_input("Comment (optional)", value=item.comment, key=COMMENT_KEY.format(position),
                   placeholder="Comment (optional)", label_visibility="collapsed",
                   width="stretch")
    row.checkbox("Unclear item", value=item.unclear, key=UNCLEAR_KEY.format(position),
                 width="content")
    row.button("← Back", key=BACK_KEY.format(position), disabled=position == 0,
               on_click=_nav, args=(position, position - 1), width=110)
    row.button("Submit (Enter)", key=SUBMIT_KEY.format(position), type="primary",
               width=170, on_click=_submit, args=(position,))
    row.button("Next →", key=NEXT_KEY.format(position), width=110, on_click=_nav,
               disabled=item.value is None,
               args=(position, position + 1 if position + 1 < view.total else None))


st.html(COMPACT_CSS)
touring = (st.session_state.get(POSITION_KEY) is not None
           and st.session_state.pop(TOUR_OPEN_KEY, False))
if touring:
    _tour()
# A first entry's page is the walkthrough over the header: the item is drawn when it closes
# (a whole-page run), so that a launch's arrival costs no item's read and elements (the item
# area was half of an arrival's server CPU: bench/results/launch-2026-11-28c.md), and the
# item's seconds count from when it is seen. The "?" reopening it keeps the item behind it
# (its comment and Unclear widgets would lose what was typed if not drawn).
first_look = touring and st.session_state.get(SHOWN_KEY) is None
# one horizontal container, not st.columns: 1 block instead of 5, each a message
head = st.container(horizontal=True, vertical_alignment="center", gap="medium")
head.markdown(md("##### Scoring: {}", entry.study_name), width="stretch")
progress_place = head.empty()  # the item area draws the progress bar there
with head.popover("Guidelines", icon=":material/menu_book:", width=160):
    _guidelines()
head.button("?", key="annotate-help", help="The keyboard walkthrough again",
            on_click=lambda: st.session_state.update({TOUR_OPEN_KEY: True}))
if not first_look:
    st.session_state[FULL_KEY] = True
    _item_area(progress_place)
st.html(KEYS_JS, unsafe_allow_javascript=True)
