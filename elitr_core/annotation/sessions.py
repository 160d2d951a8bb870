"""Researcher sessions that survive a reload: a signed, expiring cookie and a login limit.

A password login creates a :class:`db.models.ResearcherSession` and hands the browser a
one-time ticket; the server's ``/session/start`` route redeems it for an HttpOnly cookie
``TOKEN.EXPIRES.SIGNATURE`` (HMAC-SHA256 with the server secret over ``TOKEN.EXPIRES``). The
cookie holds no password; the database keeps only SHA-256 digests of the token and ticket, so
logging out (``revoked_at``) makes a copied cookie worthless, and an expired one is refused
even if the browser kept it.

Login attempts are rows of :class:`db.models.LoginAttempt`: the limit counts them, so neither
a reload nor a server restart resets it. Each client address may fail ``FREE_FAILURES`` times
in ``WINDOW``; after that it waits ``BASE_WAIT`` doubling with every further failure (capped at
``MAX_WAIT``). All clients together may fail ``FREE_FAILURES_OVERALL`` times in ``WINDOW``
(one attacker with many addresses) before everyone waits the same way.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlmodel import Session

from db import auth as q
from db.models import LoginAttempt, ResearcherSession
from elitr_core import settings

COOKIE_NAME = "elitr_session"
SECRET_ENV = settings.SESSION_SECRET
SESSION_HOURS_ENV = settings.SESSION_HOURS
TICKET_LIFETIME = timedelta(seconds=60)
WINDOW = timedelta(minutes=15)
FREE_FAILURES = 5
FREE_FAILURES_OVERALL = 50
BASE_WAIT = timedelta(seconds=30)
MAX_WAIT = timedelta(minutes=15)
_SECRET_NAME = "session-cookie"


def _now(now: datetime | None) -> datetime:
    return now or datetime.now(UTC)


def _aware(value: datetime) -> datetime:
    # SQLite hands datetimes back without a zone; they were stored in UTC
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _bytes(text: str) -> bytes:
    """Any text as bytes, never an error: a cookie, ticket or token is whatever a client sent
    (non-ASCII, lone surrogates), and anything that is not ours simply does not match."""
    return text.encode("utf-8", "surrogatepass")


def _digest(text: str) -> str:
    return hashlib.sha256(_bytes(text)).hexdigest()


def session_lifetime() -> timedelta:
    """How long a login lasts (``ELITR_SESSION_HOURS``, default 12 hours)."""
    return timedelta(hours=settings.session_hours())  # parsed and bounded there


def session_secret(session: Session) -> bytes:
    """The cookie signing key: ``ELITR_SESSION_SECRET``, else one generated on first use and
    kept in the database (so cookies survive a restart and every server process agrees)."""
    configured = settings.value(SECRET_ENV)
    if configured:
        return configured.encode()
    return q.server_secret(session=session, name=_SECRET_NAME,
                           new_value=secrets.token_hex(32)).encode()


# --- the attempt limit ----------------------------------------------------------------------


def _wait_after(failures: int, free: int, last: datetime | None, now: datetime) -> timedelta:
    if failures < free or last is None:
        return timedelta(0)
    wait = min(BASE_WAIT * 2 ** (failures - free), MAX_WAIT)
    # capped at the wait itself: with the clock set back, `last` lies in the future and the
    # plain difference would grow by however far back it went (an hour, a day)
    return min(max(_aware(last) + wait - now, timedelta(0)), wait)


def login_wait(session: Session, client: str, now: datetime | None = None) -> timedelta:
    """How long ``client`` must wait before its next attempt (zero: it may try now)."""
    now = _now(now)
    since = now - WINDOW
    last_ok = q.last_login(session=session, client=client, since=since)
    mine = q.login_failures(session=session, since=_aware(last_ok) if last_ok else since,
                            client=client)
    everyone = q.login_failures(session=session, since=since)
    return max(_wait_after(mine[0], FREE_FAILURES, mine[1], now),
               _wait_after(everyone[0], FREE_FAILURES_OVERALL, everyone[1], now))


def record_attempt(session: Session, client: str, now: datetime | None = None) -> LoginAttempt:
    """Record an attempt as failed before the password is checked (so attempts sent in
    parallel all count); :func:`mark_success` turns it into a success."""
    return q.add_login_attempt(session=session, client=client[:64], ok=False, at=_now(now))


def mark_success(session: Session, attempt_id: int) -> None:
    """The attempt ``attempt_id`` gave the right password."""
    q.mark_login_ok(session=session, attempt_id=attempt_id)


def describe_wait(wait: timedelta) -> str:
    """The refusal shown while a client waits."""
    seconds = max(int(wait.total_seconds() + 0.999), 1)
    span = f"{seconds} s" if seconds < 120 else f"{seconds // 60} min"
    return (f"Too many wrong passwords: wait {span} before trying again "
            "(the wait doubles with every further wrong password).")


# --- sessions and the cookie ----------------------------------------------------------------


@dataclass(frozen=True)
class Cookie:
    """What the ``/session/start`` route sets: the value and its lifetime in seconds."""

    value: str
    max_age: int


def start_session(session: Session, client: str, now: datetime | None = None) -> str:
    """Open a researcher session for a client that gave the password; return the one-time
    ticket the browser redeems (within a minute) at ``/session/start``."""
    now = _now(now)
    ticket = secrets.token_urlsafe(32)
    q.add_researcher_session(
        session=session,
        token_hash=_digest(secrets.token_urlsafe(32)),  # replaced when the ticket is redeemed
        ticket_hash=_digest(ticket), ticket_expires_at=now + TICKET_LIFETIME,
        client=client[:64], created_at=now, expires_at=now + session_lifetime())
    return ticket


def _sign(secret: bytes, payload: str) -> str:
    return hmac.new(secret, _bytes(payload), hashlib.sha256).hexdigest()


def redeem_ticket(session: Session, ticket: str, now: datetime | None = None) -> Cookie | None:
    """The cookie for a fresh, unused ticket; None for anything else (used, late, unknown)."""
    now = _now(now)
    row = q.researcher_session(session=session, ticket_hash=_digest(ticket or ""))
    if row is None or row.revoked_at is not None or row.ticket_expires_at is None:
        return None
    row.ticket_hash, expired = None, _aware(row.ticket_expires_at) < now  # one use only
    row.ticket_expires_at = None
    if expired:
        return None
    token = secrets.token_urlsafe(32)
    row.token_hash = _digest(token)
    expires = int(_aware(row.expires_at).timestamp())
    payload = f"{token}.{expires}"
    value = f"{payload}.{_sign(session_secret(session), payload)}"
    return Cookie(value=value, max_age=max(expires - int(now.timestamp()), 0))


#: the cookie's shape: token (token_urlsafe), expiry (Unix seconds, ASCII digits), signature
_COOKIE = re.compile(r"([A-Za-z0-9_-]{1,100})\.([0-9]{1,12})\.([0-9a-f]{64})")


def _verified_token(session: Session, value: str, now: datetime) -> str | None:
    """The cookie's token when ``value`` is a cookie we signed and it has not expired; None
    for anything else (any text a client may send: other shapes, non-ASCII, Unicode digits)."""
    match = _COOKIE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        return None
    token, expires, signature = match.groups()
    expected = _sign(session_secret(session), f"{token}.{expires}")
    if not hmac.compare_digest(expected.encode(), signature.encode()) or \
            int(expires) <= now.timestamp():
        return None
    return token


def _live_session(session: Session, value: str, now: datetime) -> ResearcherSession | None:
    token = _verified_token(session, value, now)
    if token is None:
        return None
    row = q.researcher_session(session=session, token_hash=_digest(token))
    if row is None or row.revoked_at is not None or _aware(row.expires_at) <= now:
        return None
    return row


def check_cookie(session: Session, value: str, now: datetime | None = None) -> bool:
    """True when the cookie is ours (signature), unexpired, and its session not revoked."""
    return _live_session(session, value, _now(now)) is not None


def logout_token(session: Session, value: str) -> str:
    """The token the Log out form posts with the cookie ``value`` (an HMAC of the cookie's
    token): a page of another site knows neither, so it cannot log a researcher out."""
    token = (value or "").split(".")[0]
    return _sign(session_secret(session), f"logout.{token}")


def check_logout_token(session: Session, value: str, token: str) -> bool:
    """True when ``token`` is :func:`logout_token` of the cookie ``value`` (constant time)."""
    return bool(value) and hmac.compare_digest(_bytes(logout_token(session, value)),
                                               _bytes(token or ""))


def revoke(session: Session, value: str, now: datetime | None = None) -> bool:
    """Log out: the session behind the cookie opens nothing any more. True when one was open."""
    now = _now(now)
    row = _live_session(session, value, now)
    if row is None:
        return False
    row.revoked_at = now
    return True
