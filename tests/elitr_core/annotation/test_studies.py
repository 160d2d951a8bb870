"""Study creation, unit claims, queues, attention checks, answers and refusals."""

from __future__ import annotations

from collections import Counter

import pytest
from sqlalchemy import func, select

from db.models import Assignment, Participation, Score
from db.transaction import reading, writing
from elitr_core.annotation.admin import add_annotator, close_study
from elitr_core.annotation.auth import AccessDenied
from elitr_core.annotation.studies import (
    StudySpec,
    create_study,
    enter_with_token,
    item_view,
    join_prolific,
    order_seed,
    queue_view,
    submit,
    take_another_unit,
)
from elitr_core.data.database import open_database
from elitr_core.errors import UserError
from tests.elitr_core.annotation_data import MODELS, build

PID, STUDY, SESSION = "a" * 24, "b" * 24, "c" * 24


@pytest.fixture
def url(sqlite_url: str) -> str:
    build(sqlite_url)
    return sqlite_url


def _create(url: str, **kw: object) -> dict[str, object]:
    spec = StudySpec(**{"name": "s1", "pool": "silver", "per_item": 2, **kw})  # type: ignore[arg-type]
    with writing(open_database(url)) as session:
        return create_study(session, spec)


def _annotator(url: str, name: str, pool: str = "silver") -> str:
    with writing(open_database(url)) as session:
        return add_annotator(session, name, pool)


def test_create_by_meeting_and_random_batches(url: str) -> None:
    summary = _create(url)
    assert summary == {"study": "s1", "evaluator": "silver-human:s1", "items": 30, "units": 2,
                       "per_item": 2}
    assert _create(url, name="s2", models=MODELS[:1], meetings=("meeting_en_test2_901",))[
        "items"] == 5
    assert _create(url, name="s3", assignment="random", batch=7)["units"] == 5  # 7,7,7,7,2


@pytest.mark.parametrize("kw, message", [
    ({"per_item": 0}, "per-item"), ({"assignment": "random"}, "--batch"),
    ({"split": "dev"}, "no response matches"), ({"attention_rate": 0.9}, "attention"),
    ({"pool": "bronze"}, "pool"), ({"name": " "}, "name")])
def test_create_refuses_bad_options(url: str, kw: dict[str, object], message: str) -> None:
    with pytest.raises(UserError, match=message):
        _create(url, **kw)


def test_create_refuses_a_taken_name(url: str) -> None:
    _create(url)
    with pytest.raises(UserError, match="exists already"):
        _create(url)


def test_units_fill_up_to_per_item_fewest_first(url: str) -> None:
    _create(url)
    engine = open_database(url)
    entries = [enter_with_token(engine, _annotator(url, f"a{i}")) for i in range(4)]
    with reading(engine) as session:
        units = Counter(p.unit for p in session.execute(select(Participation)).scalars())
    assert units == {"meeting_en_test2_901": 2, "meeting_en_test2_902": 2}
    late = _annotator(url, "a5")
    with pytest.raises(AccessDenied, match="enough annotators"):
        enter_with_token(engine, late, "s1")
    with pytest.raises(AccessDenied, match="no open study"):
        enter_with_token(engine, late)
    # entering again resumes: no second participation
    assert queue_view(engine, entries[0]).total == 15


def test_queue_order_is_shuffled_per_annotator_and_reproducible(url: str) -> None:
    _create(url, per_item=2, seed=11, meetings=("meeting_en_test2_901",))
    engine = open_database(url)
    e1 = enter_with_token(engine, _annotator(url, "a1"))
    e2 = enter_with_token(engine, _annotator(url, "a2"))
    with reading(engine) as session:
        parts = list(session.execute(select(Participation)).scalars())
        orders = [[a.response_id for a in session.execute(
            select(Assignment).where(Assignment.annotator_id == e.annotator_id)
            .order_by(Assignment.position)).scalars()] for e in (e1, e2)]
    assert parts[0].order_seed == order_seed(11, e1.annotator_id, parts[0].unit)
    assert parts[0].unit == parts[1].unit == "meeting_en_test2_901"
    assert sorted(orders[0]) == sorted(orders[1]) and orders[0] != orders[1]


def test_attention_checks_at_the_set_rate(url: str) -> None:
    _create(url, attention_rate=0.4)
    engine = open_database(url)
    entry = enter_with_token(engine, _annotator(url, "a1"))
    with reading(engine) as session:
        kinds = Counter(a.kind for a in session.execute(select(Assignment)).scalars())
    assert kinds == {"item": 15, "attention-high": 3, "attention-low": 3}
    views = [item_view(engine, entry, p) for p in range(21)]
    highs = [v for v in views if v.response == v.reference]
    assert len(highs) == 3
    assert all("Answer of responder" in v.response or v.response.startswith("Reference")
               for v in views)


def test_submit_revise_and_no_duplicates(url: str) -> None:
    _create(url)
    engine = open_database(url)
    entry = enter_with_token(engine, _annotator(url, "a1"))
    view = submit(engine, entry, 0, 7, comment=" why ", seconds=3.0)
    assert (view.answered, view.first_open) == (1, 1)
    submit(engine, entry, 0, 7, seconds=1.0)  # double click
    submit(engine, entry, 0, 4, unclear=True, seconds=2.0)  # revision
    with reading(engine) as session:
        rows = list(session.execute(select(Score).where(Score.annotator_key == entry.annotator_id))
                    .scalars())
    assert len(rows) == 1
    assert (rows[0].value, rows[0].seconds_spent) == (4.0, 6.0)
    item = item_view(engine, entry, 0)
    assert (item.value, item.unclear) == (4, True)
    for bad in (0, 11, 5.5, True):
        with pytest.raises(UserError, match="1 to 10"):
            submit(engine, entry, 1, bad)  # type: ignore[arg-type]
    with pytest.raises(AccessDenied, match="not part of your assignments"):
        submit(engine, entry, 999, 5)


def test_end_of_queue_completion_code_and_another_unit(url: str) -> None:
    _create(url, per_item=1, prolific_code="CODE42")
    engine = open_database(url)
    entry = enter_with_token(engine, _annotator(url, "a1"))
    for position in range(15):
        view = submit(engine, entry, position, 5)
    assert view.done and view.completion_code == "CODE42" and view.can_take_more
    view = take_another_unit(engine, entry)
    assert (view.total, view.answered, view.first_open) == (30, 15, 15)


def test_closed_study_and_foreign_items_are_refused(url: str) -> None:
    _create(url)
    engine = open_database(url)
    e1 = enter_with_token(engine, _annotator(url, "a1"))
    gold_token = _annotator(url, "g1", pool="gold")
    with pytest.raises(AccessDenied, match="no open study"):
        enter_with_token(engine, gold_token)
    with pytest.raises(AccessDenied, match="does not give access"):
        enter_with_token(engine, gold_token, "s1")
    with pytest.raises(AccessDenied, match="not valid"):
        enter_with_token(engine, "x" * 43)
    with writing(engine) as session:
        close_study(session, "s1")
    with pytest.raises(AccessDenied, match="closed"):
        submit(engine, e1, 0, 5)
    with pytest.raises(AccessDenied, match="closed"):
        enter_with_token(engine, _annotator(url, "late"), "s1")


def test_prolific_join_resume_session_binding_and_cap(url: str) -> None:
    _create(url, max_concurrent=1, prolific_study_id=STUDY)
    engine = open_database(url)
    entry = join_prolific(engine, "s1", PID, STUDY, SESSION)
    assert entry.prolific and join_prolific(engine, "s1", PID, STUDY, SESSION) == entry
    with pytest.raises(AccessDenied, match="session does not match"):
        join_prolific(engine, "s1", PID, STUDY, "d" * 24)
    with pytest.raises(AccessDenied, match="another study"):
        join_prolific(engine, "s1", "e" * 24, "f" * 24, SESSION)
    with pytest.raises(AccessDenied, match="full right now"):
        join_prolific(engine, "s1", "e" * 24, STUDY, "d" * 24)
    with pytest.raises(AccessDenied, match="does not exist"):
        join_prolific(engine, "nope", PID, STUDY, SESSION)
    with reading(engine) as session:
        assert session.execute(select(func.count()).select_from(Participation)).scalar_one() == 1


def test_prolific_url_encodes_the_study_name() -> None:
    from elitr_core.annotation.studies import prolific_url

    url = prolific_url("pilot & test", host="https://elitr.example.org/")
    assert url.startswith("https://elitr.example.org/?study=pilot%20%26%20test&PROLIFIC_PID=")
    assert url.endswith("&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}")


def test_the_annotation_path_on_both_databases(db_url: str) -> None:
    """Items and attention checks shown and answered, revisions, the finishing submit's
    aggregate, and every refusal, through the statements each database runs."""
    from elitr_core.annotation.quality import exclude_annotator
    from elitr_core.annotation.studies import Entry

    build(db_url)
    _create(db_url, per_item=1, meetings=("meeting_en_test2_901",), attention_rate=0.4)
    engine = open_database(db_url)
    entry = enter_with_token(engine, _annotator(db_url, "a1"))
    with reading(engine) as session:
        rows = list(session.execute(select(Assignment).order_by(Assignment.position)).scalars())
    assert [r.position for r in rows] == list(range(21))
    for row in rows:
        item = item_view(engine, entry, row.position)
        assert (item.value, item.comment, item.unclear) == (None, "", False)
        assert not any(m in text for m in MODELS for text in vars(item).values()
                       if isinstance(text, str))  # blind to the model
        if row.kind == "attention-high":
            assert item.response == item.reference
        elif row.kind == "attention-low":
            assert item.response == row.check_text != item.reference
        else:
            assert item.response.startswith("Answer of responder")
        value = {"attention-high": 10, "attention-low": 1}.get(row.kind, 7)
        view = submit(engine, entry, row.position, value, comment=" seen ", seconds=2.0)
        assert (view.answered, view.done) == (row.position + 1, row.position == 20)
    assert view.completion_code is None and not view.can_take_more
    first_item = next(r for r in rows if r.kind == "item")
    first_check = next(r for r in rows if r.kind == "attention-low")
    submit(engine, entry, first_item.position, 4, unclear=True, seconds=3.0)  # a revision
    item = item_view(engine, entry, first_item.position)
    assert (item.value, item.comment, item.unclear) == (4, "", True)
    check = item_view(engine, entry, first_check.position)
    assert (check.value, check.comment) == (1, "")
    with reading(engine) as session:
        scores = list(session.execute(select(Score).join(Assignment, (
            Assignment.response_id == Score.response_id) & (Assignment.kind == "item"))
            .where(Score.annotator_key == entry.annotator_id)).scalars())
        aggregates = {s.response_id: s.value for s in session.execute(
            select(Score).where(Score.annotator_key == 0, Score.evaluator_id ==
                                scores[0].evaluator_id)).scalars()}
        checks = session.execute(select(Assignment.check_value).where(
            Assignment.kind != "item").order_by(Assignment.position)).scalars().all()
        part = session.execute(select(Participation)).scalar_one()
    assert len(scores) == 15  # attention checks are kept out of the scores
    revised = next(s for s in scores if s.response_id == first_item.response_id)
    assert (revised.value, revised.seconds_spent, revised.raw) == (4.0, 5.0, None)
    assert {s.raw for s in scores if s is not revised} == {"seen"}
    assert aggregates == {s.response_id: s.value for s in scores}  # stored by the finish
    assert sorted(checks) == [1.0, 1.0, 1.0, 10.0, 10.0, 10.0]
    assert part.status == "done" and part.finished_at is not None
    assert queue_view(engine, entry).answered == 21

    for call in (lambda: item_view(engine, entry, 21), lambda: submit(engine, entry, 21, 5)):
        with pytest.raises(AccessDenied, match="not part of your assignments"):
            call()
    ghost = Entry(entry.annotator_id, 10**6, "ghost")
    for call in (lambda: item_view(engine, ghost, 0), lambda: submit(engine, ghost, 0, 5),
                 lambda: queue_view(engine, ghost)):
        with pytest.raises(AccessDenied, match="no longer exists"):
            call()
    with writing(engine) as session:
        exclude_annotator(session, "s1", "a1", "careless")
    with pytest.raises(AccessDenied, match="no longer valid"):
        submit(engine, entry, 0, 5)
    with writing(engine) as session:
        close_study(session, "s1")
    with pytest.raises(AccessDenied, match="closed"):
        submit(engine, entry, 0, 5)


def test_a_submit_and_the_next_item_run_four_statements_on_postgresql(db_url: str) -> None:
    """The annotation hot path's statements (bench/results/annotation-unit-of-work-*.md): on
    PostgreSQL a submit is its target's SELECT, the study's aggregate lock, one WITH ... UPDATE
    (answer, its response's mean, queue row, participation) and the queue's SELECT, and the
    next item one SELECT; SQLite runs the same reads, its BEGINs and four writes."""
    from sqlalchemy import event

    build(db_url)
    _create(db_url, per_item=1, meetings=("meeting_en_test2_901",), attention_rate=0.0)
    engine = open_database(db_url)
    entry = enter_with_token(engine, _annotator(db_url, "a1"))
    item_view(engine, entry, 0)
    seen: list[str] = []

    def count(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        seen.append(statement.split(None, 1)[0].upper())

    event.listen(engine, "before_cursor_execute", count)
    try:
        submit(engine, entry, 0, 7, seconds=1.0)
        item_view(engine, entry, 1)
    finally:
        event.remove(engine, "before_cursor_execute", count)
    if engine.dialect.name == "postgresql":  # the target, the study's aggregate lock, ...
        assert seen == ["SELECT", "SELECT", "WITH", "SELECT", "SELECT"]
    else:  # the answer, its response's aggregate, the queue row, the participation
        assert seen == ["BEGIN", "SELECT", "INSERT", "INSERT", "UPDATE", "UPDATE", "SELECT",
                        "BEGIN", "SELECT"]
