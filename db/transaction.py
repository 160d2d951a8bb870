"""The one way to open a transaction: :func:`reading`, :func:`writing`, :func:`queued_writing`.

Each yields a :class:`~sqlmodel.Session` that the named query and write functions of ``db``
take as ``session=``; the core never builds a statement or a session itself
(ARCHITECTURE.md, Conventions). One unit of work is one transaction:

- ``reading(engine)``: a read-only transaction, rolled back at the end. SQLite begins it
  DEFERRED, so readers never wait for writers. ``one_statement=True`` is for a read of one
  statement (the annotator's item and queue views): PostgreSQL then runs it in autocommit
  mode, its own snapshot, without the BEGIN and ROLLBACK round trips; several statements in
  such a unit would each see their own snapshot.
- ``writing(engine)``: committed at the end, rolled back on any error, so nothing is ever
  half-written. SQLite takes the write lock at BEGIN (``BEGIN IMMEDIATE``, :mod:`db.engine`).
- ``queued_writing(engine)``: ``writing`` for short writes that many threads of one process
  make at once (every annotator's submit): on SQLite the writers of this process first queue
  on a fair in-process lock, one per database. SQLite lets one writer in at a time and a
  blocked writer polls with growing sleeps, so twenty annotators submitting at once saw
  multi-second tails; the queue keeps every submit short. PostgreSQL needs no such lock.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

_READERS: dict[tuple[Engine, bool], Engine] = {}  # (engine, one statement) -> reading engine
_SQLITE_WRITERS: dict[str, threading.Lock] = {}
_NO_LOCK = nullcontext()  # reusable: it holds no state


def _reader(engine: Engine, *, one_statement: bool) -> Engine:
    """``engine`` for reading (built once per engine: building one costs a little CPU too)."""
    key = (engine, one_statement)
    if key not in _READERS:
        options: dict[str, Any] = {"sqlite_begin": "DEFERRED"}
        if one_statement and engine.dialect.name == "postgresql":
            options["isolation_level"] = "AUTOCOMMIT"
        _READERS[key] = engine.execution_options(**options)
    return _READERS[key]


@contextmanager
def reading(engine: Engine, *, one_statement: bool = False) -> Iterator[Session]:
    """A read-only unit of work (see the module docstring); nothing it does is committed."""
    with Session(_reader(engine, one_statement=one_statement)) as session:
        yield session


def writing(engine: Engine) -> AbstractContextManager[Session]:
    """One write transaction: commit on success, roll back on any error."""
    return _committed(engine, _NO_LOCK)


def queued_writing(engine: Engine) -> AbstractContextManager[Session]:
    """:func:`writing`, queued behind this process's other writers on SQLite (a thread lock
    held from the first statement's BEGIN to the commit); the same as :func:`writing` on
    PostgreSQL. The session is built and closed outside the lock, so that the writers queue
    only for the database's own work."""
    if engine.dialect.name != "sqlite":
        return _committed(engine, _NO_LOCK)
    return _committed(engine, _SQLITE_WRITERS.setdefault(str(engine.url), threading.Lock()))


@contextmanager
def _committed(engine: Engine, lock: AbstractContextManager[object]) -> Iterator[Session]:
    """The body of :func:`writing` and :func:`queued_writing`: a session (built outside
    ``lock``) whose work, done holding ``lock``, is committed, or rolled back on any error.
    The functions return this directly, so a write runs no more Python or SQL than before."""
    with Session(engine, expire_on_commit=False) as session, lock:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise


def forget_engines() -> None:
    """Drop the reading engines built so far (:func:`db.engine.dispose_engines` calls this)."""
    _READERS.clear()
