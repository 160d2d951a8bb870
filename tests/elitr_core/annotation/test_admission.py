"""Admission (elitr_core/annotation/admission.py) on both databases: only an answer renews a
lease, and the join limit counts an IPv6 /64 as one client and an IPv4-mapped address as its
IPv4 form (issue 41, item 3)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select, update

from db.models import Annotator, Participation, utcnow
from db.transaction import reading, writing
from elitr_core.annotation.admission import join_key
from elitr_core.annotation.auth import AccessDenied
from elitr_core.annotation.studies import StudySpec, create_study, join_prolific, submit
from elitr_core.data.database import open_database
from tests.elitr_core.annotation_data import MEETINGS, build

STUDY, SESSION = "b" * 24, "c" * 24
FULL = "has enough annotators"
LIMIT = "as many participants from your network address"


@pytest.fixture
def url(db_url: str) -> str:
    build(db_url, questions=2, meetings=MEETINGS[:1])
    with writing(open_database(db_url)) as session:
        # one seat (one meeting, one annotator per item), a 30-minute lease, no join limit
        create_study(session, StudySpec(name="leased", per_item=1, lease_minutes=30,
                                        join_limit=0))
        create_study(session, StudySpec(name="limited", per_item=20, join_limit=2))
    return db_url


def _idle(url: str, minutes: int) -> None:
    """Every participation last seen ``minutes`` ago (as if that much time had passed)."""
    with writing(open_database(url)) as session:
        session.execute(update(Participation).values(
            last_seen_at=utcnow() - timedelta(minutes=minutes)))


def _status(url: str, pid: str) -> str | None:
    with reading(open_database(url)) as session:
        return session.execute(select(Participation.status).join(Annotator).where(
            Annotator.external_id == pid)).scalar_one_or_none()


def test_reopening_the_link_does_not_renew_a_lease(url: str) -> None:
    engine = open_database(url)
    holder = "1" * 24
    join_prolific(engine, "leased", holder, STUDY, SESSION)
    with pytest.raises(AccessDenied, match=FULL):
        join_prolific(engine, "leased", "2" * 24, STUDY, SESSION)
    # the holder's tab re-enters every few minutes for 40 minutes, never answering
    for _ in range(3):
        _idle(url, 31)
        join_prolific(engine, "leased", holder, STUDY, SESSION)
    join_prolific(engine, "leased", "3" * 24, STUDY, SESSION)  # the lease ran out: a seat
    assert _status(url, holder) is None  # never answered: nothing of theirs is left
    assert _status(url, "3" * 24) == "active"


def test_an_answer_renews_the_lease(url: str) -> None:
    engine = open_database(url)
    entry = join_prolific(engine, "leased", "1" * 24, STUDY, SESSION)
    _idle(url, 31)
    submit(engine, entry, 0, 7)  # an answer now: the lease runs from here
    with pytest.raises(AccessDenied, match=FULL):
        join_prolific(engine, "leased", "2" * 24, STUDY, SESSION)
    assert _status(url, "1" * 24) == "active"


@pytest.mark.parametrize("clients", [
    # four addresses of one IPv6 /64 (privacy addresses rotate within it at will)
    ["2001:db8:0:1::1", "2001:db8:0:1:aaaa:bbbb:cccc:dddd", "2001:db8:0:1:ffff::2",
     "2001:0db8:0000:0001::9"],
    # one IPv4 client as written and as an IPv4-mapped IPv6 address, in both spellings
    ["203.0.113.9", "::ffff:203.0.113.9", "::ffff:cb00:7109", "[::ffff:203.0.113.9]"],
])
def test_the_join_limit_counts_one_network_client_once(url: str, clients: list[str]) -> None:
    engine = open_database(url)
    for i, client in enumerate(clients[:2]):
        join_prolific(engine, "limited", f"{i:024x}", STUDY, SESSION, client=client)
    for i, client in enumerate(clients[2:], start=2):
        with pytest.raises(AccessDenied, match=LIMIT):
            join_prolific(engine, "limited", f"{i:024x}", STUDY, SESSION, client=client)
    # another /64, another IPv4 address: a client of its own
    other = "2001:db8:0:2::1" if ":" in clients[0] else "203.0.113.10"
    join_prolific(engine, "limited", f"{9:024x}", STUDY, SESSION, client=other)


@pytest.mark.parametrize(("client", "key"), [
    ("203.0.113.9", "203.0.113.9"),
    ("::ffff:203.0.113.9", "203.0.113.9"),
    ("2001:db8:0:1:aaaa::7", "2001:db8:0:1::/64"),
    ("fe80::1%eth0", "fe80::/64"),
    ("::1", "::/64"),
    ("localhost", "localhost"),
    ("", ""),
])
def test_join_key(client: str, key: str) -> None:
    assert join_key(client) == key


def test_a_lapsed_link_holder_goes_with_the_study_their_link_was_made_for(url: str) -> None:
    """An annotator whose personal link was made for a study (``personallink``) and whose
    lease lapsed before any answer is forgotten whole: their link's study goes with them
    (it refers to them: leaving it would make the deletion fail)."""
    from sqlalchemy import func

    from db.models import PersonalLink
    from elitr_core.annotation.admin import add_study_annotator
    from elitr_core.annotation.studies import enter_with_token

    engine = open_database(url)
    with writing(engine) as session:
        token, _ = add_study_annotator(session, "ann", "leased")
    enter_with_token(engine, token)  # holds the one seat
    _idle(url, 31)
    join_prolific(engine, "leased", "3" * 24, STUDY, SESSION)  # the lease ran out: a seat
    with reading(engine) as session:
        assert session.execute(select(func.count()).select_from(PersonalLink)).scalar() == 0
        assert session.execute(select(Annotator.id).where(
            Annotator.name == "ann")).scalar_one_or_none() is None
    assert _status(url, "3" * 24) == "active"


def test_end_states_are_study_ended_and_a_finisher_keeps_the_code(db_url: str) -> None:
    """Full, closed, excluded: StudyEnded (a neutral message on the page); a Prolific
    participant who finished their task before the study closed gets its code back, one who
    did not gets none (both databases)."""
    from elitr_core.annotation.admin import close_study
    from elitr_core.annotation.auth import StudyEnded
    from elitr_core.annotation.studies import queue_view

    build(db_url, questions=1, meetings=MEETINGS[:1])
    engine = open_database(db_url)
    with writing(engine) as session:
        create_study(session, StudySpec(name="ends", per_item=1, prolific_code="DONE42",
                                        attention_rate=0.0, join_limit=0))
    finisher = join_prolific(engine, "ends", "1" * 24, STUDY, SESSION)
    for position in range(queue_view(engine, finisher).total):
        submit(engine, finisher, position, 5)
    with pytest.raises(StudyEnded, match=FULL) as full:
        join_prolific(engine, "ends", "2" * 24, STUDY, "d" * 24)
    assert full.value.completion_code is None
    with writing(engine) as session:
        close_study(session, "ends")
    with pytest.raises(StudyEnded, match="finished your task") as back:
        join_prolific(engine, "ends", "1" * 24, STUDY, SESSION)
    assert back.value.completion_code == "DONE42"
    with pytest.raises(StudyEnded, match="is closed") as late:
        join_prolific(engine, "ends", "2" * 24, STUDY, "d" * 24)
    assert late.value.completion_code is None
