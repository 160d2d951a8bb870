"""Researcher sessions: the attempt limit kept in the database, the signed expiring cookie,
one-time tickets and revocation (on SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import select

from db.engine import dispose_engines
from db.models import LoginAttempt, ResearcherSession
from elitr_core.annotation import sessions
from elitr_core.annotation.sessions import (
    BASE_WAIT,
    FREE_FAILURES,
    FREE_FAILURES_OVERALL,
    check_cookie,
    check_logout_token,
    login_wait,
    logout_token,
    mark_success,
    record_attempt,
    redeem_ticket,
    revoke,
    start_session,
)
from elitr_core.data.database import open_database, reading, writing

T0 = datetime(2026, 11, 23, 4, 0, tzinfo=UTC)


def _fail(url: str, client: str, times: int, at: datetime) -> None:
    with writing(open_database(url)) as session:
        for i in range(times):
            record_attempt(session, client, at + timedelta(seconds=i))


def _wait(url: str, client: str, now: datetime) -> timedelta:
    with reading(open_database(url)) as session:
        return login_wait(session, client, now)


def test_the_limit_backs_off_per_client_and_survives_a_restart(db_url: str) -> None:
    _fail(db_url, "10.0.0.1", FREE_FAILURES - 1, T0)
    assert _wait(db_url, "10.0.0.1", T0 + timedelta(seconds=10)) == timedelta(0)
    _fail(db_url, "10.0.0.1", 1, T0 + timedelta(seconds=10))  # the fifth failure
    dispose_engines()  # a restart: nothing is remembered but the database
    last = T0 + timedelta(seconds=10)
    assert _wait(db_url, "10.0.0.1", last) == BASE_WAIT
    assert _wait(db_url, "10.0.0.2", last) == timedelta(0)  # another client is not held
    _fail(db_url, "10.0.0.1", 1, last + BASE_WAIT)  # the sixth: the wait doubles
    assert _wait(db_url, "10.0.0.1", last + BASE_WAIT) == 2 * BASE_WAIT
    # after the window the failures are forgotten
    assert _wait(db_url, "10.0.0.1", last + timedelta(minutes=40)) == timedelta(0)
    with reading(open_database(db_url)) as session:
        assert len(session.exec(select(LoginAttempt)).all()) == FREE_FAILURES + 1


def test_a_success_clears_the_clients_count(sqlite_url: str) -> None:
    _fail(sqlite_url, "a", FREE_FAILURES - 1, T0)
    with writing(open_database(sqlite_url)) as session:
        attempt = record_attempt(session, "a", T0 + timedelta(seconds=30))
        mark_success(session, attempt.id)  # type: ignore[arg-type]
    _fail(sqlite_url, "a", FREE_FAILURES - 1, T0 + timedelta(seconds=40))
    assert _wait(sqlite_url, "a", T0 + timedelta(seconds=50)) == timedelta(0)


def test_many_addresses_together_are_held_too(sqlite_url: str) -> None:
    with writing(open_database(sqlite_url)) as session:
        for i in range(FREE_FAILURES_OVERALL):
            record_attempt(session, f"10.1.{i}.1", T0)
    assert _wait(sqlite_url, "10.9.9.9", T0) == BASE_WAIT


def _cookie(url: str, now: datetime = T0) -> str:
    with writing(open_database(url)) as session:
        ticket = start_session(session, "a", now)
    with writing(open_database(url)) as session:
        cookie = redeem_ticket(session, ticket, now + timedelta(seconds=5))
    assert cookie is not None and cookie.max_age > 3600
    return cookie.value


def test_cookie_is_signed_expires_and_revokes(db_url: str) -> None:
    value = _cookie(db_url)
    token, expires, signature = value.split(".")
    with reading(open_database(db_url)) as session:
        assert check_cookie(session, value, T0 + timedelta(hours=1))
        tampered = f"{token}.{int(expires) + 3600}.{signature}"  # a longer life, same signature
        assert not check_cookie(session, tampered, T0 + timedelta(hours=1))
        assert not check_cookie(session, f"{token}.{expires}.{'0' * 64}", T0)
        assert not check_cookie(session, "garbage", T0)
        assert not check_cookie(session, value, T0 + timedelta(hours=13))  # expired
        stored = session.exec(select(ResearcherSession)).one()
        assert token not in (stored.token_hash, stored.ticket_hash)  # digests only
    with writing(open_database(db_url)) as session:
        assert revoke(session, value, T0 + timedelta(hours=2))
    with reading(open_database(db_url)) as session:
        assert not check_cookie(session, value, T0 + timedelta(hours=2))


def test_a_ticket_works_once_and_only_for_a_minute(sqlite_url: str) -> None:
    engine = open_database(sqlite_url)
    with writing(engine) as session:
        ticket = start_session(session, "a", T0)
        late = start_session(session, "a", T0)
    with writing(engine) as session:
        assert redeem_ticket(session, ticket, T0) is not None
    with writing(engine) as session:
        assert redeem_ticket(session, ticket, T0) is None
        assert redeem_ticket(session, late, T0 + timedelta(minutes=2)) is None
        assert redeem_ticket(session, "", T0) is None


def test_the_secret_is_kept_across_restarts_and_the_environment_wins(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    value = _cookie(sqlite_url)
    dispose_engines()
    with reading(open_database(sqlite_url)) as session:
        assert check_cookie(session, value, T0)
    monkeypatch.setenv(sessions.SECRET_ENV, "another secret")
    with reading(open_database(sqlite_url)) as session:
        assert not check_cookie(session, value, T0)


def test_log_out_needs_the_session_s_own_token(db_url: str) -> None:
    value, other = _cookie(db_url), _cookie(db_url)
    with reading(open_database(db_url)) as session:
        token = logout_token(session, value)
        assert check_logout_token(session, value, token)
        assert token not in value  # derived with the server secret, not readable from it
        flipped = token[:-1] + ("1" if token[-1] == "0" else "0")
        for wrong in ("", logout_token(session, other), flipped, "é" * 64):
            assert not check_logout_token(session, value, wrong)
        assert not check_logout_token(session, "", token)


#: cookie values a client may send (issue 27, item 6): non-ASCII, Unicode digits, lone
#: surrogates, NUL, long, a valid shape with a foreign signature
ODD_COOKIES = ["abc.9999999999.éé", "abc.١٢٣٤٥٦٧٨٩٠.x", "abc.²." + "0" * 64, "\udcff.1.2",
               "a\x00b.9999999999." + "0" * 64, "é" * 100_000, "..", "", "ＡＢＣ.9999999999.ff",
               "abc.9999999999." + "é" * 64, "abc.99999999999999999999." + "0" * 64]


@pytest.mark.parametrize("value", ODD_COOKIES)
def test_a_cookie_of_any_text_is_not_logged_in(value: str, db_url: str) -> None:
    with writing(open_database(db_url)) as session:
        assert check_cookie(session, value, T0) is False
        assert revoke(session, value, T0) is False
        assert check_logout_token(session, value, value) is False
        assert check_logout_token(session, value, logout_token(session, value)) in (True, False)
        assert redeem_ticket(session, value, T0) is None


@pytest.mark.parametrize("back", [timedelta(hours=1), timedelta(days=1), timedelta(days=400)])
def test_the_wait_never_exceeds_its_cap_when_the_clock_goes_back(back: timedelta,
                                                                 db_url: str) -> None:
    """Issue 27 item 7: the failures were recorded, then the clock was set back; the wait
    stays at most the wait it would be (BASE_WAIT after FREE_FAILURES, MAX_WAIT at most)."""
    _fail(db_url, "10.0.0.1", FREE_FAILURES, T0)
    assert _wait(db_url, "10.0.0.1", T0 - back) <= BASE_WAIT
    _fail(db_url, "10.0.0.1", 20, T0)
    assert _wait(db_url, "10.0.0.1", T0 - back) <= sessions.MAX_WAIT
    # the right clock: the full wait from the last failure (T0 + 19 s)
    assert _wait(db_url, "10.0.0.1", T0 + timedelta(seconds=30)) == \
        sessions.MAX_WAIT - timedelta(seconds=11)
