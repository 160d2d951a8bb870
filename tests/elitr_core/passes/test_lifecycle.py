"""The resumable-pass lifecycle: progress, the store step flushed before the end is recorded,
the status the recorder decides, and a failure recorded without ever hiding the error that stopped
the pass."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import keyed
from db.models import Evaluator
from elitr_core.data.database import open_database
from elitr_core.passes.lifecycle import PassReport, ResumablePass
from elitr_core.passes.store import Storing
from tests.elitr_core.run_helpers import Events as Progress


@dataclass
class Recorder:
    """Records each end with the number of evaluators stored at that moment."""

    decide: str | None = "done"
    fail: Exception | None = None
    ends: list[tuple[str | None, BaseException | None, int]] = field(default_factory=list)

    def __call__(self, session: Session, status: str | None,
                 error: BaseException | None) -> str | None:
        stored = session.execute(select(func.count()).select_from(Evaluator)).scalar_one()
        self.ends.append((status, error, stored))
        if self.fail is not None:
            raise self.fail
        return status or self.decide


def _write(*, session: Session, rows: Sequence[dict[str, Any]]) -> None:
    if any(row["slug"] == "poison" for row in rows):
        raise RuntimeError("disk full")
    keyed.upsert(session=session, table=Evaluator, keys=["slug"], rows=rows)


def _row(slug: str) -> dict[str, Any]:
    return {"slug": slug, "kind": "llm", "description": "", "config": {}}


@pytest.fixture
def engine(sqlite_url: str) -> Engine:
    return open_database(sqlite_url)


def _pass(engine: Engine, record: Recorder, *,
          total: int = 10, skipped: int = 4) -> tuple[ResumablePass, Progress]:
    progress = Progress()
    report = PassReport(total=total, skipped=skipped)
    return ResumablePass(engine, report, progress, record,
                         Storing(Evaluator, _write, key=("slug",))), progress


def test_a_pass_that_ends_well(engine: Engine) -> None:
    record = Recorder()
    run, progress = _pass(engine, record)
    with run.running("judging") as p:
        assert p is run and run.report.status == "running"
        for i in range(6):
            run.store.put(_row(f"judge-{i}"))
    # every result put was stored before the end was recorded
    assert record.ends == [(None, None, 6)]
    assert (run.report.status, run.report.asked, run.report.stored) == ("done", 6, 6)
    assert progress.calls[0] == ("start", 6, "judging")  # total - skipped
    assert progress.calls[-1] == ("close",) and len(progress.calls) == 8
    assert run.report.seconds > 0


@pytest.mark.parametrize(("decide", "status"), [("pending", "pending"), (None, "failed")])
def test_the_recorder_decides_the_status(engine: Engine, decide: str | None,
                                         status: str) -> None:
    record = Recorder(decide=decide)
    run, _ = _pass(engine, record)
    with run.running("generating"):
        pass
    assert run.report.status == status


@pytest.mark.parametrize("error", [ValueError("bad answer"), KeyboardInterrupt()])
def test_a_body_that_raises_is_recorded_failed_and_its_error_propagates(
        engine: Engine, error: BaseException) -> None:
    record = Recorder()
    run, progress = _pass(engine, record)
    with pytest.raises(type(error)) as caught:
        with run.running("judging"):
            run.store.put(_row("judge-1"))
            raise error
    assert caught.value is error
    assert record.ends == [("failed", error, 1)]  # the stored results flushed first
    assert run.report.status == "failed" and progress.calls[-1] == ("close",)


def test_the_error_propagates_even_when_recording_fails(
        engine: Engine, caplog: pytest.LogCaptureFixture) -> None:
    record = Recorder(fail=RuntimeError("database is gone"))
    run, progress = _pass(engine, record)
    # the first error is the one reported; the second is kept for --debug (issue 27 item 3)
    with caplog.at_level(logging.DEBUG), pytest.raises(ValueError, match="bad answer"):
        with run.running("judging"):
            raise ValueError("bad answer")
    assert [end[0] for end in record.ends] == ["failed"]
    assert "could not record the end of the pass" in caplog.text
    assert "database is gone" in caplog.text
    assert run.report.status == "failed" and progress.calls[-1] == ("close",)


def test_the_error_propagates_even_when_the_writer_fails(
        engine: Engine, caplog: pytest.LogCaptureFixture) -> None:
    record = Recorder()
    run, _ = _pass(engine, record)
    with caplog.at_level(logging.DEBUG), pytest.raises(ValueError, match="bad answer"):
        with run.running("judging"):
            run.store.put(_row("poison"))
            raise ValueError("bad answer")
    assert "could not store the last results: disk full" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # one line on screen
    assert [(status, str(error)) for status, error, _ in record.ends] == [
        ("failed", "bad answer")]


def test_a_writer_failure_at_the_end_is_recorded_and_raised(engine: Engine) -> None:
    record = Recorder()
    run, _ = _pass(engine, record)
    with pytest.raises(RuntimeError, match="disk full"):
        with run.running("judging"):
            run.store.put(_row("poison"))
    assert [(status, str(error)) for status, error, _ in record.ends] == [
        ("failed", "disk full")]
    assert run.report.status == "failed"


def test_report_usage() -> None:
    @dataclass
    class Completion:
        prompt_tokens: Any = 1200
        completion_tokens: Any = 34
        cached_tokens: Any = None

    report = PassReport()
    report.add_usage(Completion())
    report.add_usage(Completion(prompt_tokens=34, completion_tokens="?"))
    report.add_usage(object())  # a backend that reports nothing
    assert report.usage == {"prompt_tokens": 1234, "completion_tokens": 34, "cached_tokens": 0}
    assert report.tokens() == "1,234 prompt, 34 completion, 0 cached"
