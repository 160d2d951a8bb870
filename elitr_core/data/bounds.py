"""What a column of the schema (``db/models.py``) holds, on SQLite and PostgreSQL alike.

Read by the typed gate (``records``: imported records are refused outside these bounds) and by
the storage policy of model text (``model_text``: a model's output is cut to fit). It takes the
SQLModel table as an argument and imports no table itself.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Integer, SmallInteger, String, TypeDecorator

#: Longest text stored in a ``Text`` column (question, reference, response, transcript) or in
#: one string of a JSON column; the bundled data's longest is under 3,000 characters, a meeting
#: transcript under 300,000.
MAX_TEXT_CHARS = 2_000_000
_INT_BITS = {SmallInteger: 16, Integer: 32, BigInteger: 64}


def column_type(table: type[Any], column: str) -> Any:
    """The SQLAlchemy type of ``table.column`` (SQLModel's ``AutoString`` unwrapped)."""
    sa_type = table.__table__.c[column].type  # SQLModel tables carry their SQLAlchemy Table
    # SQLModel's AutoString is a TypeDecorator around String(length)
    return sa_type.impl if isinstance(sa_type, TypeDecorator) else sa_type


def integer_bounds(table: type[Any], column: str) -> tuple[int, int]:
    """The range an integer column holds on both backends (PostgreSQL's width: SQLite's
    INTEGER is always 64 bits)."""
    sa_type = column_type(table, column)
    bits = next((b for t, b in _INT_BITS.items() if type(sa_type) is t), None)
    if bits is None:
        bits = 64 if isinstance(sa_type, BigInteger) else 32
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


#: string_length's answers: a pass stores thousands of rows of one table, and the schema's
#: lengths do not change while a process runs
_LENGTHS: dict[tuple[Any, str], int] = {}


def string_length(table: type[Any], column: str) -> int:
    """The most characters a string column holds (``MAX_TEXT_CHARS`` for ``Text``, and for
    each string of a JSON column)."""
    key = (table, column)
    if key not in _LENGTHS:
        sa_type = column_type(table, column)
        length = getattr(sa_type, "length", None) if isinstance(sa_type, String) else None
        _LENGTHS[key] = int(length) if length else MAX_TEXT_CHARS
    return _LENGTHS[key]

