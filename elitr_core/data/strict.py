"""No last-wins: the one place where every reader parses ids and numbers and finds duplicates.

Every file the project reads (benchmark JSON and its archives, scores CSV, inspect_ai logs and
their ZIP members, lm-evaluation-harness samples and results) goes through these rules, so that
one record given twice is refused instead of the later copy silently winning:

- **Duplicates.** :func:`refuse_duplicates` refuses the first key seen twice, naming both its
  places (two samples of one question, one ZIP member twice, a question listed twice in a
  multi-turn sample, a model twice under one question, a CSV column twice).
- **Duplicate JSON keys.** :func:`loads` parses JSON with an ``object_pairs_hook`` that refuses
  a key repeated within one object (``json`` keeps the last one silently).
- **ASCII digits only.** Ids and numbers are read with :func:`ascii_int` / :func:`id_number`
  and :data:`WHOLE` / :data:`NUMBER`: ``str.isdigit``, ``int()`` and the regex ``\\d`` also
  accept full-width (``１``) and Arabic-Indic (``١``) digits, which would make ``q１`` and
  ``q1`` (or score keys ``"١"`` and ``"1"``) one question, the last one winning. An id number
  is written canonically (``3``, not ``03`` or ``+3``), so one number has one spelling.
- **NaN and Infinity.** :func:`loads` refuses the JSON constants ``NaN``/``Infinity``, and
  :func:`refuse_non_finite` any float that is not finite in what is about to be stored (a run's
  or an evaluator's config): SQLite would store them, PostgreSQL's JSON refuses them, so both
  refuse alike.

``tests/test_architecture.py`` fails on ``isdigit``/``isdecimal``/``isnumeric``, a ``\\d`` in a
regex or ``int(``/``float(`` of read text in the readers outside this module.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from elitr_core.errors import DataFileError

#: A whole number in ASCII digits, with an optional sign.
WHOLE = re.compile(r"[+-]?[0-9]+")
#: A decimal number in ASCII digits (no NaN, no infinity, no ``_`` separators).
NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: An id's number as written canonically: ``0`` or ASCII digits without a leading zero.
ID_NUMBER = re.compile(r"0|[1-9][0-9]{0,8}")


def ascii_int(text: str) -> int | None:
    """The whole number ``text`` writes in ASCII digits (optional sign, surrounding spaces
    ignored); None when it is anything else (``"١"``, ``"３"``, ``"1_000"``, ``"3.0"``, more
    than 4,000 digits)."""
    stripped = text.strip()
    # (Python refuses to convert more than 4,300 digits: no stored number is that long)
    return int(stripped) if len(stripped) <= 4000 and WHOLE.fullmatch(stripped) else None


def ascii_float(text: str) -> float | None:
    """The number ``text`` writes in ASCII digits; None for anything else (``"nan"``,
    ``"inf"``, ``"٣"``, ``"1_0"``)."""
    stripped = text.strip()
    # (never NaN; "1" followed by 400 zeros is an infinity, which a caller's range refuses)
    return float(stripped) if NUMBER.fullmatch(stripped) else None


def id_number(value: object) -> int | None:
    """The number of an id written canonically in ASCII digits (``"3"``, a JSON integer 3);
    None for anything else (``"03"``, ``"+3"``, ``"３"``, ``"١"``, ``True``, ``3.0``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if value >= 0 else None
    if isinstance(value, str) and ID_NUMBER.fullmatch(value):
        return int(value)
    return None


def refuse_duplicates(entries: Iterable[tuple[Hashable, str]], *, path: object,
                      describe: Callable[[Any], str]) -> None:
    """Refuse the first key seen twice, naming it (``describe(key)``) and both its places.

    ``entries`` yields ``(key, place)`` pairs, a place being a line, an entry or a sample.

    Raises
    ------
    DataFileError
        ``FILE: <key> appears twice (<first place> and <second place>): keep one``.
    """
    seen: dict[Hashable, str] = {}
    for key, place in entries:
        if key in seen:
            raise DataFileError(
                path, f"{describe(key)} appears twice ({seen[key]} and {place}): keep one"
            )
        seen[key] = place


class DuplicateKey(ValueError):
    """A JSON object holding the same key twice (``json`` would keep the last silently)."""


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` of :func:`loads`: a key given twice in one object is refused."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise DuplicateKey(
                f"key {key!r} appears twice in one JSON object (values {found[key]!r:.40} and "
                f"{value!r:.40}): keep one")
        found[key] = value
    return found


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON (numbers must be finite)")


def loads(text: str | bytes, *, where: object, constants: bool = False) -> Any:
    """JSON parsed with the no-last-wins rules: a key twice in one object is refused, and so
    are the constants ``NaN``, ``Infinity``, ``-Infinity`` unless ``constants`` (a format that
    writes them for "no value", as inspect_ai writes an unscored sample's NaN; they are then
    read but never stored: :func:`refuse_non_finite`).

    Raises
    ------
    DataFileError
        Naming ``where`` and what is wrong, in one line.
    """
    try:
        return json.loads(text, parse_constant=None if constants else _refuse_constant,
                          object_pairs_hook=unique_keys)
    except DuplicateKey as exc:
        raise DataFileError(where, str(exc)) from None
    except ValueError as exc:  # JSONDecodeError is a ValueError
        raise DataFileError(where, f"malformed JSON: {exc}") from None


def refuse_non_finite(value: Any, *, path: object, what: str) -> None:
    """Refuse a NaN or an infinity anywhere in ``value`` (nested dicts and lists), which is
    about to be stored as JSON: PostgreSQL refuses them, SQLite would keep them.

    Raises
    ------
    DataFileError
        Naming ``what`` and the key path of the first one found.
    """
    stack: list[tuple[str, Any]] = [(what, value)]
    while stack:
        place, item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise DataFileError(path, f"{place} is {item!r}, not a finite number: NaN and "
                                "infinities are not stored; fix the value where it was made")
        if isinstance(item, dict):
            stack += [(f"{place}.{key}", v) for key, v in item.items()]
        elif isinstance(item, list | tuple):
            stack += [(f"{place}[{i}]", v) for i, v in enumerate(item)]
