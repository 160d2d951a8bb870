"""The one bounded reader: how every file and request body the project reads is opened.

A file is opened once, without following it into a device or a pipe, and checked on what was
opened (not on a name that may change between a check and the read):

- regular files only: the open itself never blocks (``O_NONBLOCK``: a FIFO with no writer
  opens at once), and what was opened must be a regular file (``fstat``), so a FIFO, a
  socket, ``/dev/zero`` or another device is refused with one line, never read for ever;
- the size: checked before reading (``fstat``) and again while reading, so a file that grows
  after the check (or a file system that reports no size) stops at the limit;
- no links out: with ``within``, a path whose real location (every symbolic link on the way
  resolved) is outside that folder is refused (a ``results_*.json`` beside lm_eval samples
  that links to ``/etc/passwd``).

Request bodies (:func:`read_body`) get the same treatment: the declared ``Content-Length``
first, then the bytes as they arrive. What the bytes hold is bounded by the layer that parses
them (``validation.load_json``: nesting depth and element count).
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import AsyncIterable
from pathlib import Path
from typing import BinaryIO

from elitr_core.data.strict import ascii_int
from elitr_core.errors import DataFileError

#: Largest file (or ZIP member, once expanded) read; the bundled files are under 1 MB.
MAX_FILE_BYTES = 64 * 1024 * 1024
_CHUNK = 1024 * 1024


def mb(size: int) -> str:
    """A byte count in whole megabytes, rounded up (so a size just past a limit never reads
    as the limit itself), as messages write it."""
    return f"{-(-size // 2**20):,} MB"


def refuse_link_out(path: Path, within: Path) -> None:
    """Refuse ``path`` when its real location is outside the folder ``within``.

    A missing or dangling path is let through: opening it says which, in its own words.
    """
    try:
        target = path.resolve(strict=True)
        inside = target.is_relative_to(within.resolve(strict=True))
    except (OSError, RuntimeError):  # missing, dangling, a link loop
        return
    if not inside:
        raise DataFileError(path, f"links to {target}, outside the folder {within}: copy "
                                  "the file into that folder instead")


class _Limited(io.RawIOBase):
    """A file descriptor read up to byte ``limit``; a byte past it is a :class:`DataFileError`
    (by position, so a reader that seeks back, as zipfile does, is not counted twice)."""

    def __init__(self, fd: int, path: Path, limit: int) -> None:
        self._file = os.fdopen(fd, "rb", buffering=0)
        self._path, self._limit = path, limit

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return self._file.seek(offset, whence)

    def tell(self) -> int:
        return self._file.tell()

    def fileno(self) -> int:
        return self._file.fileno()

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        read = self._file.readinto(buffer) or 0
        if read and self._file.tell() > self._limit:  # it grew since it was opened
            raise DataFileError(self._path, f"grew past the {mb(self._limit)} read at most "
                                            "while it was read: pass a finished file")
        return read

    def close(self) -> None:
        self._file.close()
        super().close()


def open_regular(path: Path, *, max_bytes: int = MAX_FILE_BYTES,
                 within: Path | None = None) -> BinaryIO:
    """``path`` opened for reading, when it is a regular file of at most ``max_bytes`` (and,
    given ``within``, inside that folder); its reads stop at ``max_bytes``. Else
    :class:`DataFileError`, one line saying what it is and what to do."""
    if within is not None:
        refuse_link_out(path, within)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        problem = "dangling symbolic link (its target is missing)" if path.is_symlink() \
            else "no such file"
        raise DataFileError(path, f"{problem}: check the path") from None
    except IsADirectoryError:
        raise DataFileError(path, "is a folder, not a file: pass the file itself") from None
    except PermissionError as exc:
        raise DataFileError(path, f"cannot be read ({exc.strerror}): check the file's "
                                  "permissions") from None
    except OSError as exc:
        raise DataFileError(path, f"cannot be opened ({exc.strerror}): check the path and "
                                  "the file's permissions") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise DataFileError(path, "is a folder, not a file: pass the file itself")
        if not stat.S_ISREG(info.st_mode):
            raise DataFileError(path, f"is {_kind(info.st_mode)}, not a regular file: pass "
                                      "a file saved on disk")
        if info.st_size > max_bytes:
            raise DataFileError(path, f"is {mb(info.st_size)}, more than the {mb(max_bytes)} "
                                      "read at most: split it into smaller files")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return io.BufferedReader(_Limited(fd, path, max_bytes), _CHUNK)  # type: ignore[return-value]


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def read_bytes(path: Path, *, max_bytes: int = MAX_FILE_BYTES,
               within: Path | None = None) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (:func:`open_regular`)."""
    with open_regular(path, max_bytes=max_bytes, within=within) as handle:
        try:
            return handle.read()
        except OSError as exc:
            raise DataFileError(path, f"cannot be read ({exc.strerror}): check the file's "
                                      "permissions") from None


def read_text(path: Path, *, max_bytes: int = MAX_FILE_BYTES,
              within: Path | None = None) -> str:
    """UTF-8 text of a checked file; a byte-order mark at its start is dropped."""
    try:
        return read_bytes(path, max_bytes=max_bytes, within=within).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataFileError(path, f"not UTF-8 text ({exc}): save it as UTF-8") from None


def read_tail(path: Path, max_bytes: int) -> bytes:
    """At most the last ``max_bytes`` of a regular file (a log shown while it grows); b""
    when it cannot be read."""
    try:
        with open_regular(path, max_bytes=2**62) as handle:
            size = os.fstat(handle.fileno()).st_size
            handle.seek(max(size - max_bytes, 0))
            return handle.read(max_bytes)
    except (DataFileError, OSError):
        return b""


class BodyTooLarge(Exception):
    """A request body longer than the route reads."""


async def read_body(chunks: AsyncIterable[bytes], *, declared: str | None,
                    max_bytes: int) -> bytes:
    """A request body of at most ``max_bytes``: its ``Content-Length`` checked before
    anything is read, then the bytes as they arrive (a chunked body declares none), so a
    long body is refused after ``max_bytes``, never held whole. :class:`BodyTooLarge` else."""
    length = ascii_int(declared) if declared is not None else 0  # (never "١٢": 12)
    if length is None or not 0 <= length <= max_bytes:
        raise BodyTooLarge
    body = bytearray()
    async for chunk in chunks:
        body += chunk
        if len(body) > max_bytes:
            raise BodyTooLarge
    return bytes(body)


__all__ = ["MAX_FILE_BYTES", "BodyTooLarge", "mb", "open_regular", "read_body", "read_bytes",
           "read_tail", "read_text", "refuse_link_out"]
