"""Access: annotator tokens, the researcher password, Prolific parameters.

Tokens are 256-bit random strings from :mod:`secrets`; only their SHA-256 is stored (a token
carries so much entropy that a slow hash adds nothing, and a plain digest lets the database
find the annotator by an indexed, unique column). The researcher password comes from the
environment: ``ELITR_ADMIN_PASSWORD_HASH`` (``pbkdf2_sha256$ITERATIONS$SALT$HASH``, made by
``python -m elitr_core password-hash``) or ``ELITR_ADMIN_PASSWORD`` (hashed on first use; the
plain text is never stored). Comparisons use :func:`hmac.compare_digest` (constant time).
With neither variable set, no researcher login is configured: the app listens on localhost
and the local user is the researcher.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from functools import lru_cache

from elitr_core import settings
from elitr_core.errors import UserError

PASSWORD_HASH_ENV = settings.ADMIN_PASSWORD_HASH
PASSWORD_ENV = settings.ADMIN_PASSWORD
PBKDF2_ITERATIONS = 600_000
TOKEN_BYTES = 32
# Prolific ids are 24 lowercase hex characters; anything else was typed or tampered with.
_PROLIFIC_ID = re.compile(r"^[0-9a-f]{24}$")
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{20,100}$")


class AccessDenied(UserError):
    """A link, token or login that does not grant access; the message is shown as is."""


class StudyEnded(AccessDenied):
    """The participant's part is over (the study is closed or full, their task was excluded
    or lapsed, the study has collected what it needs): not a mistake of theirs, so pages show
    it as a neutral message, with the way back to Prolific for a Prolific participant.
    ``completion_code``: the study's Prolific code when this participant finished their task.
    """

    def __init__(self, message: str, *, completion_code: str | None = None) -> None:
        super().__init__(message)
        self.completion_code = completion_code


def new_token() -> tuple[str, str]:
    """A fresh annotator token and the hash to store: ``(token, token_hash)``."""
    token = secrets.token_urlsafe(TOKEN_BYTES)
    return token, hash_token(token)


def hash_token(token: str) -> str:
    """The stored form of a token (hex SHA-256)."""
    return hashlib.sha256(token.encode()).hexdigest()


def check_token_format(token: str) -> str:
    """Return the token, or refuse one that cannot be ours (too short, odd characters)."""
    if not _TOKEN.match(token or ""):
        raise AccessDenied("This link is not valid: check that you copied it completely, "
                           "or ask the researcher for a new one.")
    return token


def annotator_link(token: str, base_url: str = "", study: str | None = None) -> str:
    """The personal link of an annotator (``/?token=...`` relative to ``base_url``), opening
    ``study`` when given (else the annotator's study in progress, or one of their pool)."""
    from urllib.parse import quote

    link = f"{base_url.rstrip('/')}/?token={token}"
    return f"{link}&study={quote(study, safe='')}" if study else link


def hash_password(password: str, *, salt: bytes | None = None,
                  iterations: int = PBKDF2_ITERATIONS) -> str:
    """``pbkdf2_sha256$ITERATIONS$SALT$HASH`` of a password (for ``ELITR_ADMIN_PASSWORD_HASH``)."""
    if not password:
        raise UserError("the password is empty: choose a non-empty password")
    salt = salt or secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    return f"pbkdf2_sha256${iterations}${salt.hex()}${digest.hex()}"


def verify_password(password: str, stored: str) -> bool:
    """True when ``password`` matches a :func:`hash_password` string (constant-time compare)."""
    try:
        scheme, iterations, salt_hex, digest_hex = stored.split("$")
        if scheme != "pbkdf2_sha256":
            raise ValueError(scheme)
        salt, expected = bytes.fromhex(salt_hex), bytes.fromhex(digest_hex)
        rounds = int(iterations)
    except ValueError:
        raise UserError(f"{PASSWORD_HASH_ENV} is malformed: generate it with "
                        "`python -m elitr_core password-hash`") from None
    actual = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, rounds)
    return hmac.compare_digest(actual, expected)


@lru_cache(maxsize=4)
def _hash_of_plain(plain: str) -> str:
    # hashed once per process so the comparison is against a hash, like the _HASH variable
    return hash_password(plain)


def researcher_password_hash() -> str | None:
    """The configured researcher password hash, or None when no password is configured."""
    stored = settings.value(PASSWORD_HASH_ENV)
    if stored:
        return stored
    plain = settings.value(PASSWORD_ENV)
    return _hash_of_plain(plain) if plain else None


def password_configured() -> bool:
    """Whether a researcher password is configured in the environment."""
    return bool(settings.value(PASSWORD_HASH_ENV) or settings.value(PASSWORD_ENV))


#: the most PBKDF2 iterations a stored hash may ask for (a login costs about 1 s at 10^6)
MAX_ITERATIONS = 10_000_000
_HASH_PARTS = re.compile(r"pbkdf2_sha256\$([0-9]{1,9})\$([0-9a-f]{2,128})\$([0-9a-f]{64})")


def check_password_setting() -> None:
    """The start-up check of the researcher password's variables: one set but empty (or
    blank), or a hash that :func:`hash_password` cannot have made, is a :class:`UserError`
    naming the variable. An empty password must not pass for "no login" (the local mode,
    which opens every page) on a server someone meant to protect."""
    for name in (PASSWORD_HASH_ENV, PASSWORD_ENV):
        raw = settings.value(name)
        if raw is not None and not raw.strip():
            raise UserError(f"{name} is set but empty: set the researcher password (or its hash "
                            "from `python -m elitr_core password-hash`), or unset it for the "
                            "no-login mode on this machine only")
    stored = settings.value(PASSWORD_HASH_ENV)
    found = _HASH_PARTS.fullmatch(stored.strip()) if stored else None
    if stored and (found is None or not 1 <= int(found.group(1)) <= MAX_ITERATIONS):
        raise UserError(f"{PASSWORD_HASH_ENV} is not a password hash (pbkdf2_sha256$ITERATIONS"
                        f"$SALT$HASH, 1 to {MAX_ITERATIONS:,} iterations): generate it with "
                        "`python -m elitr_core password-hash`")


def check_researcher_password(password: str) -> bool:
    """True when ``password`` is the researcher's; False when wrong or none configured."""
    stored = researcher_password_hash()
    if stored is None:
        return False
    return verify_password(password, stored)


def check_prolific_params(pid: str, study_id: str, session_id: str) -> tuple[str, str, str]:
    """Validate Prolific's three URL parameters; refuse anything that is not a Prolific id."""
    for label, value in (("PROLIFIC_PID", pid), ("STUDY_ID", study_id),
                         ("SESSION_ID", session_id)):
        if not _PROLIFIC_ID.match(value or ""):
            raise AccessDenied(
                f"This Prolific link is not valid ({label} is missing or malformed): "
                "please open the study again from Prolific.")
    return pid, study_id, session_id
