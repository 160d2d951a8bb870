"""The command line's one error boundary: every failure a user can cause is one line.

``python -m elitr_core`` prints ``error: what was wrong: what to do`` on one line and exits
with status 2 for a bad input or environment: a :class:`~elitr_core.errors.UserError`, a usage
error of argparse, a file that cannot be written (a folder, a missing folder, a full disk), text
that is not valid UTF-8, a database that refuses the command or goes away in the middle of it.
Nothing is written then: a command's writes are one transaction, rolled back on any error.
A failure no user can cause (a bug) is one line too, with exit status 1 and the hint to run
again with ``--debug`` (or ``ELITR_DEBUG=1``), which prints the traceback for a bug report.

Why one line: a 70-line traceback holding SQL tells a user nothing, and a message split over
two lines (a name holding a newline) can be misread as two messages; control and invisible
characters of a message are escaped (:func:`one_line`).
"""

from __future__ import annotations

import argparse
import sys
import traceback
import unicodedata
from typing import NoReturn

from elitr_core import settings
from elitr_core.errors import UserError, os_message

#: Exit status of a failure a user can cause (argparse's own usage errors use it too).
USER_ERROR = 2
#: Exit status of a bug (an exception no user input should cause).
INTERNAL_ERROR = 1
#: Set to 1 to print the traceback of every failure, as ``--debug`` does.
DEBUG_ENV = settings.DEBUG

_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: Unicode categories escaped in a message: controls, invisible format characters (zero-width
#: space, bidirectional overrides, BOM), line and paragraph separators, lone surrogates.
_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


class OutputError(UserError):
    """Standard output cannot be written (``> /dev/full``, a full disk)."""

    def __init__(self, exc: OSError) -> None:
        exc.filename = "the standard output"
        super().__init__(os_message(exc, "cannot write"))


def one_line(text: str) -> str:
    """``text`` with every control or invisible character escaped (``\\n``, ``\\u202e``)."""
    if text.isprintable():  # the usual case, at C speed
        return text
    return "".join(_escape(c) if unicodedata.category(c) in _HIDDEN else c for c in text)


def _escape(char: str) -> str:
    code = ord(char)
    return _ESCAPES.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def debug_requested(argv: list[str] | None = None) -> bool:
    """True when ``--debug`` is among the arguments or ``ELITR_DEBUG`` is on (``settings.flag``:
    ``off`` is off). A value it cannot take is reported, as one line, by
    :func:`require_valid_environment` inside the boundary."""
    if "--debug" in (sys.argv[1:] if argv is None else argv):
        return True
    try:
        return settings.debug()
    except settings.SettingError:
        return False


class Parser(argparse.ArgumentParser):
    """argparse with usage errors on one line plus where to read more (not 15 lines of usage)."""

    def error(self, message: str) -> NoReturn:
        """Print ``error: MESSAGE (see PROG --help)`` and exit with status 2."""
        self.exit(USER_ERROR, f"error: {one_line(message)} (see {self.prog} --help)\n")


def valid_text(what: str) -> type[str]:
    """An argparse ``type`` refusing an argument that is not valid UTF-8 text.

    Python keeps the undecodable bytes of an argument as lone surrogates; a database driver
    or a ZIP password would fail on them deep inside a command.
    """

    def check(value: str) -> str:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise argparse.ArgumentTypeError(
                f"{what} {value!r} is not valid UTF-8 text: write it in UTF-8"
            ) from None
        return value

    check.__name__ = what  # argparse names the type in its message
    return check  # type: ignore[return-value]


def require_valid_environment() -> None:
    """Refuse a ``DATABASE_URL`` that is not valid UTF-8, or an ``ELITR_DEBUG`` that is not a
    yes/no value, before any command uses them."""
    settings.debug()
    url = settings.database_url()
    if url is not None:
        try:
            url.encode("utf-8")
        except UnicodeEncodeError:
            raise UserError(
                f"DATABASE_URL {url!r} is not valid UTF-8 text: set it in UTF-8"
            ) from None


def report(exc: BaseException, *, debug: bool) -> int:
    """Print ``exc`` as one ``error:`` line (after its traceback with ``debug``); the status."""
    message = describe(exc)
    status = USER_ERROR
    if message is None:
        status = INTERNAL_ERROR
        message = (f"unexpected {type(exc).__name__}: {_first_line(str(exc))}. This is a "
                   f"bug: run again with --debug (or {DEBUG_ENV}=1) and report the traceback")
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    print(f"error: {one_line(message)}", file=sys.stderr)
    return status


def describe(exc: BaseException) -> str | None:
    """The message of a failure a user can cause; None for anything else (a bug)."""
    if isinstance(exc, UserError):
        return str(exc)
    missing = _missing_dependency(exc)
    if missing is not None:
        return missing
    database = _database_message(exc)
    if database is not None:
        return database
    if isinstance(exc, UnicodeError):
        return (f"text that is not valid UTF-8 ({_first_line(str(exc))}): check the arguments, "
                "DATABASE_URL and the names of the files given")
    if isinstance(exc, OSError):
        return os_message(exc)
    return None


#: the project's own top-level packages: one of them missing is a broken tree, not a missing
#: dependency
_OWN_PACKAGES = ("elitr_core", "db", "ui", "pages")


def _missing_dependency(exc: BaseException) -> str | None:
    """A runtime dependency that this Python cannot import: the command runs outside the
    project's environment (or one built before requirements.txt named it)."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    top = exc.name.split(".")[0]
    if top in _OWN_PACKAGES:
        return None
    return (f"the Python package {top!r} is not installed in {sys.prefix}: run it inside the "
            "project's environment (make setup, then .venv/bin/elitr, or source "
            ".venv/bin/activate), or install requirements.txt there")


def _database_message(exc: BaseException) -> str | None:
    """A database error as one line without its SQL (the driver's first line only)."""
    sa_exc = sys.modules.get("sqlalchemy.exc")  # loaded whenever a database was used
    if sa_exc is None:
        return None
    from db.faults import fault_kind, is_driver_error

    if is_driver_error(exc):  # a COPY's error comes from the driver itself, unwrapped
        reason = _first_line(str(exc))
    elif isinstance(exc, sa_exc.DBAPIError):
        reason = _first_line(str(exc.orig) if exc.orig is not None else type(exc).__name__)
    else:
        return None
    kind = fault_kind(exc)
    if kind == "read-only":
        return (f"the database is read-only ({reason}): give one you may write to (a SQLite "
                "file: URL without mode=ro, a PostgreSQL user allowed to write); reading "
                "commands such as export still work. Nothing was written")
    if kind == "locked":
        return (f"the database stayed locked by another program ({reason}): run again when it "
                "is done. Nothing was written")
    if kind == "full":
        return (f"the disk of the database is full ({reason}): free some disk space and run "
                f"the same command again. {_STORED}")
    if kind == "gone":
        return (f"the connection to the database was lost ({reason}): when the server is back, "
                f"run the same command again. {_STORED}")
    if isinstance(exc, sa_exc.IntegrityError | sa_exc.DataError):
        return f"the database refused a value ({reason}): fix the input. Nothing was written"
    return (f"the database failed in the middle of the command ({reason}): check that the "
            "server is running and the database exists, then run the same command again. "
            f"{_STORED}")


#: What a failed command kept: true of every command (one transaction each; generate and
#: judge commit each answer or judgment as it comes and resume where they stopped)
_STORED = ("What the interrupted transaction was writing was rolled back; what was stored "
           "before it is kept (generate and judge go on from there)")


def _first_line(text: str) -> str:
    """The first non-empty line of ``text`` (a driver's detail lines and SQL dropped)."""
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()[:500]
    return "no detail given"
