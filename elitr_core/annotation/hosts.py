"""Which ``Host`` names and which clients the server answers, by login mode.

A browser sends the name it resolved in ``Host``: a DNS-rebinding page (``evil.example``
re-resolved to 127.0.0.1) reaches a local server with its own name there, and with its own
origin too, so the same-origin check of :mod:`elitr_core.annotation.web_gate` passes it.
Hence an allow-list of names (Django's ``ALLOWED_HOSTS``):

- ``ELITR_ALLOWED_HOSTS``: comma-separated host names or IP addresses, no port (``a.org``;
  ``.a.org`` also takes every sub-domain); the host of ``ELITR_PUBLIC_URL`` is added to it;
  loopback names (``localhost``, ``*.localhost``, loopback addresses) are always answered
  (a rebinding page sends its own name, never one of these);
- with no researcher login (the local mode, where whoever connects is the researcher) only
  those names are answered, and only clients on this machine (a loopback address; behind a
  trusted proxy, the client it reports): that mode is safe on loopback only;
- with a login, the listed names when any are listed, else every name: the login, not the
  name, keeps strangers out (a rebinding page never carries the dashboard's cookie, whose
  domain is the real name).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from elitr_core import settings
from elitr_core.errors import UserError

ALLOWED_HOSTS_ENV = settings.ALLOWED_HOSTS
LOOPBACK_NAMES = frozenset({"localhost"})
WRONG_HOST = ("This dashboard does not answer to that address: open it by its own address "
              "(the server's ELITR_ALLOWED_HOSTS lists them).")
NOT_LOCAL = ("This dashboard has no researcher login, so it answers only its own machine: "
             "set ELITR_ADMIN_PASSWORD_HASH (or OIDC) to open it to other computers.")


def _loopback_address(text: str) -> bool:
    try:
        address = ipaddress.ip_address(text.strip("[]").split("%")[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def loopback_name(host: str) -> bool:
    """Whether ``host`` (a name without port) names this machine only."""
    name = host.lower().rstrip(".")
    return name in LOOPBACK_NAMES or name.endswith(".localhost") or _loopback_address(name)


@dataclass(frozen=True)
class HostPolicy:
    """``local``: no researcher login (loopback clients and names only); ``hosts``: the listed
    names (lower case, ``.a.org`` for sub-domains too); with a login and none listed, any."""

    local: bool = False
    hosts: frozenset[str] = frozenset()

    def host_allowed(self, host: str | None) -> bool:
        """Whether a request for ``host`` (the name, no port; None: no Host at all) is
        answered. A loopback name always is (a health check, ``make run``'s address): a
        rebinding page cannot send one, it sends its own."""
        if host is None:
            return not self.local and not self.hosts
        name = _normal(host)
        if loopback_name(name) or any(
                name == h or (h.startswith(".") and (name.endswith(h) or name == h[1:]))
                for h in self.hosts):
            return True
        return not self.local and not self.hosts

    def client_allowed(self, client: str) -> bool:
        """Whether ``client`` (the address the gate settled on) may use the app."""
        return not self.local or _loopback_address(client)


def _normal(host: str) -> str:
    """A host name lower case without trailing dot; an IP address in its canonical form."""
    name = host.strip().lower().rstrip(".")
    try:
        return str(ipaddress.ip_address(name.strip("[]")))
    except ValueError:
        return name


def _entry(raw: str) -> str:
    """One allowed host as stored, or a UserError naming it."""
    name = _normal(raw)
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        pass
    label = name[1:] if name.startswith(".") else name
    if not label or any(not part or not all(c.isalnum() or c == "-" for c in part)
                        for part in label.split(".")):
        raise UserError(f"{ALLOWED_HOSTS_ENV}: {raw.strip()!r} is not a host name or IP "
                        "address (list names without scheme or port, separated by commas: "
                        "dashboard.example.org,.lab.example.org)")
    return name


def host_policy(local: bool, hosts: str | None = None) -> HostPolicy:
    """The policy of a server with (``local=False``) or without a researcher login, from
    ``ELITR_ALLOWED_HOSTS`` (or ``hosts``) and the host of ``ELITR_PUBLIC_URL``."""
    text = settings.text(ALLOWED_HOSTS_ENV) if hosts is None else hosts
    names = {_entry(raw) for raw in text.split(",") if raw.strip()}
    public = urlsplit(settings.text(settings.PUBLIC_URL).strip()).hostname
    if public:
        names.add(_normal(public))
    return HostPolicy(local=local, hosts=frozenset(names))


def link_address_warning(configured: str, used: str) -> str:
    """What is wrong with the address participants' links start with, ``""`` when nothing.

    ``configured``: ``ELITR_PUBLIC_URL`` (empty when not set); ``used``: the address the links
    fall back to (the researcher's browser's, else this server on localhost). A link on a
    loopback name reaches only this computer, so pasted into Prolific it fails for everyone.
    """
    if configured.strip():
        return ""
    host = urlsplit(used).hostname or ""
    if loopback_name(host):
        return (f"{settings.PUBLIC_URL} is not set, so this link starts with {used}, which "
                "only this computer can open: participants cannot reach it. Set "
                f"{settings.PUBLIC_URL} to the address participants reach "
                "(docs/deployment.md) and restart before you share a link.")
    return (f"{settings.PUBLIC_URL} is not set: this link starts with the address your "
            f"browser used ({used}). Check that participants can reach it, or set "
            f"{settings.PUBLIC_URL} (docs/deployment.md).")
