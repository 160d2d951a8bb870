"""The storage policy of text a model or a server made: one function every pass's store step
(``passes/store.py``) calls.

Imported text goes through the typed gate (``records``), which *refuses* a bad file: its owner
can fix it. A model's output cannot be fixed, and a pass of hours must not fail on its 900th
answer because PostgreSQL refuses a NUL (a lone surrogate fails on SQLite too). So what a
backend returns (answers of ``generate``, judge and pairwise outputs, the key facts and the
parser's reasons read from them, an answer's metadata from the server, a server's error
message kept in a pass's failures) is stored by this policy, the same on both databases:

- every character the gate refuses in imported text (``fields.UNSTORABLE``: NUL, the C0
  controls other than tab, newline and carriage return, DEL, and lone surrogates
  U+D800..U+DFFF, which are not characters) becomes U+FFFD, one for one: nothing is dropped,
  and every other character keeps its place;
- a text longer than its column (``bounds.string_length``: ``Text`` columns and each string of
  a JSON column :data:`~elitr_core.data.bounds.MAX_TEXT_CHARS`) keeps its beginning and ends
  with the marker ``…[N characters not stored]``, the whole within the column;
- everything else is stored exactly: tab, newline, carriage return, white space, any valid
  Unicode (U+FFFD a model wrote itself included);
- the store step counts the outputs it stored altered (a response's ``meta["altered"]``, a
  pass's ``altered`` counter); the token counts stored are the backend's, of the output as
  generated;
- an altered answer that was not cut also keeps its original, JSON-escaped, in
  ``meta["altered"]["original"]``: nothing the model said is lost, and a multi-turn run
  resumed after it continues from exactly that text (:func:`as_generated`), as an
  uninterrupted run does. Judge outputs are never replayed: they keep only the policy's form.

It is a separate step after the backend on purpose: the engine's decoded text is its result
(the ``hf`` tests compare it token for token with ``model.generate``) and the judge's parser
reads the output as generated; only what is written is changed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from elitr_core.data.bounds import MAX_TEXT_CHARS, string_length
from elitr_core.data.fields import UNSTORABLE

REPLACEMENT = "\ufffd"
#: The policy in one clause, for the CLI's and the Runs page's line about altered outputs.
IN_WORDS = ("NUL, control characters and lone surrogates became U+FFFD, a text too long for "
            "its column was cut with a marker; see docs/security.md")
#: Ends a text cut to fit its column (``{:,}``: the characters not stored).
CUT_MARKER = "\u2026[{:,} characters not stored]"


@dataclass(frozen=True)
class Stored:
    """A text as stored: ``replaced`` characters became U+FFFD, ``cut`` were not stored."""

    text: str
    replaced: int = 0
    cut: int = 0

    @property
    def altered(self) -> bool:
        return bool(self.replaced or self.cut)


@dataclass(frozen=True)
class StoredRow:
    """A row as stored and what the policy changed in it, all its text fields together."""

    values: dict[str, Any]
    replaced: int = 0
    cut: int = 0

    @property
    def altered(self) -> bool:
        return bool(self.replaced or self.cut)

    def note(self, original: str) -> dict[str, Any]:
        """What a response's ``meta["altered"]`` records: the characters replaced and cut and,
        when nothing was cut, the ``original`` output as a JSON string literal (ASCII: a NUL
        or a lone surrogate written as a ``\\u`` escape, so storable), which
        :func:`as_generated` reads back."""
        note: dict[str, Any] = {"replaced": self.replaced, "cut": self.cut}
        if not self.cut:
            # json.dumps escapes C0 controls, surrogates and all non-ASCII, but not DEL
            escaped = json.dumps(original).replace("\x7f", "\\u007f")
            if len(escaped) <= MAX_TEXT_CHARS:
                note["original"] = escaped
        return note


def as_generated(text: str, meta: Mapping[str, Any] | None) -> str:
    """A stored answer as its model generated it: the original its ``meta["altered"]`` kept
    (:meth:`StoredRow.note`), else the stored text. A multi-turn run resumed after an altered
    answer continues from it, as the uninterrupted run did."""
    altered = (meta or {}).get("altered")
    original = altered.get("original") if isinstance(altered, Mapping) else None
    return str(json.loads(original)) if isinstance(original, str) else text


def storable(text: str, limit: int) -> Stored:
    """``text`` as the policy stores it in a place of ``limit`` characters.

    Examples
    --------
    >>> storable("ok\\x00\\ud800", 100)
    Stored(text='ok\\ufffd\\ufffd', replaced=2, cut=0)
    >>> storable("x" * 50, 40).text
    'xxxxxxxxxxxxx…[37 characters not stored]'
    """
    if len(text) <= limit and UNSTORABLE.search(text) is None:  # nearly every output
        return Stored(text)
    text, replaced = UNSTORABLE.subn(REPLACEMENT, text)
    if len(text) <= limit:
        return Stored(text, replaced)
    # the marker's length depends on the count it names: grow the cut until both fit
    cut = len(text) - limit
    while len(text) - cut + len(CUT_MARKER.format(cut)) > limit:
        cut = len(text) - limit + len(CUT_MARKER.format(cut))
    if cut > len(text):
        raise ValueError(f"a place of {limit} characters cannot hold the cut marker")
    return Stored(text[:len(text) - cut] + CUT_MARKER.format(cut), replaced, cut)


def storable_row(table: type[Any], values: Mapping[str, Any]) -> StoredRow:
    """The row ``values`` of ``table`` with the policy applied to every text in it: each string
    field within its column, each string of a JSON field (keys too) within
    :data:`~elitr_core.data.bounds.MAX_TEXT_CHARS`; other values unchanged."""
    counts = [0, 0]

    def apply(value: Any, limit: int) -> Any:
        if isinstance(value, str):
            stored = storable(value, limit)
            counts[0] += stored.replaced
            counts[1] += stored.cut
            return stored.text
        if isinstance(value, list | tuple):
            return [apply(item, limit) for item in value]
        if isinstance(value, Mapping):
            return {apply(key, limit): apply(item, limit) for key, item in value.items()}
        return value

    # string_length: a String column's length, MAX_TEXT_CHARS for Text and JSON columns
    row = {name: apply(value, string_length(table, name))
           if isinstance(value, str | list | tuple | Mapping) else value
           for name, value in values.items()}
    return StoredRow(row, *counts)
