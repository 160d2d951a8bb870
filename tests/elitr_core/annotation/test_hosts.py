"""The Host allow-list and the no-login mode's loopback rule (elitr_core/annotation/hosts.py;
issue 41, item 2); served end to end in tests/test_server.py."""

from __future__ import annotations

import pytest

from elitr_core.annotation.hosts import HostPolicy, host_policy, link_address_warning
from elitr_core.errors import UserError

LOCAL = HostPolicy(local=True)
LISTED = HostPolicy(hosts=frozenset({"dash.example.org", ".lab.example", "192.0.2.7"}))


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST.", "app.localhost", "127.0.0.1",
                                  "127.0.0.9", "::1", "[::1]", "::ffff:127.0.0.1"])
def test_loopback_names_are_answered_in_every_mode(host: str) -> None:
    for policy in (LOCAL, LISTED, HostPolicy()):
        assert policy.host_allowed(host)


@pytest.mark.parametrize("host", ["evil.example", "localhost.evil.example", "192.168.1.5",
                                  "10.0.0.1", "dash.example.org", None])
def test_the_no_login_mode_refuses_any_other_name(host: str | None) -> None:
    """A DNS-rebinding page sends its own name (evil.example resolving to 127.0.0.1)."""
    assert not LOCAL.host_allowed(host)


def test_listed_names_and_sub_domains() -> None:
    for host in ("dash.example.org", "DASH.example.org.", "lab.example", "a.lab.example",
                 "192.0.2.7"):
        assert LISTED.host_allowed(host), host
    for host in ("example.org", "evil-dash.example.org", "xlab.example", "192.0.2.8", None):
        assert not LISTED.host_allowed(host), host
    # with a login and nothing listed, any name: the login keeps strangers out
    assert HostPolicy().host_allowed("anything.example") and HostPolicy().host_allowed(None)


def test_the_no_login_mode_answers_this_machine_s_clients_only() -> None:
    for client in ("127.0.0.1", "127.0.0.3", "::1", "::ffff:127.0.0.1"):
        assert LOCAL.client_allowed(client)
    for client in ("203.0.113.9", "10.0.0.2", "::ffff:203.0.113.9", "2001:db8::1", "unknown",
                   "localhost.evil"):
        assert not LOCAL.client_allowed(client)
        assert HostPolicy().client_allowed(client)  # with a login, anyone may try it


def test_the_setting_and_the_public_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ELITR_PUBLIC_URL", "https://Study.Example.org:8443/app")
    policy = host_policy(False, " dash.example.org , .lab.example,[2001:DB8::1] ,")
    assert policy.hosts == {"dash.example.org", ".lab.example", "2001:db8::1",
                            "study.example.org"}
    assert policy.host_allowed("2001:db8::1")


@pytest.mark.parametrize("bad", ["http://dash.example", "dash.example:8443", "dash example",
                                 "a..b", "*", ".", "dash.example/app"])
def test_a_malformed_entry_is_refused_by_name(bad: str) -> None:
    with pytest.raises(UserError, match=r"ELITR_ALLOWED_HOSTS: .* is not a host name"):
        host_policy(False, f"ok.example,{bad}")


@pytest.mark.parametrize("configured, used, expected", [
    ("https://elitr.example.org", "http://localhost:8501", ""),  # set: links use it
    ("", "http://localhost:8501", "participants cannot reach it"),
    ("", "http://127.0.0.1:8501", "participants cannot reach it"),
    ("", "http://[::1]:8501", "participants cannot reach it"),
    ("", "https://lab.example.org", "Check that participants can reach it"),
])
def test_a_link_address_without_a_public_url_is_warned_about(configured: str, used: str,
                                                             expected: str) -> None:
    said = link_address_warning(configured, used)
    assert (said == "") if not expected else (expected in said and used in said
                                              and "ELITR_PUBLIC_URL" in said)
