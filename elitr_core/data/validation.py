"""The one input-validation layer: every file the CLI reads passes through here first.

Each check raises :class:`DataFileError` (``FILE: what is wrong (and what to do)``), which the
CLI prints as one line with exit status 2 before anything is written. What is checked:

- the path: it exists, is a regular file (not a folder, not a dangling link) and is readable;
- the size: a file, or a ZIP member, larger than :data:`MAX_FILE_BYTES` is refused, a ZIP
  member against its declared size first and then against what it really expands to while it
  is streamed (never loaded whole), and an archive's members together against
  :data:`MAX_ARCHIVE_BYTES`;
- JSON: nesting deeper than :data:`MAX_JSON_DEPTH` is refused before the parser recurses, and
  the non-standard constants ``NaN`` and ``Infinity`` are refused;
- values: a score is a JSON number or a numeric string (never a boolean) in 1..10, an id is a
  whole number written in ASCII digits, a slug is a non-empty string, a sample is >= 0;
- duplicates: the same key twice in one file (or one JSON object, or one archive) is refused
  with both places named.

Field values (numbers, names, text) are checked by the typed gate, ``records``.
"""

from __future__ import annotations

import re
import stat
import zipfile
from pathlib import Path
from typing import Any

from elitr_core.data import strict
from elitr_core.data.strict import refuse_duplicates
from elitr_core.errors import DataFileError
from elitr_core.vocab import SCORE_MAX, SCORE_MIN

#: Largest file (or ZIP member, once expanded) read; the bundled files are under 1 MB.
MAX_FILE_BYTES = 64 * 1024 * 1024
#: Largest total expanded size of the members read from one archive.
MAX_ARCHIVE_BYTES = 256 * 1024 * 1024
#: Deepest JSON nesting accepted; ELITR-Bench files nest 5 levels.
MAX_JSON_DEPTH = 32
_CHUNK = 1024 * 1024
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def _mb(size: int) -> str:
    return f"{size / 1024 / 1024:,.0f} MB"


def readable_file(path: Path, *, max_bytes: int = MAX_FILE_BYTES) -> Path:
    """``path`` when it is a regular file of at most ``max_bytes``; else :class:`DataFileError`."""
    try:
        info = path.stat()
    except FileNotFoundError:
        problem = "dangling symbolic link (its target is missing)" if path.is_symlink() \
            else "no such file"
        raise DataFileError(path, f"{problem}: check the path") from None
    except OSError as exc:
        raise DataFileError(path, f"cannot be opened ({exc.strerror}): check the path") from None
    if stat.S_ISDIR(info.st_mode):
        raise DataFileError(path, "is a folder, not a file: pass the file itself")
    if not stat.S_ISREG(info.st_mode):
        raise DataFileError(path, "not a regular file: pass a file saved on disk")
    if info.st_size > max_bytes:
        raise DataFileError(
            path, f"is {_mb(info.st_size)}, more than the {_mb(max_bytes)} read at most: "
            "split it into smaller files"
        )
    return path


def read_bytes(path: Path, *, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a checked file (:func:`readable_file`), read at most ``max_bytes``."""
    readable_file(path, max_bytes=max_bytes)
    try:
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise DataFileError(
            path, f"cannot be read ({exc.strerror}): check the file's permissions"
        ) from None
    if len(data) > max_bytes:  # it grew since stat()
        raise DataFileError(path, f"more than the {_mb(max_bytes)} read at most")
    return data


def read_text(path: Path, *, max_bytes: int = MAX_FILE_BYTES) -> str:
    """UTF-8 text of a checked file; a byte-order mark at its start is dropped."""
    try:
        return read_bytes(path, max_bytes=max_bytes).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataFileError(path, f"not UTF-8 text ({exc}): save it as UTF-8") from None


#: compression methods Python's zipfile reads (stored, deflate, bzip2, lzma)
_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}
_WINZIP_AES = 99


def _check_method(info: zipfile.ZipInfo, where: object) -> None:
    """Refuse a member this program cannot read for what it is, before any password is tried
    (zipfile would fail on an AES member with "Bad password", which is not the cause)."""
    if info.compress_type == _WINZIP_AES or info.flag_bits & 0x40:  # 0x40: strong encryption
        raise DataFileError(where, f"{info.filename} is AES-encrypted, which this program "
                                   "cannot read: re-create the archive with standard ZIP "
                                   "encryption (zip -e) or none")
    if info.compress_type not in _METHODS:
        raise DataFileError(where, f"{info.filename} uses ZIP compression method "
                                   f"{info.compress_type}, which this program cannot read: "
                                   "re-create the archive with deflate (zip's default)")


def read_member(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, *, where: object, budget: list[int],
    password: bytes | None = None,
) -> bytes:
    """One ZIP member, streamed in chunks and refused as soon as it is too large.

    ``budget`` holds the bytes the archive may still expand to (shared by its members). The
    declared size is checked before anything is decompressed; the real size while streaming,
    so a member whose header lies is refused after at most ``MAX_FILE_BYTES`` too.
    """
    _check_method(info, where)
    limit = min(MAX_FILE_BYTES, budget[0])
    if info.file_size > limit:
        raise DataFileError(
            where, f"{info.filename} expands to {_mb(info.file_size)}, more than the "
            f"{_mb(limit)} read at most: not an ELITR-Bench archive?"
        )
    chunks, size = [], 0
    with archive.open(info, pwd=password) as handle:
        while chunk := handle.read(_CHUNK):
            size += len(chunk)
            if size > min(limit, info.file_size):
                raise DataFileError(
                    where, f"{info.filename} expands beyond its declared size "
                    f"({info.file_size:,} bytes): damaged or crafted archive"
                )
            chunks.append(chunk)
    budget[0] -= size
    return b"".join(chunks)


#: Every byte but ``[]{}``: deleted by ``bytes.translate``, leaving the brackets alone.
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
#: Below this size the regular expression is quickest; its memory grows with every escape in a
#: string (about 60 bytes each: 3.8 GB for 63 MB of ``\n``), so larger texts take the scan.
_SMALL_JSON = 64 * 1024
#: Bytes the streaming scan looks at a time (its arrays: about 10 bytes per byte of a chunk).
_SCAN_CHUNK = 1024 * 1024


def json_depth(data: bytes) -> int:
    """Deepest nesting of ``[`` and ``{`` in JSON text, strings ignored (no recursion)."""
    if len(data) > _SMALL_JSON:
        return _scan_depth(data)
    brackets = _JSON_STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    depth = deepest = 0
    for byte in brackets:
        depth += 1 if byte in _OPENING else -1
        deepest = max(deepest, depth)
    return deepest


def _scan_depth(data: bytes) -> int:
    """:func:`json_depth` of a large text, a chunk at a time, in memory bounded by the chunk:
    a quote opens or closes a string unless an odd run of backslashes precedes it, and only
    brackets outside strings count. (Outside a string a backslash is not JSON at all: the
    parser stops there, after the brackets counted so far.) numpy is imported here, not at
    the top: the generate command imports this module and starts faster without."""
    import numpy as np

    state = _ScanState()
    view = memoryview(data)
    for start in range(0, len(data), _SCAN_CHUNK):
        chunk = np.frombuffer(view[start:start + _SCAN_CHUNK], dtype=np.uint8)
        state.feed(np, chunk)
    return state.deepest


class _ScanState:
    """What one chunk of :func:`_scan_depth` leaves the next: inside a string or not, the
    backslashes it ended with, the depth reached and the deepest so far."""

    def __init__(self) -> None:
        self.in_string = 0
        self.backslashes = 0
        self.depth = 0
        self.deepest = 0

    def feed(self, np: Any, chunk: Any) -> None:
        size = len(chunk)
        index = np.arange(size, dtype=np.int32)
        slash = chunk == 92  # "\\"
        # the last byte at or before each position that is not a backslash (-1: none yet)
        last = np.maximum.accumulate(np.where(slash, np.int32(-1), index))
        before = np.empty(size, dtype=np.int32)  # the backslashes right before each byte
        before[0] = self.backslashes
        before[1:] = index[:-1] - last[:-1] + np.where(last[:-1] < 0, self.backslashes, 0)
        quotes = (chunk == 34) & (before % 2 == 0)
        inside = (np.cumsum(quotes, dtype=np.int32) + self.in_string) % 2 == 1
        steps = ((chunk == 91) | (chunk == 123)).astype(np.int32) - \
            ((chunk == 93) | (chunk == 125))
        steps[inside] = 0
        running = np.cumsum(steps, dtype=np.int64) + self.depth
        self.deepest = max(self.deepest, int(running.max(initial=0)))
        self.depth = int(running[-1])
        self.in_string = int(inside[-1])
        tail = size - 1 - int(last[-1])
        self.backslashes = tail + (self.backslashes if last[-1] < 0 else 0)


_OPENING = frozenset(b"[{")


def load_json(data: bytes, *, where: object) -> Any:
    """Parse JSON text after checking its nesting depth; a BOM is accepted, a key repeated
    within one object is refused (never last-wins)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataFileError(where, f"malformed JSON (not UTF-8: {exc})") from None
    depth = json_depth(data)
    if depth > MAX_JSON_DEPTH:
        raise DataFileError(
            where, f"JSON nested {depth} levels deep, more than the {MAX_JSON_DEPTH} accepted: "
            "not an ELITR-Bench file"
        )
    return strict.loads(text, where=where)


def parse_score(value: Any, *, where: str, path: object) -> float:
    """A score in 1..10: a JSON number or a numeric string such as ``"6.8"``, never a boolean."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise DataFileError(
            path, f"{where}: score {value!r} is not a number (write a number from "
            f"{SCORE_MIN:g} to {SCORE_MAX:g})"
        )
    score = strict.ascii_float(value) if isinstance(value, str) else float(value)
    if score is None:
        raise DataFileError(path, f"{where}: score {value!r} is not a number")
    if not SCORE_MIN <= score <= SCORE_MAX:
        raise DataFileError(
            path, f"{where}: score {value!r} is outside {SCORE_MIN:g}..{SCORE_MAX:g}"
        )
    return score


def parse_whole(value: Any, *, what: str, where: str, path: object, minimum: int | None = None
                ) -> int:
    """A whole number (JSON integer or ASCII digits, never a boolean), at least ``minimum``."""
    found = strict.ascii_int(value) if isinstance(value, str) else None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif found is not None:
        number = found
    else:
        raise DataFileError(path, f"{where}: {what} {value!r} is not a whole number")
    if minimum is not None and number < minimum:
        raise DataFileError(path, f"{where}: {what} {value!r} is below {minimum}")
    return number


def parse_slug(value: Any, *, what: str, where: str, path: object) -> str:
    """A non-empty name (model, evaluator, meeting id), surrounding spaces removed."""
    if not isinstance(value, str) or not value.strip():
        raise DataFileError(path, f"{where}: {what} {value!r} should be a non-empty text")
    return value.strip()


#: how a ZIP file starts: a member's local header, or the end record of an empty archive
_ZIP_STARTS = (b"PK\x03\x04", b"PK\x05\x06")


def open_archive(path: Path) -> zipfile.ZipFile:
    """A ZIP archive from a checked path (an archive may be larger than one JSON file).

    Python's zipfile finds an archive by its end record and reads past anything before it, so
    a JSON document with a ZIP appended would be imported as the ZIP: a file that does not
    start as a ZIP is refused, whatever its name.
    """
    readable_file(path, max_bytes=MAX_ARCHIVE_BYTES)
    try:
        with path.open("rb") as handle:
            start = handle.read(4)
        if not start.startswith(_ZIP_STARTS):
            raise DataFileError(path, "not a readable ZIP archive: it does not start as one "
                                      "(a renamed file, or another file with a ZIP appended?); "
                                      "pass the archive itself")
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise DataFileError(path, f"not a readable ZIP archive ({exc})") from None


__all__ = [
    "MAX_ARCHIVE_BYTES",
    "MAX_FILE_BYTES",
    "MAX_JSON_DEPTH",
    "json_depth",
    "load_json",
    "open_archive",
    "parse_score",
    "parse_slug",
    "parse_whole",
    "read_bytes",
    "read_member",
    "read_text",
    "readable_file",
    "refuse_duplicates",
]
