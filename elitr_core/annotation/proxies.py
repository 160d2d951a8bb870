"""Which client a request comes from, and the scheme and host it reached us by, behind a proxy.

``X-Forwarded-For``, ``X-Forwarded-Proto``, ``X-Forwarded-Host`` and ``Forwarded`` (RFC 7239)
are headers any client can write, and a proxy passes on what it does not set itself (nginx
forwards a client's ``Forwarded`` untouched): a client that could choose its own address would
get a fresh login allowance per guess, or lock someone else out. So:

- they are believed only when the connection comes from an address listed in
  ``ELITR_TRUSTED_PROXIES`` (comma-separated addresses or networks, e.g.
  ``127.0.0.1,10.0.0.0/8``; default none);
- only the one family the proxy is configured to set is read (``ELITR_PROXY_HEADER``:
  ``x-forwarded-for``, the default, reads ``X-Forwarded-For``/``-Proto``/``-Host``, which
  nginx's ``$proxy_add_x_forwarded_for`` recipe sets; ``forwarded`` reads ``Forwarded`` only);
- the client is the right-most hop that is not itself a trusted proxy (a client may prepend
  anything; only what our proxies appended counts), and it must parse as an IP address: a hop
  that does not (``unknown``, a 200 KB string) leaves the client at the proxy that wrote it;
- at most :data:`MAX_HOPS` hops are read, from the right, so a header of 10,000 entries costs
  no more than one of 32.

Pure functions of the peer address and the headers; ``elitr_core.annotation.web_gate`` applies
them to every HTTP and WebSocket request (so ``st.context.ip_address``, the cookie's ``Secure``
flag and the same-origin check follow).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

from elitr_core import settings
from elitr_core.errors import UserError

TRUSTED_PROXIES_ENV = settings.TRUSTED_PROXIES
PROXY_HEADER_ENV = settings.PROXY_HEADER
#: the header families a proxy may be configured to set (ELITR_PROXY_HEADER's values)
PROXY_HEADERS = ("x-forwarded-for", "forwarded")
#: hops read from the right of a forwarding chain (more proxies than this in a row is no setup)
MAX_HOPS = 32
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
# one forwarded-pair of RFC 7239 (token=token or token="quoted string")
_PAIR = re.compile(r'\s*([!#$%&\'*+.^_`|~0-9A-Za-z-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;,\s]*)\s*')


@dataclass(frozen=True)
class Origin:
    """Where a request comes from: the client's address, the scheme it used and, when a
    trusted proxy said so, the host (``host:port``) the browser asked for (else None: the
    request's own ``Host`` header is the host)."""

    client: str
    scheme: str
    host: str | None = None


@dataclass(frozen=True)
class ProxySetting:
    """Whom to believe (``networks``) and which header family they set (``header``)."""

    networks: tuple[Network, ...] = ()
    header: str = "x-forwarded-for"


def trusted_proxies(value: str | None = None) -> tuple[Network, ...]:
    """The networks of ``ELITR_TRUSTED_PROXIES`` (or ``value``); a malformed entry is refused
    with its text, so a typo never silently trusts nothing or everything."""
    text = settings.text(TRUSTED_PROXIES_ENV) if value is None else value
    networks = []
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise UserError(f"{TRUSTED_PROXIES_ENV}: {entry!r} is not an IP address or network "
                            "(write e.g. 127.0.0.1,10.0.0.0/8)") from None
    return tuple(networks)


def proxy_setting(networks: str | None = None, header: str | None = None) -> ProxySetting:
    """ELITR_TRUSTED_PROXIES and ELITR_PROXY_HEADER (or the given values), checked: a header
    family other than :data:`PROXY_HEADERS` is refused by name."""
    text = settings.text(PROXY_HEADER_ENV) if header is None else header
    family = text.strip().lower() or PROXY_HEADERS[0]
    if family not in PROXY_HEADERS:
        raise UserError(f"{PROXY_HEADER_ENV}: {text!r} is not one of "
                        f"{', '.join(PROXY_HEADERS)} (the header your proxy sets)")
    return ProxySetting(trusted_proxies(networks), family)


def _address(text: str) -> Address | None:
    """The IP address of a hop (``1.2.3.4``, ``1.2.3.4:80``, ``[v6]:80``, ``v6``), else None."""
    host = text.strip().strip('"')
    if len(host) > 64:  # longer than any address with a port: not worth parsing
        return None
    if host.startswith("["):  # [v6]:port
        host = host[1:host.find("]")] if "]" in host else host
    elif host.count(":") == 1:  # v4:port
        host = host.split(":")[0]
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _trusted(address: Address | None, networks: Iterable[Network]) -> bool:
    return address is not None and any(address in n for n in networks)


def _last_items(values: list[str], count: int) -> list[str]:
    """The last ``count`` comma-separated items of the header lines ``values`` (in order),
    without splitting more of a long header than that."""
    items: list[str] = []
    for value in reversed(values):
        need = count - len(items)
        items[:0] = [item.strip() for item in value.rsplit(",", need)[-need:]]
        if len(items) >= count:
            break
    return items


def _forwarded_pairs(element: str) -> dict[str, str]:
    """The pairs of one ``Forwarded`` element, keys lowercased, quotes removed."""
    pairs = {}
    for part in element.split(";"):
        match = _PAIR.fullmatch(part)
        if match:
            pairs[match[1].lower()] = match[2].strip('"')
    return pairs


def _header(headers: Iterable[tuple[str, str]], name: str) -> list[str]:
    return [value for key, value in headers if key.lower() == name]


def _client(peer: Address, chain: list[str], networks: tuple[Network, ...]) -> str:
    """The right-most hop of ``chain`` that is not a trusted proxy, when it is an address;
    else the nearest trusted hop (the proxy that wrote what follows it)."""
    client = peer
    for hop in reversed(chain):
        address = _address(hop)
        if address is None:
            break  # not an address: the proxy that wrote it is all we know
        client = address
        if not _trusted(address, networks):
            break
    return str(client)


def origin(peer: str, scheme: str, headers: Iterable[tuple[str, str]],
           setting: ProxySetting | tuple[Network, ...]) -> Origin:
    """The client, scheme and forwarded host of a request that arrived from ``peer`` over
    ``scheme`` (``http``/``https``/``ws``/``wss``); headers count only from a trusted peer,
    and only those of ``setting.header``'s family."""
    if not isinstance(setting, ProxySetting):
        setting = ProxySetting(setting)
    peer_address = _address(peer)
    if peer_address is None or not _trusted(peer_address, setting.networks):
        return Origin(peer, scheme)
    headers = list(headers)
    if setting.header == "forwarded":
        elements = [_forwarded_pairs(e)
                    for e in _last_items(_header(headers, "forwarded"), MAX_HOPS)]
        chain = [e.get("for", "") for e in elements]
        last = elements[-1] if elements else {}  # the nearest proxy's own element only
        proto, host = last.get("proto"), last.get("host")
    else:
        chain = _last_items(_header(headers, "x-forwarded-for"), MAX_HOPS)
        proto = "".join(_last_items(_header(headers, "x-forwarded-proto"), 1))
        host = "".join(_last_items(_header(headers, "x-forwarded-host"), 1))
    if proto and proto.lower() in {"http", "https"}:
        scheme = proto.lower() if scheme in {"http", "https"} else \
            proto.lower().replace("http", "ws")
    return Origin(_client(peer_address, chain, setting.networks), scheme, host or None)
