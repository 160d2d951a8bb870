"""The gate's same-origin check (issue 27, item 1): a browser request is the app's own only
when its Origin is the app's scheme, host and port (the forwarded ones behind a trusted
proxy) and its Sec-Fetch-Site says same-origin (or none: the address bar)."""

from __future__ import annotations

import pytest

from elitr_core.annotation.proxies import Origin, ProxySetting, origin, trusted_proxies
from elitr_core.annotation.web_gate import from_own_page

DIRECT = Origin("127.0.0.1", "ws")
HOST = {"host": "127.0.0.1:8501"}


@pytest.mark.parametrize("sent", [
    "http://127.0.0.1:8501", "HTTP://127.0.0.1:8501", "http://127.0.0.1:8501/",
])
def test_the_app_s_own_origin_passes(sent: str) -> None:
    assert from_own_page(DIRECT, {**HOST, "origin": sent.rstrip("/")})
    assert from_own_page(DIRECT, {**HOST, "origin": sent.rstrip("/"),
                                  "sec-fetch-site": "same-origin"})


@pytest.mark.parametrize("sent", [
    "http://127.0.0.1:8600",  # another port of the same host
    "https://127.0.0.1:8501",  # another scheme
    "http://localhost:8501",  # another host name for the same address
    "http://127.0.0.1",  # port 80
    "null",  # an opaque origin (a sandboxed frame, a file)
    "http://127.0.0.1:8501@evil.example", "http://127.0.0.1:99999", "", "gopher://x",
])
def test_any_other_origin_is_refused(sent: str) -> None:
    assert not from_own_page(DIRECT, {**HOST, "origin": sent})


@pytest.mark.parametrize("site", ["same-site", "cross-site", "bogus"])
def test_a_navigation_from_another_site_is_refused(site: str) -> None:
    """A GET navigation carries no Origin; Sec-Fetch-Site tells where it came from."""
    assert not from_own_page(DIRECT, {**HOST, "sec-fetch-site": site})
    assert from_own_page(DIRECT, {**HOST, "sec-fetch-site": "none"})


def test_a_request_from_no_web_page_passes() -> None:
    assert from_own_page(DIRECT, HOST)


def test_behind_a_trusted_proxy_the_forwarded_scheme_and_host_count() -> None:
    setting = ProxySetting(trusted_proxies("127.0.0.1"))
    headers = [("host", "127.0.0.1:8501"), ("x-forwarded-for", "203.0.113.9"),
               ("x-forwarded-proto", "https"), ("x-forwarded-host", "dash.example")]
    found = origin("127.0.0.1", "ws", headers, setting)
    lower = dict(headers)
    assert from_own_page(found, {**lower, "origin": "https://dash.example"})
    assert from_own_page(found, {**lower, "origin": "https://dash.example:443"})
    assert not from_own_page(found, {**lower, "origin": "http://127.0.0.1:8501"})
    assert not from_own_page(found, {**lower, "origin": "https://dash.example:8443"})
    # from an untrusted peer the same headers are the client's word: Host decides
    found = origin("198.51.100.4", "ws", headers, setting)
    assert not from_own_page(found, {**lower, "origin": "https://dash.example"})
    assert from_own_page(found, {**lower, "origin": "http://127.0.0.1:8501"})
