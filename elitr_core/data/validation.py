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
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from elitr_core.data import strict
from elitr_core.data.bounded import MAX_FILE_BYTES, open_regular, read_bytes, read_text
from elitr_core.data.bounded import mb as _mb
from elitr_core.data.strict import refuse_duplicates
from elitr_core.errors import DataFileError
from elitr_core.vocab import SCORE_MAX, SCORE_MIN

#: Largest total expanded size of the members read from one archive.
MAX_ARCHIVE_BYTES = 256 * 1024 * 1024
#: Deepest JSON nesting accepted; ELITR-Bench files nest 5 levels.
MAX_JSON_DEPTH = 32
#: Most values (array items and object members, an empty array or object counting one) one JSON
#: text may hold: the largest bundled file holds 6,095; at the limit, half a million empty
#: objects, parsing peaks near 130 MB (bench/results/bounded-readers-2026-11-28.md).
MAX_JSON_ELEMENTS = 1_000_000
_CHUNK = 1024 * 1024
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def readable_file(path: Path, *, max_bytes: int = MAX_FILE_BYTES) -> Path:
    """``path`` when it is a regular file of at most ``max_bytes``; else :class:`DataFileError`
    (``bounded.open_regular``: never blocks on a FIFO, never reads a device)."""
    open_regular(path, max_bytes=max_bytes).close()
    return path


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
    """One ZIP member, streamed in chunks and refused as soon as it is too large
    (:func:`member_chunks`)."""
    return b"".join(member_chunks(archive, info, where=where, budget=budget, password=password))


def member_chunks(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, *, where: object, budget: list[int],
    password: bytes | None = None, methods: frozenset[int] = frozenset(),
    max_bytes: int = MAX_FILE_BYTES,
) -> Iterator[bytes]:
    """One ZIP member's bytes, a chunk at a time, refused as soon as it is too large.

    ``budget`` holds the bytes the archive may still expand to (shared by its members). The
    declared size is checked before anything is decompressed; the real size while streaming,
    so a member whose header lies is refused after at most ``max_bytes`` too. ``methods``:
    compression methods read besides zipfile's own (zstd, once inspect_ai registered it).
    """
    if info.compress_type not in methods:
        _check_method(info, where)
    limit = min(max_bytes, budget[0])
    if info.file_size > limit:
        raise DataFileError(
            where, f"{info.filename} expands to {_mb(info.file_size)}, more than the "
            f"{_mb(limit)} read at most: not an ELITR-Bench archive?"
        )
    size = 0
    with archive.open(info, pwd=password) as handle:
        while chunk := handle.read(_CHUNK):
            size += len(chunk)
            if size > min(limit, info.file_size):
                raise DataFileError(
                    where, f"{info.filename} expands beyond its declared size "
                    f"({info.file_size:,} bytes): damaged or crafted archive"
                )
            yield chunk
    budget[0] -= size


#: Every byte but ``[]{}``: deleted by ``bytes.translate``, leaving the brackets alone.
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
#: Below this size the regular expression is quickest; its memory grows with every escape in a
#: string (about 60 bytes each: 3.8 GB for 63 MB of ``\n``), so larger texts take the scan.
_SMALL_JSON = 64 * 1024
#: Bytes the streaming scan looks at a time (its arrays: about 10 bytes per byte of a chunk).
_SCAN_CHUNK = 1024 * 1024


def json_depth(data: bytes) -> int:
    """Deepest nesting of ``[`` and ``{`` in JSON text, strings ignored (no recursion)."""
    return json_shape(data)[0]


def json_shape(data: bytes) -> tuple[int, int]:
    """``(depth, elements)`` of JSON text: its deepest nesting, and how many values its arrays
    and objects hold (each ``,`` and each ``[`` or ``{`` outside a string counts one; an
    object's member is one), strings ignored, with no recursion."""
    if len(data) > _SMALL_JSON:
        state = _scan_depth(data)
        return state.deepest, state.elements
    outside = _JSON_STRING.sub(b"", data)
    brackets = outside.translate(None, _NOT_BRACKETS)
    depth = deepest = 0
    for byte in brackets:
        depth += 1 if byte in _OPENING else -1
        deepest = max(deepest, depth)
    return deepest, outside.count(b",") + outside.count(b"[") + outside.count(b"{")


def scan_shape(chunks: Iterable[bytes]) -> tuple[int, int]:
    """:func:`json_shape` of JSON text given a chunk at a time (a ZIP member as it is
    decompressed), never held whole."""
    import numpy as np

    state = _ScanState()
    for chunk in chunks:
        for start in range(0, len(chunk), _SCAN_CHUNK):
            state.feed(np, chunk[start:start + _SCAN_CHUNK])
    return state.deepest, state.elements


def _scan_depth(data: bytes) -> _ScanState:
    """:func:`json_shape` of a large text, a chunk at a time, in memory bounded by the chunk:
    a quote opens or closes a string unless an odd run of backslashes precedes it, and only
    brackets outside strings count. (Outside a string a backslash is not JSON at all: the
    parser stops there, after the brackets counted so far.) numpy is imported here, not at
    the top: the generate command imports this module and starts faster without."""
    import numpy as np

    state = _ScanState()
    for start in range(0, len(data), _SCAN_CHUNK):
        state.feed(np, data[start:start + _SCAN_CHUNK])
    return state


class _ScanState:
    """What one chunk of :func:`_scan_depth` leaves the next: inside a string or not, the
    backslashes it ended with, the depth reached, the deepest so far and the elements seen."""

    def __init__(self) -> None:
        self.in_string = 0
        self.backslashes = 0
        self.depth = 0
        self.deepest = 0
        self.elements = 0

    def feed(self, np: Any, raw: bytes) -> None:
        if b'"' not in raw:
            # No string opens or closes here: byte counts tell the same, 30 times faster (63 MB
            # of one string's escapes, or of brackets). Inside a string nothing counts; outside,
            # the brackets alone give the depth. Backslashes only matter to a quote, so only the
            # run the chunk ends with is carried.
            kept = len(raw.rstrip(b"\\"))
            if not self.in_string:
                opening = raw.count(b"[") + raw.count(b"{")
                closing = raw.count(b"]") + raw.count(b"}")
                self.elements += opening + raw.count(b",")
                if not closing:  # only deeper: the deepest is where the chunk ends
                    self.depth += opening
                    self.deepest = max(self.deepest, self.depth)
                elif not opening:  # only shallower (the depth never passes the deepest)
                    self.depth -= closing
                else:
                    brackets = np.frombuffer(raw.translate(None, _NOT_BRACKETS), dtype=np.uint8)
                    steps = np.where((brackets == 91) | (brackets == 123), np.int32(1),
                                     np.int32(-1))
                    running = np.cumsum(steps, dtype=np.int64) + self.depth
                    self.deepest = max(self.deepest, int(running.max()))
                    self.depth = int(running[-1])
            self.backslashes = len(raw) - kept + (self.backslashes if not kept else 0)
            return
        chunk = np.frombuffer(raw, dtype=np.uint8)
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
        opening = (chunk == 91) | (chunk == 123)
        steps = opening.astype(np.int32) - ((chunk == 93) | (chunk == 125))
        steps[inside] = 0
        self.elements += int(np.count_nonzero((opening | (chunk == 44)) & ~inside))
        running = np.cumsum(steps, dtype=np.int64) + self.depth
        self.deepest = max(self.deepest, int(running.max(initial=0)))
        self.depth = int(running[-1])
        self.in_string = int(inside[-1])
        tail = size - 1 - int(last[-1])
        self.backslashes = tail + (self.backslashes if last[-1] < 0 else 0)


_OPENING = frozenset(b"[{")


def refuse_shape(depth: int, elements: int, *, where: object) -> None:
    """Refuse JSON nested deeper than :data:`MAX_JSON_DEPTH` (before the parser recurses) or
    holding more than :data:`MAX_JSON_ELEMENTS` values (before they are built in memory)."""
    if depth > MAX_JSON_DEPTH:
        raise DataFileError(
            where, f"JSON nested {depth} levels deep, more than the {MAX_JSON_DEPTH} accepted: "
            "not an ELITR-Bench file"
        )
    if elements > MAX_JSON_ELEMENTS:
        raise DataFileError(
            where, f"JSON of {elements:,} values, more than the {MAX_JSON_ELEMENTS:,} read at "
            "most: not an ELITR-Bench file (split a larger one)"
        )


def load_json(data: bytes, *, where: object) -> Any:
    """Parse JSON text after checking its nesting depth; a BOM is accepted, a key repeated
    within one object is refused (never last-wins)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataFileError(where, f"malformed JSON (not UTF-8: {exc})") from None
    refuse_shape(*json_shape(data), where=where)
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
    handle = open_regular(path, max_bytes=MAX_ARCHIVE_BYTES)
    try:
        if not handle.read(4).startswith(_ZIP_STARTS):
            raise DataFileError(path, "not a readable ZIP archive: it does not start as one "
                                      "(a renamed file, or another file with a ZIP appended?); "
                                      "pass the archive itself")
        return _Archive(handle)
    except (zipfile.BadZipFile, OSError) as exc:
        handle.close()
        raise DataFileError(path, f"not a readable ZIP archive ({exc})") from None
    except BaseException:
        handle.close()
        raise


class _Archive(zipfile.ZipFile):
    """A ZIP read from the file :func:`open_archive` opened, which it closes with itself."""

    def __init__(self, handle: Any) -> None:
        # Set first: when the file is not a ZIP, ZipFile.__init__ raises and the half-made
        # object's __del__ still calls close() (an 'Exception ignored' warning otherwise).
        self._handle = handle
        super().__init__(handle)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._handle.close()


__all__ = [
    "MAX_ARCHIVE_BYTES",
    "MAX_FILE_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_JSON_ELEMENTS",
    "json_depth",
    "json_shape",
    "load_json",
    "member_chunks",
    "open_archive",
    "parse_score",
    "parse_slug",
    "parse_whole",
    "read_bytes",
    "read_member",
    "read_text",
    "readable_file",
    "refuse_duplicates",
    "refuse_shape",
    "scan_shape",
]
