"""Who is admitted to a study's task, and for how long: seats, leases and join limits.

A unit has ``per_item`` seats (:class:`db.models.StudySeat`). An arrival takes the first free
seat (``SELECT ... FOR UPDATE SKIP LOCKED`` on PostgreSQL), so a burst of arrivals is
admitted or refused in parallel instead of queueing on the study row. A claim is a lease: a
participant idle (no answer) for the study's ``lease_minutes`` loses the seat to the next
arrival; their answers so far are kept with status ``lapsed`` and shown in the study's
tables, and one who never answered leaves nothing behind. ``join_limit`` new participants per
client address within ``join_window_minutes`` (the address the server saw, behind
``ELITR_TRUSTED_PROXIES`` the one the proxy reports): a Prolific id is cheap to invent, an
address is not. An IPv6 client counts by its /64 (one subscriber's network: a host picks any
address in it at will), an IPv4-mapped address (``::ffff:203.0.113.9``) as its IPv4 form
(:func:`join_key`). Only an answer renews a lease (``db.queue``'s submit); entering the link
again does not, so a tab left open cannot hold a seat for ever.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
import random
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import Session

from db import admission as aq
from db import queue as q
from db import studies as sq
from db.models import Study, utcnow
from elitr_core.annotation.auth import AccessDenied, StudyEnded

#: a participant unseen for this long no longer counts towards the concurrency cap
ACTIVE_WINDOW = timedelta(hours=1)
#: a silver study's lease when the researcher sets none: Prolific's usual maximum time for a
#: task of about 20 minutes is about an hour
DEFAULT_LEASE_MINUTES = 60
#: a silver study's joins per client address per window when the researcher sets none
DEFAULT_JOIN_LIMIT = 3
DEFAULT_JOIN_WINDOW_MINUTES = 60


def order_seed(study_seed: int, annotator_id: int, unit: str) -> int:
    """The queue-order seed of one annotator's unit (stable, recorded on the participation)."""
    digest = hashlib.sha256(f"{study_seed}:{annotator_id}:{unit}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1


def _queue(
    items: list[dict[str, Any]], rate: float, seed: int
) -> list[tuple[str, int, str | None]]:
    """(kind, response id, check text) in presentation order, attention checks mixed in."""
    rng = random.Random(seed)
    queue: list[tuple[str, int, str | None]] = [("item", it["response_id"], None) for it in items]
    n_checks = min(len(items), math.ceil(rate * len(items))) if rate > 0 else 0
    for i, src in enumerate(rng.sample(items, n_checks)):
        others = [it["reference"] for it in items if it["question_id"] != src["question_id"]]
        if i % 2 == 1 and others:
            # an answer to another question: expected to score 1-2
            queue.append(("attention-low", src["response_id"], rng.choice(others)))
        else:
            # the reference answer itself: expected to score 9-10
            queue.append(("attention-high", src["response_id"], None))
    rng.shuffle(queue)
    return queue


def idle_before(study: Study, now: datetime | None = None) -> datetime | None:
    """Holders unseen since this time have lost their lease (None: the study has none)."""
    if not study.lease_minutes:
        return None
    return (now or utcnow()) - timedelta(minutes=study.lease_minutes)


#: the IPv6 prefix one client counts as: RFC 6177 / RIPE-690 give a subscriber a /64 or more
IPV6_CLIENT_PREFIX = 64


def join_key(client: str) -> str:
    """What the join limit counts ``client`` as: an IPv4 address as written, the IPv4 form of
    an IPv4-mapped IPv6 address, the /64 network of any other IPv6 address; a value that is
    no address (``localhost``) as written.

    Examples
    --------
    >>> join_key("2001:db8:0:1:aaaa::7"), join_key("::ffff:203.0.113.9")
    ('2001:db8:0:1::/64', '203.0.113.9')
    """
    try:
        address = ipaddress.ip_address(client.strip().strip("[]").split("%")[0])
    except ValueError:
        return client
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, IPV6_CLIENT_PREFIX), strict=False))
    return str(address)


def check_join_limit(session: Session, study: Study, client: str) -> None:
    """Refuse a new participant from ``client`` once the study's limit for that address is
    reached within its window. Arrivals from one address queue on a lock of that address
    (others do not), so a burst from one address cannot slip past the count."""
    if not study.join_limit or not client:
        return
    assert study.id is not None
    client = join_key(client)
    aq.lock_key(session=session, namespace=aq.ADDRESS_LOCK, text=f"{study.id}:{client}")
    since = utcnow() - timedelta(minutes=study.join_window_minutes)
    if aq.joins_since(session=session, study_id=study.id, client=client,
                      since=since) >= study.join_limit:
        raise AccessDenied(f"Study {study.name} has taken as many participants from your "
                           f"network address as it allows within {study.join_window_minutes} "
                           "minutes: please try again later, or return the study on "
                           "Prolific.")


def claim_unit(session: Session, study: Study, annotator_id: int, *,
               prolific: tuple[str, str] | None = None, client: str = "",
               mine: set[str] | None = None, start: int | None = None) -> int:
    """Give the annotator a free seat (the emptiest units first) and build their queue;
    return the participation's id.

    A seat whose lease ran out passes to this annotator: its previous holder is marked
    lapsed (:func:`db.admission.lapse`) and the aggregate of what they scored recomputed.
    A study whose stopping rule is met seats nobody (:func:`.stopping.check_stop`).
    ``mine``: the units the annotator holds already, when the caller has just read their
    participations (an arrival with none: ``set()``); read here otherwise. ``start``: the
    first free position of their queue when the caller knows it (an annotator created in
    this transaction: 0); read here otherwise.
    """
    assert study.id is not None
    from elitr_core.annotation.stopping import check_stop

    if check_stop(session, study) is not None:
        raise StudyEnded(f"Study {study.name} has collected the scores it needs: thank you, "
                           "there is nothing left for you to score.")
    if study.max_concurrent is not None:
        active = q.count_active(session=session, study_id=study.id,
                                since=utcnow() - ACTIVE_WINDOW)
        if active >= study.max_concurrent:
            raise StudyEnded("This study is full right now: please return your submission "
                               "on Prolific or try again later.")
    if mine is None:
        mine = {p.unit for p in q.participations(session=session, study_id=study.id,
                                                 annotator_id=annotator_id)}
    seat = aq.free_seat(session=session, study_id=study.id, skip_units=mine,
                        idle_before=idle_before(study))
    if seat is None:
        raise StudyEnded(f"Every task of study {study.name} has enough annotators: thank you, "
                           "there is nothing left for you to score.")
    unit = str(seat.unit)
    seed = order_seed(study.order_seed, annotator_id, unit)
    part = q.new_participation_id(
        session=session, study_id=study.id, annotator_id=annotator_id, unit=unit,
        order_seed=seed, prolific_session_id=prolific[1] if prolific else None,
        prolific_study_id=prolific[0] if prolific else None)
    aq.take_seat(session=session, seat_id=seat.id, participation_id=part)
    if seat.participation_id is not None:
        # the aggregate lock before the lapsed holder's rows: their own submit in flight
        # holds it and then writes those rows (db.queue.lock_aggregate)
        q.lock_aggregate(session=session, study_id=study.id)
        marked = aq.lapse(session=session, participation_id=seat.participation_id,
                          evaluator_id=study.evaluator_id)
        if marked:
            sq.store_aggregates(session=session, evaluator_id=study.evaluator_id,
                                response_ids=marked)
    if client:
        aq.add_join(session=session, study_id=study.id, client=join_key(client))
    if start is None:
        start = q.next_position(session=session, study_id=study.id, annotator_id=annotator_id)
    items = q.unit_items(session=session, study_id=study.id, unit=unit)
    q.add_assignments(session=session, rows=[
        {"study_id": study.id, "annotator_id": annotator_id, "response_id": rid,
         "position": start + i, "kind": kind, "participation_id": part,
         "check_text": text, "unclear": False}
        for i, (kind, rid, text) in enumerate(_queue(items, study.attention_rate, seed))])
    return part
