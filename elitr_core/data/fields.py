"""Field checks of the typed gate (``records``): pure functions, one per kind of value.

Each returns the value as stored or raises a pydantic ``PydanticCustomError`` whose message
says what is wrong and what to do; ``records`` wraps them into typed record models whose
bounds come from the schema, and turns a refusal into one line naming the place.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any

from pydantic_core import PydanticCustomError

from elitr_core.data.strict import WHOLE, ascii_float, ascii_int
from elitr_core.vocab import SCORE_MAX, SCORE_MIN

#: Characters no stored text holds: C0 controls except tab, newline and carriage return (which
#: ``clean_text`` normalises away first), DEL, and lone surrogates (not characters: neither
#: SQLite nor PostgreSQL can encode them; PostgreSQL refuses NUL). Imported text holding one is
#: refused; a model's output has them replaced (``data/model_text.py``).
UNSTORABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
_ASCII_NAME = re.compile("[\x20-\x7e]*")
# Default-ignorable code points that are not in category Cf (which is refused as a whole):
# combining grapheme joiner, Hangul fillers, Mongolian/variation selectors, Khmer vowels.
_IGNORABLE = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0"
    "\U000e0100-\U000e01ef]"
)
_REFUSED_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"}
#: First characters of the CSV export's formula escape (export/formats.FORMULA_STARTS).
_ESCAPED_FORMULA = ("'=", "'+", "'-", "'@")


def refuse(kind: str, message: str) -> PydanticCustomError:
    """A validation error with our own one-line message (what was wrong, what to do)."""
    return PydanticCustomError(kind, message)


def whole_number(value: Any) -> int:
    """A JSON integer or ASCII digits (an optional sign, surrounding spaces ignored); never a
    boolean or a float, even ``3.0``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip()
        if len(text) > 20:  # before any conversion: int() of 5,000 digits raises
            if WHOLE.fullmatch(text):
                raise refuse("int_too_long", "has more digits than any stored number")
        elif (number := ascii_int(text)) is not None:
            return number
    raise refuse("whole_number", "is not a whole number (write digits, such as 3)")


_NOT_A_NUMBER = f"is not a number (write a number from {SCORE_MIN:g} to {SCORE_MAX:g})"
_OUTSIDE = f"is outside {SCORE_MIN:g}..{SCORE_MAX:g}"


def score_number(value: Any) -> float:
    """A score: a finite number, or a numeric string such as ``"6.8"``, in the rubric's range."""
    # the common types first, by exact type: this runs once per distinct cell of a big CSV
    if type(value) is str:
        read = ascii_float(value)
        if read is None:
            raise refuse("score_type", _NOT_A_NUMBER)
        score = read
    elif isinstance(value, float):
        score = value
    elif isinstance(value, int) and not isinstance(value, bool):
        if not SCORE_MIN <= value <= SCORE_MAX:  # compared as an int: no float(10**400)
            raise refuse("score_range", _OUTSIDE)
        score = float(value)
    else:
        raise refuse("score_type", _NOT_A_NUMBER)
    if not SCORE_MIN <= score <= SCORE_MAX:  # NaN and infinities fail both comparisons
        raise refuse("score_range", _OUTSIDE)
    return score


def clean_text(value: Any) -> str:
    """Text as stored: line ends normalised to ``\\n``; NUL, lone surrogates and C0 controls
    other than tab and newline refused."""
    if not isinstance(value, str):
        raise refuse("text_type", "should be a text")
    if "\r" in value:
        value = value.replace("\r\n", "\n").replace("\r", "\n")
    bad = UNSTORABLE.search(value)
    if bad:
        raise refuse("text_control", f"holds the control character {_codepoint(bad.group())}"
                                     " at character " + str(bad.start() + 1) + ": remove it")
    return value


def _codepoint(char: str) -> str:
    name = unicodedata.name(char, "") if not "\ud800" <= char <= "\udfff" else "lone surrogate"
    return f"U+{ord(char):04X}" + (f" ({name})" if name else "")


@functools.lru_cache(maxsize=1 << 16)
def clean_name(value: str) -> str:
    """A name as stored: NFC, surrounding spaces stripped, inner runs of spaces collapsed;
    refused when empty or holding an invisible, control, format or bidi character."""
    if _ASCII_NAME.fullmatch(value):  # the common case: printable ASCII
        name = value.strip(" ")
    else:
        # lone surrogates cannot be normalised: look for refused characters first
        name = unicodedata.normalize("NFC", _check_name_chars(value.strip()))
    if "  " in name:
        name = " ".join(part for part in name.split(" ") if part)
    if not name:
        raise refuse("name_empty", "is empty: give a name")
    if name.startswith(_ESCAPED_FORMULA):
        raise refuse("name_formula", "starts like the CSV export's formula escape ('=): "
                                     "remove the leading quote")
    return name


def lookup_name(value: str) -> str:
    """A name typed to find something stored (a study in a link, on the command line) in the
    form names are stored in (:func:`clean_name`), so that ``Caf\u0065\u0301`` finds ``Caf\u00e9``;
    a name that could never have been stored is returned as given (it finds nothing)."""
    try:
        return clean_name(value)
    except PydanticCustomError:
        return value


def _check_name_chars(value: str) -> str:
    for char in value:
        category = unicodedata.category(char)
        if (category in _REFUSED_CATEGORIES and char != " ") or _IGNORABLE.match(char):
            what = "an invisible or bidirectional" if category == "Cf" or _IGNORABLE.match(
                char) else "a control or separator"
            raise refuse("name_char", f"holds {what} character {_codepoint(char)}: "
                                      "retype the name without it")
    return value


def as_name(value: Any) -> str:
    """A name (:func:`clean_name`) from any value: a non-text is refused."""
    if not isinstance(value, str):
        raise refuse("name_type", "should be a text (a name)")
    return clean_name(value)


def csv_name(value: Any) -> str:
    """A name from a CSV cell: the export's formula escape (``'=x`` for a name ``=x``,
    ``export.formats.FORMULA_STARTS``) is undone first, so an exported CSV imports back."""
    if isinstance(value, str) and value.startswith(_ESCAPED_FORMULA):
        value = value[1:]
    return as_name(value)


def name_or_blank(value: Any) -> str:
    """A name, or ``""`` for an empty one (an optional key column that is never NULL)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return ""
    return as_name(value)


def choice(values: Sequence[str]) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        text = value.strip() if isinstance(value, str) else value
        if text not in values:
            raise refuse("choice", f"is not one of {', '.join(values)}")
        return str(text)

    return check


def blank_as(default: Any) -> Callable[[Any], Any]:
    """Before-validator: an empty CSV cell (or None) stands for ``default``."""

    def check(value: Any) -> Any:
        if value is None or (isinstance(value, str) and not value.strip()):
            return default
        return value

    return check
