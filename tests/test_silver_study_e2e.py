"""The paper's silver study end to end on the bundled data (issue 4, "Done when").

A researcher creates the study on the Studies page (test2, QA-st, the three all-eval models, two
meetings, one meeting per annotator, 3 annotators per item, a Prolific completion code, attention
checks), hands out the Prolific link the page shows, and watches progress; participants arrive
through that link and score their task on the annotation page (the first items and the last one
through the page's widgets, the rest through the same core ``submit`` the page calls); one of
them answers against gold and fails every attention check; the quality report flags them, the
researcher excludes them on the page, a replacement takes the re-opened task; then the study's
aggregate evaluator ``silver-human:<study>``, the ICCs and the silver-vs-gold agreement are
checked against numbers computed here from the raw answers (hand-written ANOVA ICCs, scipy
correlations), on the page and through ``python -m elitr_core export``.
"""

from __future__ import annotations

import hashlib
import io
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sqlalchemy import select
from streamlit.testing.v1 import AppTest

from db.models import Annotator, Assignment, Evaluator, Participation, Response, Score
from db.transaction import reading
from elitr_core.annotation.auth import PASSWORD_ENV, PASSWORD_HASH_ENV
from elitr_core.annotation.studies import Entry, submit
from elitr_core.cli.main import main
from elitr_core.data.database import open_database

APP = str(Path(__file__).resolve().parents[1] / "app.py")
STUDY = "silver-test2"
EVALUATOR = f"silver-human:{STUDY}"
MODELS = ["GPT-4", "Vicuna-13B-v1.5", "LongAlpaca-7B"]
MEETINGS = ["meeting_en_test2_001", "meeting_en_test2_002"]  # 12 and 16 questions
ITEMS = {"meeting_en_test2_001": 36, "meeting_en_test2_002": 48}
CODE = "C0DE1234"
PAGE_ITEMS = 2  # the first items of every task go through the page's widgets
SECONDS = 30.0  # time spent per item for answers given through the core call
ENTRY_KEY = "auth.entry"
Rule = Callable[[float, str, int], int]  # (gold score, item kind, response id) -> answer


def _pid(name: str) -> str:
    """A Prolific-shaped id (24 hex digits)."""
    return hashlib.sha256(name.encode()).hexdigest()[:24]


def _honest(k: int) -> Rule:
    """Gold give or take up to two points (per annotator and item); checks answered right."""
    def rule(gold: float, kind: str, response_id: int) -> int:
        if kind != "item":
            return 10 if kind == "attention-high" else 1
        return int(min(10, max(1, gold + (response_id * 7 + k) % 5 - 2)))
    return rule


def _reversed(gold: float, kind: str, response_id: int) -> int:
    """The inconsistent participant: the gold scale upside down, every check failed."""
    if kind != "item":
        return 1 if kind == "attention-high" else 10
    return int(11 - gold)


@dataclass
class Participant:
    """One Prolific participant: ids, answering rule, and the scores they gave (item kind)."""

    name: str
    rule: Rule
    given: dict[int, float] = field(default_factory=dict)
    core_items: int = 0  # item-kind answers given through the core call (SECONDS each)

    @property
    def pid(self) -> str:
        return _pid(self.name)

    @property
    def session_id(self) -> str:
        return _pid(f"session-{self.name}")

    @property
    def annotator(self) -> str:
        return f"prolific-{self.pid}"


@pytest.fixture
def url(bundled_sqlite: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The bundled data, no researcher login configured (the local user is the researcher)."""
    monkeypatch.setenv("DATABASE_URL", bundled_sqlite)
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    monkeypatch.delenv(PASSWORD_HASH_ENV, raising=False)
    return bundled_sqlite


# --- the researcher's side (Studies page) ---------------------------------------------------

def _studies_page() -> AppTest:
    app = AppTest.from_file(APP, default_timeout=60).run()
    app = app.switch_page("pages/studies.py").run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    return app


def _labelled(widgets: object, label: str):  # type: ignore[no-untyped-def]
    return next(w for w in widgets if w.label == label)  # type: ignore[attr-defined]


def _create_study_on_the_page() -> str:
    """Fill in the form as a researcher would; return the Prolific link template shown."""
    app = _studies_page()
    _labelled(app.text_input, "Name").set_value(STUDY)
    _labelled(app.radio, "Pool").set_value("silver")
    _labelled(app.number_input, "Annotators per item").set_value(3)
    _labelled(app.radio, "Assignment").set_value("meeting")
    _labelled(app.selectbox, "Split").set_value("test2")
    _labelled(app.selectbox, "Setting").set_value("qa")
    _labelled(app.selectbox, "Mode").set_value("st")
    _labelled(app.multiselect, "Models (none = all)").set_value(MODELS)
    _labelled(app.multiselect, "Meetings (none = all of the split)").set_value(MEETINGS)
    _labelled(app.number_input, "Order seed").set_value(1)
    _labelled(app.number_input, "Attention-check rate (checks per item)").set_value(0.1)
    _labelled(app.text_input, "Prolific completion code").set_value(CODE)
    # every participant of this test arrives from the one test process (one address)
    _labelled(app.number_input, "New participants per network address per hour (0 = no "
              "limit)").set_value(0)
    _labelled(app.button, "Create study").click().run()
    assert not app.exception and not app.error
    message = app.success[0].value
    assert f"Study {STUDY} created: 84 items in 2 unit(s)" in message
    link = app.code[0].value  # the full URL to paste into Prolific, with a copy button
    assert link.endswith(f"/?study={STUDY}&PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
                         "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"), link
    assert link.startswith("http"), link
    return link


def _frame_with(app: AppTest, column: str, value: object | None = None) -> pd.DataFrame:
    """The page's table holding ``column`` (and ``value`` in it, when given)."""
    for frame in app.dataframe:
        table = frame.value
        if column in table.columns and (value is None or value in set(table[column])):
            return table
    raise AssertionError(f"no table with {column}={value!r} on the page")


# --- the participants' side (annotation page) -----------------------------------------------

def _prolific_params(template: str, person: Participant) -> dict[str, str]:
    """What Prolific sends: the study's link with its placeholders filled in."""
    filled = (template.replace("{{%PROLIFIC_PID%}}", person.pid)
              .replace("{{%STUDY_ID%}}", _pid("prolific-study"))
              .replace("{{%SESSION_ID%}}", person.session_id))
    query = urllib.parse.urlsplit(filled).query
    return {k: v[0] for k, v in urllib.parse.parse_qs(query).items()}


def _arrive(template: str, person: Participant) -> AppTest:
    """The participant opens the link; a first entry's page is the walkthrough alone, closed
    here as the participant would (the first item is drawn then)."""
    app = AppTest.from_file(APP, default_timeout=60)
    for key, value in _prolific_params(template, person).items():
        app.query_params[key] = value
    app.run()
    assert not app.exception
    tour = [b for b in app.button if b.key == "annotate-tour-done"]
    if tour:
        assert "Item 1 of " not in _page_text(app)  # nothing of the item behind it
        app = tour[0].click().run()
        assert not app.exception
    return app


def _page_text(app: AppTest) -> str:
    return "\n".join(str(getattr(e, "value", "")) for e in
                     (*app.markdown, *app.caption, *app.title, *app.success, *app.error, *app.text))


def _queue(url: str, annotator_id: int) -> list[tuple[int, str, int]]:
    """(position, kind, response id) of an annotator's queue (read here, never by the page)."""
    with reading(open_database(url)) as session:
        rows = session.execute(
            select(Assignment.position, Assignment.kind, Assignment.response_id)
            .where(Assignment.annotator_id == annotator_id).order_by(Assignment.position)).all()
    return [(int(p), str(k), int(r)) for p, k, r in rows]


def _answer(url: str, person: Participant, gold: dict[int, float], entry: Entry,
            item: tuple[int, str, int], app: AppTest | None = None) -> AppTest | None:
    """Answer one queue item: through the page's widgets when ``app`` is given, else through
    the core call the page makes."""
    position, kind, response_id = item
    value = person.rule(gold[response_id], kind, response_id)
    if kind == "item":
        person.given[response_id] = float(value)
    if app is None:
        submit(open_database(url), entry, position, value, seconds=SECONDS)
        person.core_items += kind == "item"
        return None
    assert f"Item {position + 1} of " in _page_text(app)
    if kind == "item":  # the page shows the response this answer is computed for
        assert _response_text(url, response_id) in _page_text(app)
    app.button(key=f"annotate-pick-{value}-at-{position}").click().run()
    app.button(key=f"annotate-submit-at-{position}").click().run()
    assert not app.exception and not app.error
    return app


def _work(url: str, template: str, person: Participant, gold: dict[int, float],
          stop: int | None = None) -> str:
    """The participant arrives by the Prolific link and scores their task (up to ``stop``
    answers); return the meeting they were given."""
    app = _arrive(template, person)
    assert not app.error, [e.value for e in app.error]
    entry: Entry = app.session_state[ENTRY_KEY]
    assert entry.prolific and entry.study_name == STUDY
    queue = _queue(url, entry.annotator_id)
    done = {pos for pos, answered in _answered(url, entry.annotator_id) if answered}
    todo = [it for it in queue if it[0] not in done][:stop]
    for item in todo:
        if item[0] < PAGE_ITEMS:
            app = _answer(url, person, gold, entry, item, app) or app
        elif item[0] < len(queue) - 1:
            _answer(url, person, gold, entry, item)
        else:  # the last one after a reload: the page resumes there, then the end screen
            app = _arrive(template, person)
            assert f"Item {len(queue)} of {len(queue)}" in _page_text(app)
            app = _answer(url, person, gold, entry, item, app) or app
            text = _page_text(app)
            assert f"All {len(queue)} items are scored" in text and CODE in text
            assert app.get("link_button")[0].proto.url.endswith(f"complete?cc={CODE}")
    with reading(open_database(url)) as session:
        return str(session.execute(select(Participation.unit).where(
            Participation.annotator_id == entry.annotator_id)
            .order_by(Participation.id.desc())).scalars().first())


def _response_text(url: str, response_id: int) -> str:
    with reading(open_database(url)) as session:
        return str(session.execute(select(Response.text).where(Response.id == response_id))
                   .scalar_one())


def _answered(url: str, annotator_id: int) -> list[tuple[int, bool]]:
    with reading(open_database(url)) as session:
        rows = session.execute(select(Assignment.position, Assignment.answered_at.is_not(None))
                               .where(Assignment.annotator_id == annotator_id)).all()
    return [(int(p), bool(a)) for p, a in rows]


def _annotator_id(url: str, person: Participant) -> int:
    with reading(open_database(url)) as session:
        return int(session.execute(select(Annotator.id).where(
            Annotator.name == person.annotator)).scalar_one())


def _gold(url: str) -> dict[int, float]:
    """response id -> gold-human score of the bundled data."""
    with reading(open_database(url)) as session:
        rows = session.execute(select(Score.response_id, Score.value).join(Evaluator).where(
            Evaluator.slug == "gold-human", Score.annotator_key == 0)).all()
    return {int(r): float(v) for r, v in rows}


def _study_scores(url: str) -> pd.DataFrame:
    with reading(open_database(url)) as session:
        rows = session.execute(
            select(Score.response_id, Score.annotator_id, Score.value, Score.status)
            .join(Evaluator).where(Evaluator.slug == EVALUATOR)).all()
    return pd.DataFrame(rows, columns=["response_id", "annotator_id", "value", "status"])


# --- independent references -----------------------------------------------------------------

def _icc2k(table: np.ndarray) -> float:
    """ICC(2,k) by the two-way ANOVA of Shrout & Fleiss (1979), targets x raters."""
    n, k = table.shape
    grand = table.mean()
    ms_rows = k * ((table.mean(axis=1) - grand) ** 2).sum() / (n - 1)
    ms_cols = n * ((table.mean(axis=0) - grand) ** 2).sum() / (k - 1)
    ss_err = ((table - table.mean(axis=1, keepdims=True) - table.mean(axis=0) + grand) ** 2).sum()
    ms_err = ss_err / ((n - 1) * (k - 1))
    return float((ms_rows - ms_err) / (ms_rows + (ms_cols - ms_err) / n))


def _icc1k(table: np.ndarray) -> float:
    """ICC(1,k), one-way ANOVA (Shrout & Fleiss 1979): (BMS - WMS) / BMS."""
    n, k = table.shape
    ms_between = k * ((table.mean(axis=1) - table.mean()) ** 2).sum() / (n - 1)
    ms_within = ((table - table.mean(axis=1, keepdims=True)) ** 2).sum() / (n * (k - 1))
    return float((ms_between - ms_within) / ms_between)


def _export(url: str, capsys: pytest.CaptureFixture[str], *args: str) -> pd.DataFrame:
    capsys.readouterr()
    assert main(["export", *args, "--db", url]) == 0
    return pd.read_csv(io.StringIO(capsys.readouterr().out))


# --- the study ------------------------------------------------------------------------------

def test_paper_silver_study_end_to_end(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    gold = _gold(url)
    template = _create_study_on_the_page()

    # Six participants arrive; meetings are handed out fewest-annotators first (001, 002, ...)
    people = [Participant(f"p{i}", _honest(i)) for i in range(1, 7)]
    people[2] = Participant("careless", _reversed)  # the third arrival: meeting 001
    units = {}
    for person in people[:5]:
        units[person.name] = _work(url, template, person, gold)
    units["p6"] = _work(url, template, people[5], gold, stop=10)
    assert [units[p.name] for p in people] == MEETINGS * 3

    # The researcher watches progress: p6 is part-way through meeting 002
    app = _studies_page()
    metrics = {m.label: m.value for m in app.metric if "alpha" not in m.label}
    assert metrics == {"Status": "open", "Items": "84", "Units": "2", "Annotators": "6",
                       "Scores": str(2 * 36 + 36 + 2 * 48 + len(people[5].given))}
    progress = _frame_with(app, "answered").set_index("annotator")
    p6 = progress.loc[people[5].annotator]
    assert (p6["answered"], p6["status"], p6["unit"]) == (10, "active", MEETINGS[1])
    # the page timed its two answers itself (well under a second each in a test)
    assert p6["minutes_spent"] == pytest.approx(SECONDS * people[5].core_items / 60, abs=0.1)
    for person in people[:5]:
        row = progress.loc[person.annotator]
        assert row["status"] == "done" and row["answered"] == row["items"]
        checks = row["items"] - ITEMS[row["unit"]]
        assert checks == (4 if row["unit"] == MEETINGS[0] else 5)  # ceil(0.1 x items)
    # meeting 002 has its annotators (p6 at work): in progress, not short of annotators
    assert _frame_with(app, "items_short").empty
    _work(url, template, people[5], gold)

    # Quality control flags the careless participant only; the researcher excludes them
    app = _studies_page()
    report = _frame_with(app, "flags").set_index("annotator")
    careless = people[2]
    flags = report.loc[careless.annotator, "flags"]
    assert "4 failed check(s)" in flags and "r with gold -1.00 < 0.5" in flags
    assert report.loc[careless.annotator, "gold_r"] == pytest.approx(-1.0)
    assert (report.drop(careless.annotator)["flags"] == "").all()
    exclude = app.selectbox(key="studies.exclude")
    assert exclude.options[0] == careless.annotator  # flagged first
    exclude.set_value(careless.annotator).run()
    _labelled(app.text_input, "Reason").set_value("reversed scale, failed checks").run()
    app.button(key="studies.exclude-ask").click().run()
    app.button(key="studies.exclude-yes").click().run()  # after the confirmation
    assert not app.exception
    assert f"{careless.annotator} excluded" in app.success[0].value
    assert _frame_with(app, "items_short").to_dict("records") == [
        {"unit": MEETINGS[0], "items": 36, "annotators_needed": 1, "items_short": 36}]
    careless_id = _annotator_id(url, careless)
    kept = _study_scores(url).query("annotator_id == @careless_id")
    assert len(kept) == 36 and set(kept["status"]) == {"excluded"}  # kept, marked
    assert dict(zip(kept["response_id"], kept["value"], strict=True)) == careless.given
    with reading(open_database(url)) as session:
        part = session.execute(select(Participation).where(
            Participation.annotator_id == careless_id)).scalar_one()
    assert (part.status, part.reason) == ("excluded", "reversed scale, failed checks")
    assert "no longer valid" in _arrive(template, careless).info[0].value  # neutral: no error

    # A replacement arrives through the same link, gets the re-opened meeting, completes it
    replacement = Participant("p7", _honest(7))
    units[replacement.name] = _work(url, template, replacement, gold)
    assert units[replacement.name] == MEETINGS[0]
    included = [p for p in people if p is not careless] + [replacement]

    # The researcher stores the aggregate and reads the agreement on the page
    app = _studies_page()
    assert _frame_with(app, "items_short").empty
    next(b for b in app.button if b.label == "Update the aggregate scores").click().run()
    assert "84 aggregate score(s) stored." in [s.value for s in app.success]
    scores = _study_scores(url)
    ok = scores[scores["status"] == "ok"]
    per_annotator = ok[ok["annotator_id"].notna()]
    assert len(per_annotator) == 84 * 3 and per_annotator.groupby("response_id").size().eq(3).all()
    aggregate = ok[ok["annotator_id"].isna()].set_index("response_id")["value"]
    expected = pd.DataFrame([p.given for p in included]).mean()  # NaN where not theirs
    assert len(aggregate) == 84
    for response_id, value in aggregate.items():
        assert value == pytest.approx(expected[response_id], abs=1e-12)
    assert (scores["status"] == "excluded").sum() == 36

    # ICC(2,k) per meeting and ICC(1,k) overall, against hand-written ANOVA formulas
    by_meeting = {m: [p for p in included if units[p.name] == m]
                  for m in MEETINGS}
    tables = {m: pd.DataFrame([p.given for p in ps]).T.dropna().to_numpy()
              for m, ps in by_meeting.items()}
    assert {m: t.shape for m, t in tables.items()} == {MEETINGS[0]: (36, 3),
                                                        MEETINGS[1]: (48, 3)}
    icc2k = {m: _icc2k(t) for m, t in tables.items()}
    icc1k = _icc1k(np.vstack(list(tables.values())))
    page_icc = pd.concat([_frame_with(app, "icc_type", "ICC(2,k)"),
                          _frame_with(app, "icc_type", "ICC(1,k)")]).set_index("group")
    for meeting, value in icc2k.items():
        assert page_icc.loc[meeting, "icc_type"] == "ICC(2,k)"
        assert page_icc.loc[meeting, "icc"] == pytest.approx(value, abs=1e-9)
        assert page_icc.loc[meeting, "n_raters"] == 3
    assert page_icc.loc["all", "icc"] == pytest.approx(icc1k, abs=1e-9)
    assert page_icc.loc["all", "n_targets"] == 84

    # Silver vs gold on the page: each included annotator's Pearson r and MAE with gold
    report = _frame_with(app, "flags").set_index("annotator")
    assert report.loc[careless.annotator, "status"] == "excluded"
    for person in included:
        ids = sorted(person.given)
        mine, ref = [person.given[i] for i in ids], [gold[i] for i in ids]
        assert report.loc[person.annotator, "gold_n"] == len(ids)
        assert report.loc[person.annotator, "gold_r"] == pytest.approx(
            stats.pearsonr(mine, ref).statistic, abs=1e-12)
        assert report.loc[person.annotator, "gold_mae"] == pytest.approx(
            np.mean(np.abs(np.subtract(mine, ref))), abs=1e-12)

    # The CLI exports give the same study evaluator rows
    icc = _export(url, capsys, "icc")
    icc = icc[icc["raters"] == f"{EVALUATOR} annotators"].set_index("group")
    assert list(icc.index) == [*MEETINGS, "all"]
    for meeting, value in icc2k.items():
        assert icc.loc[meeting, "icc"] == pytest.approx(value, abs=1e-6)  # CSV: 6 decimals
    assert icc.loc["all", "icc_type"] == "ICC(1,k)"
    assert icc.loc["all", "icc"] == pytest.approx(icc1k, abs=1e-6)
    corr = _export(url, capsys, "evaluator-correlation", "--evaluator", "gold-human",
                   "--evaluator", EVALUATOR).set_index("method")
    assert set(corr["evaluator_a"]) | set(corr["evaluator_b"]) == {"gold-human", EVALUATOR}
    ids = sorted(aggregate.index)
    silver, ref = aggregate[ids].to_numpy(), np.array([gold[i] for i in ids])
    assert (corr["n"] == 84).all()
    for method, func in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr),
                         ("kendall", stats.kendalltau)):
        assert corr.loc[method, "r"] == pytest.approx(func(silver, ref).statistic, abs=1e-6)
        assert corr.loc[method, "ci_low"] <= corr.loc[method, "r"] <= corr.loc[method, "ci_high"]
    print(f"figures: ICC(2,k) {icc2k}; ICC(1,k) {icc1k:.4f}; "
          f"silver-vs-gold pearson {corr.loc['pearson', 'r']:.4f}")
