"""Forwarding headers are believed only from ELITR_TRUSTED_PROXIES (issue 19, item 6), only the
family ELITR_PROXY_HEADER names, and only a right-most hop that is an address (issue 27, item 5).
"""

from __future__ import annotations

import pytest

from elitr_core.annotation import proxies
from elitr_core.annotation.proxies import (
    Origin,
    ProxySetting,
    origin,
    proxy_setting,
    trusted_proxies,
)
from elitr_core.errors import UserError

LOCAL = trusted_proxies("127.0.0.1,10.0.0.0/8,::1")


@pytest.mark.parametrize("headers", [
    [("X-Forwarded-For", "203.0.113.9")],
    [("x-forwarded-for", "203.0.113.9"), ("X-Forwarded-Proto", "https")],
    [("Forwarded", "for=203.0.113.9;proto=https")],
])
def test_headers_from_an_untrusted_peer_change_nothing(headers: list[tuple[str, str]]) -> None:
    assert origin("198.51.100.4", "http", headers, LOCAL) == Origin("198.51.100.4", "http")
    # with no setting (the default) even a local peer is not a proxy
    assert origin("127.0.0.1", "http", headers, trusted_proxies("")) == \
        Origin("127.0.0.1", "http")


def test_the_default_trusts_nobody(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ELITR_TRUSTED_PROXIES", raising=False)
    assert trusted_proxies() == ()
    monkeypatch.setenv("ELITR_TRUSTED_PROXIES", "127.0.0.1, 10.0.0.0/8")
    assert [str(n) for n in trusted_proxies()] == ["127.0.0.1/32", "10.0.0.0/8"]


def test_a_trusted_proxy_names_the_client_and_the_scheme() -> None:
    found = origin("127.0.0.1", "http", [("X-Forwarded-For", "203.0.113.9"),
                                         ("X-Forwarded-Proto", "https")], LOCAL)
    assert found == Origin("203.0.113.9", "https")


def test_what_the_client_prepends_is_ignored() -> None:
    # the client wrote "1.2.3.4, 5.6.7.8"; our proxies appended the real address, then their own
    headers = [("X-Forwarded-For", "1.2.3.4, 5.6.7.8, 203.0.113.9, 10.1.2.3")]
    assert origin("127.0.0.1", "http", headers, LOCAL).client == "203.0.113.9"


def test_by_default_a_client_written_forwarded_is_ignored() -> None:
    """nginx passes a client's Forwarded through untouched and appends to X-Forwarded-For:
    with the default family only X-Forwarded-* is read, whatever Forwarded says."""
    headers = [("Forwarded", "for=6.6.6.6;proto=https;host=evil.example"),
               ("X-Forwarded-For", "203.0.113.9"), ("X-Forwarded-Proto", "http")]
    assert origin("127.0.0.1", "http", headers, LOCAL) == Origin("203.0.113.9", "http")
    # and without any X-Forwarded-For the proxy itself is the client, never the Forwarded one
    assert origin("127.0.0.1", "http", headers[:1], LOCAL) == Origin("127.0.0.1", "http")


def test_the_forwarded_family_reads_rfc_7239_and_ignores_x_forwarded() -> None:
    setting = ProxySetting(LOCAL, "forwarded")
    headers = [("X-Forwarded-For", "6.6.6.6"), ("X-Forwarded-Proto", "https"),
               ("Forwarded", 'for=1.2.3.4, for="[2001:db8::7]:4711";proto=https;by=10.0.0.1')]
    assert origin("10.0.0.2", "http", headers, setting) == Origin("2001:db8::7", "https")
    assert origin("::1", "ws", [("Forwarded", "for=192.0.2.60:8080;proto=https;host=a.b:8443")],
                  setting) == Origin("192.0.2.60", "wss", "a.b:8443")
    assert origin("::1", "http", headers[:2], setting) == Origin("::1", "http")


@pytest.mark.parametrize("hop", ["unknown", "_hidden", "x" * 200_000, "300.1.2.3", '"'])
@pytest.mark.parametrize("family", ["x-forwarded-for", "forwarded"])
def test_a_right_most_hop_that_is_not_an_address_is_not_the_client(hop: str,
                                                                   family: str) -> None:
    """The client wrote 1.2.3.4 and then a hop that is no address; the proxy that appended
    it is the nearest thing known, never the client's invention."""
    value = f"1.2.3.4, {hop}" if family == "x-forwarded-for" else f"for=1.2.3.4, for={hop}"
    header = "X-Forwarded-For" if family == "x-forwarded-for" else "Forwarded"
    setting = ProxySetting(LOCAL, family)
    assert origin("10.0.0.2", "http", [(header, value)], setting).client == "10.0.0.2"
    assert origin("10.0.0.2", "http", [(header, value + ", 10.0.0.9" if family ==
                                        "x-forwarded-for" else value + ", for=10.0.0.9")],
                  setting).client == "10.0.0.9"


def test_a_long_chain_is_read_from_the_right_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """10,000 entries: the answer is the right-most untrusted one, and no more than MAX_HOPS
    entries are parsed (the old code parsed all of them on the event loop)."""
    parsed: list[str] = []
    real = proxies._address

    def counting(text: str) -> object:
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(proxies, "_address", counting)
    chain = ", ".join(["198.51.100.7"] * 10_000 + ["203.0.113.9"] + ["10.0.0.3"] * 40)
    assert origin("127.0.0.1", "http", [("X-Forwarded-For", chain)], LOCAL).client == "10.0.0.3"
    assert len(parsed) <= proxies.MAX_HOPS + 1
    parsed.clear()
    chain = ", ".join(["198.51.100.7"] * 10_000 + ["203.0.113.9", "10.0.0.3"])
    assert origin("127.0.0.1", "http", [("X-Forwarded-For", chain)], LOCAL).client == \
        "203.0.113.9"
    assert len(parsed) <= proxies.MAX_HOPS + 1


def test_a_trusted_proxy_names_the_host() -> None:
    headers = [("X-Forwarded-For", "203.0.113.9"), ("X-Forwarded-Host", "dash.example:8443"),
               ("X-Forwarded-Proto", "https")]
    assert origin("127.0.0.1", "http", headers, LOCAL) == \
        Origin("203.0.113.9", "https", "dash.example:8443")
    assert origin("198.51.100.4", "http", headers, LOCAL).host is None


def test_the_header_family_is_checked_by_name() -> None:
    assert proxy_setting("127.0.0.1", "").header == "x-forwarded-for"
    assert proxy_setting("127.0.0.1", " Forwarded ").header == "forwarded"
    with pytest.raises(UserError, match="ELITR_PROXY_HEADER: 'x-real-ip' is not one of"):
        proxy_setting("127.0.0.1", "x-real-ip")


def test_a_chain_of_trusted_proxies_gives_its_first_address() -> None:
    headers = [("X-Forwarded-For", "10.0.0.5, 10.0.0.6")]
    assert origin("127.0.0.1", "http", headers, LOCAL).client == "10.0.0.5"


def test_an_unknown_protocol_keeps_the_connection_s() -> None:
    headers = [("X-Forwarded-Proto", "gopher")]
    assert origin("127.0.0.1", "http", headers, LOCAL).scheme == "http"


@pytest.mark.parametrize("value", ["localhost", "10.0.0.0/33", "127.0.0.1;10.0.0.1"])
def test_a_malformed_setting_is_refused_by_name(value: str) -> None:
    with pytest.raises(UserError, match="ELITR_TRUSTED_PROXIES"):
        trusted_proxies(value)
