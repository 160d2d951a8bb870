"""Every environment variable the project reads, in one place (docs/deployment.md, Settings).

Nothing else reads ``os.environ`` (``tests/test_architecture.py``). Each setting is read when
asked, not when this module is imported: the CLI, the server and the tests change the
environment after start-up (a test's ``monkeypatch.setenv``, ``server.py`` announcing its
routes). A boolean or a number is parsed here (:func:`flag`, :func:`number`, and one
function per such setting): a value it cannot take is a :class:`SettingError`, one line naming
the variable, what was written and the values accepted, never a silent default (``abc`` read
as 12 hours), a crash at each login (``nan``) or the opposite meaning (``ELITR_DEBUG=off``
turning debug on). :func:`check` parses them all, for the server's start. Texts and lists (a
URL, networks, host names, a password hash) are returned as written and parsed, with their
own one-line message, by the module that uses them.

Nearly a leaf: it imports only :mod:`elitr_core.errors` (itself a leaf), so ``db`` (the bottom
layer) reads ``DATABASE_URL`` here too.
"""

from __future__ import annotations

import math
import os

from elitr_core.errors import UserError

DATABASE_URL = "DATABASE_URL"
REPLICAS = "ELITR_REPLICAS"
OPENAI_BASE_URL = "OPENAI_BASE_URL"
OPENAI_API_KEY = "OPENAI_API_KEY"
ADMIN_PASSWORD_HASH = "ELITR_ADMIN_PASSWORD_HASH"
ADMIN_PASSWORD = "ELITR_ADMIN_PASSWORD"
ADMIN_EMAILS = "ELITR_ADMIN_EMAILS"
SESSION_SECRET = "ELITR_SESSION_SECRET"
SESSION_HOURS = "ELITR_SESSION_HOURS"
SESSION_ROUTES = "ELITR_SESSION_ROUTES"
TRUSTED_PROXIES = "ELITR_TRUSTED_PROXIES"
PROXY_HEADER = "ELITR_PROXY_HEADER"
PUBLIC_URL = "ELITR_PUBLIC_URL"
ALLOWED_HOSTS = "ELITR_ALLOWED_HOSTS"
MIN_SCORES = "ELITR_MIN_SCORES"
WARM = "ELITR_WARM"
LOG_DIR = "ELITR_LOG_DIR"
DEBUG = "ELITR_DEBUG"
BROWSER_PATH = "BROWSER_PATH"

#: Every variable, with what it sets (the table of docs/deployment.md lists exactly these).
VARIABLES: dict[str, str] = {
    DATABASE_URL: "the database (SQLite file or PostgreSQL); default var/elitr.db",
    REPLICAS: "how many server replicas share a PostgreSQL database, 1 to 1000 (default 1)",
    OPENAI_BASE_URL: "the OpenAI-compatible server when --base-url is not given",
    OPENAI_API_KEY: "the OpenAI-compatible server's key when --api-key-env names no other "
                    "variable",
    ADMIN_PASSWORD_HASH: "the researcher password's PBKDF2 hash (python -m elitr_core "
                         "password-hash)",
    ADMIN_PASSWORD: "the researcher password in clear (hashed at start), if no hash is set",
    ADMIN_EMAILS: "with OIDC login: the e-mail addresses that are researchers",
    SESSION_SECRET: "the session cookie's signing key (default: one kept in the database)",
    SESSION_HOURS: "how long a researcher login lasts, in hours from 1/60 to 720 (default 12)",
    SESSION_ROUTES: "set to 1 by server.py: the cookie routes exist (never set it by hand)",
    TRUSTED_PROXIES: "proxies whose forwarding headers are believed (addresses, networks)",
    PROXY_HEADER: "which forwarding header they set: x-forwarded-for (default) or forwarded",
    PUBLIC_URL: "the address annotators' links start with",
    ALLOWED_HOSTS: "host names the server answers to besides localhost and ELITR_PUBLIC_URL's "
                   "(comma-separated; .a.org for sub-domains; default with a login: any)",
    MIN_SCORES: "the fewest scores an evaluator needs to enter the analyses, a whole number "
                "0 or more (default 30)",
    WARM: "off (0, false, no) turns off the caches' warm-up at server start (default on)",
    LOG_DIR: "where background jobs write their logs (default var/logs)",
    DEBUG: "on (1, true, yes) makes the CLI print a bug's traceback, as --debug (default off)",
    BROWSER_PATH: "the Chromium that renders figures to PNG/PDF (default: found on PATH)",
}


class SettingError(UserError):
    """An environment variable holding a value its setting cannot take."""


#: What a boolean setting accepts (any case, surrounding spaces ignored).
TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")
#: How long a researcher login may last, in hours (a minute to 30 days).
SESSION_HOURS_RANGE = (1 / 60, 720.0)
DEFAULT_SESSION_HOURS = 12.0
DEFAULT_MIN_SCORES = 30


def flag(name: str, default: bool) -> bool:
    """A boolean variable: one of :data:`TRUE` or :data:`FALSE`, ``default`` when unset or
    empty; anything else is a :class:`SettingError`."""
    written = text(name).strip().lower()
    if not written:
        return default
    if written in TRUE or written in FALSE:
        return written in TRUE
    raise SettingError(f"{name}={text(name)!r} is not a yes/no setting: write one of "
                       f"{', '.join(TRUE)} (on) or {', '.join(FALSE)} (off)")


def number(name: str, default: float, *, low: float, high: float, unit: str,
           whole: bool = False) -> float:
    """A number variable from ``low`` to ``high`` (a whole number when ``whole``), ``default``
    when unset or empty; not a finite number in range (``nan``, ``abc``, ``-5``) is a
    :class:`SettingError` naming the range."""
    written = text(name).strip()
    if not written:
        return default
    kind = "a whole number" if whole else "a number"
    try:
        found = int(written) if whole else float(written)
    except ValueError:
        found = math.nan
    if not (math.isfinite(found) and low <= found <= high):
        raise SettingError(f"{name}={text(name)!r} is not {kind} of {unit} from {low:g} to "
                           f"{high:g}: write one (or unset it for the default, {default:g})")
    return found


def session_hours() -> float:
    """``ELITR_SESSION_HOURS``: how long a researcher login lasts (default 12)."""
    low, high = SESSION_HOURS_RANGE
    return number(SESSION_HOURS, DEFAULT_SESSION_HOURS, low=low, high=high, unit="hours")


def min_scores() -> int:
    """``ELITR_MIN_SCORES``: the fewest scores an evaluator needs to enter the analyses."""
    return int(number(MIN_SCORES, DEFAULT_MIN_SCORES, low=0, high=10**9, unit="scores",
                      whole=True))


def replicas() -> int:
    """``ELITR_REPLICAS``: how many server replicas share a PostgreSQL database (default 1)."""
    return int(number(REPLICAS, 1, low=1, high=1000, unit="server replicas", whole=True))


def warm() -> bool:
    """``ELITR_WARM``: whether the server warms the analysis caches at start (default on)."""
    return flag(WARM, True)


def debug() -> bool:
    """``ELITR_DEBUG``: whether the CLI prints a bug's traceback (default off)."""
    return flag(DEBUG, False)


def check() -> None:
    """Parse every boolean and number setting (the server's start: a bad one stops it with
    its one line, before any page or login reads it)."""
    session_hours()
    min_scores()
    replicas()
    warm()
    debug()


def value(name: str, default: str | None = None) -> str | None:
    """The variable ``name`` as written, or ``default`` when unset.

    Also for a variable whose name the user chooses (``generate --api-key-env NAME``).
    """
    return os.environ.get(name, default)


def text(name: str) -> str:
    """The variable ``name``, ``""`` when unset."""
    return os.environ.get(name, "")


def database_url() -> str | None:
    """``DATABASE_URL``, or None (the default SQLite file)."""
    return value(DATABASE_URL)


def session_routes() -> bool:
    """Whether this process serves the cookie routes (``server.py`` announced them)."""
    return value(SESSION_ROUTES) == "1"


def announce_session_routes() -> None:
    """Say, for this process's pages, that ``server.py`` serves the cookie routes."""
    os.environ[SESSION_ROUTES] = "1"
