"""Every environment variable the project reads, in one place (docs/deployment.md, Settings).

Nothing else reads ``os.environ`` (``tests/test_architecture.py``). Each setting is read when
asked, not when this module is imported: the CLI, the server and the tests change the
environment after start-up (a test's ``monkeypatch.setenv``, ``server.py`` announcing its
routes). The values are returned as written; what they mean (a number, a list of networks)
and the message for a bad one stay with the module that uses them.

A leaf like :mod:`elitr_core.errors`: it imports nothing of the project, so ``db`` (the bottom
layer) reads ``DATABASE_URL`` here too.
"""

from __future__ import annotations

import os

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
    REPLICAS: "how many server replicas share a PostgreSQL database (default 1)",
    OPENAI_BASE_URL: "the OpenAI-compatible server when --base-url is not given",
    OPENAI_API_KEY: "the OpenAI-compatible server's key when --api-key-env names no other "
                    "variable",
    ADMIN_PASSWORD_HASH: "the researcher password's PBKDF2 hash (python -m elitr_core "
                         "password-hash)",
    ADMIN_PASSWORD: "the researcher password in clear (hashed at start), if no hash is set",
    ADMIN_EMAILS: "with OIDC login: the e-mail addresses that are researchers",
    SESSION_SECRET: "the session cookie's signing key (default: one kept in the database)",
    SESSION_HOURS: "how long a researcher login lasts (default 12)",
    SESSION_ROUTES: "set to 1 by server.py: the cookie routes exist (never set it by hand)",
    TRUSTED_PROXIES: "proxies whose forwarding headers are believed (addresses, networks)",
    PROXY_HEADER: "which forwarding header they set: x-forwarded-for (default) or forwarded",
    PUBLIC_URL: "the address annotators' links start with",
    ALLOWED_HOSTS: "host names the server answers to besides localhost and ELITR_PUBLIC_URL's "
                   "(comma-separated; .a.org for sub-domains; default with a login: any)",
    MIN_SCORES: "the fewest scores an evaluator needs to enter the analyses (default 30)",
    WARM: "0 turns off the caches' warm-up at server start",
    LOG_DIR: "where background jobs write their logs (default var/logs)",
    DEBUG: "the CLI prints a bug's traceback (as --debug), unless 0, false or no",
    BROWSER_PATH: "the Chromium that renders figures to PNG/PDF (default: found on PATH)",
}


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
