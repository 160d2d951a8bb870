"""What the Runs page shows: run and judge-pass rows, progress, usage, failures, stopped
processes, and the unparsed judge outputs."""

from __future__ import annotations

import socket
import subprocess
import sys
from typing import Any

import pytest
from sqlmodel import Session, select

from db.keyed import upsert
from db.models import NO_SEED, Evaluator, Question, Response, Run
from elitr_core.data.database import open_database, reading, writing
from elitr_core.generation.status import (
    ALTERED_NAMED,
    RAW_PREVIEW,
    altered_line,
    generation_runs,
    judge_passes,
    run_config,
    unparsed_judgments,
)
from tests.small_db import upsert_score


def _ended_pid() -> int:
    """The id of a process that has ended and been reaped."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def _here(pid: int) -> dict[str, Any]:
    return {"pid": pid, "host": socket.gethostname()}


def _add_run(session: Session, model: str, status: str, config: dict[str, Any],
             metas: list[dict[str, Any]]) -> int:
    upsert(session=session, table=Run,
           keys=["model", "setting", "mode", "split", "seed", "variant", "language"],
           rows=[{"model": model, "setting": "qa", "mode": "st", "split": "test2",
                  "seed": NO_SEED, "variant": "", "language": "en", "backend": "fake",
                  "config": config, "status": status}])
    run = session.exec(select(Run).where(Run.model == model)).one()
    questions = session.exec(select(Question.id).order_by(Question.id)).all()
    upsert(session=session, table=Response, keys=["run_id", "question_id"],
           rows=[{"run_id": run.id, "question_id": q, "text": f"answer {i}", "meta": meta}
                 for i, (q, meta) in enumerate(zip(questions, metas, strict=False))])
    assert run.id is not None
    return run.id


def _runs(url: str, **kw: Any) -> dict[str, dict[str, Any]]:
    with reading(open_database(url)) as session:
        return {row["model"]: row for row in generation_runs(session, **kw)}


def test_a_generation_run_row(small_sqlite: str) -> None:
    config = {"questions": 4, "failures": [{"error": "first"}, {"error": "timeout"}],
              "started_at": "2026-01-01T00:00:00+00:00", "finished_at": None,
              "process": _here(_ended_pid())}
    metas = [{"prompt_tokens": 10, "completion_tokens": 3, "cached_tokens": 1},
             {"prompt_tokens": 7, "completion_tokens": "n/a"}, {}]
    with writing(open_database(small_sqlite)) as session:
        run_id = _add_run(session, "gen", "running", config, metas)
    row = _runs(small_sqlite)["gen"]
    assert row["run"] == run_id and row["backend"] == "fake" and row["seed"] is None
    assert (row["done"], row["questions"], row["progress"]) == (3, 4, 0.75)
    assert (row["prompt_tokens"], row["completion_tokens"], row["cached_tokens"]) == (17, 3, 1)
    assert row["failures"] == 2 and row["last_error"] == "timeout"
    assert row["started_at"] == "2026-01-01T00:00:00+00:00" and row["finished_at"] is None
    assert row["status"] == "stopped"  # marked running, its process is gone
    with reading(open_database(small_sqlite)) as session:
        assert run_config(session, run_id)["questions"] == 4
        assert run_config(session, 10**6) == {}


@pytest.mark.parametrize(("status", "process", "shown"), [
    ("running", "alive", "running"),
    ("running", "ended", "stopped"),
    ("running", "elsewhere", "running"),  # another machine: cannot tell
    ("running", None, "running"),
    ("done", "ended", "done"),
    ("failed", "ended", "failed"),
])
def test_run_status_from_its_process(small_sqlite: str, status: str, process: str | None,
                                     shown: str) -> None:
    import os

    processes = {"alive": _here(os.getpid()), "ended": _here(_ended_pid()),
                 "elsewhere": {"pid": _ended_pid(), "host": "not-" + socket.gethostname()}}
    config = {"process": processes[process]} if process else {}
    with writing(open_database(small_sqlite)) as session:
        _add_run(session, "gen", status, config, [])
    assert _runs(small_sqlite)["gen"]["status"] == shown


def test_imported_runs_are_left_out_unless_asked(small_sqlite: str) -> None:
    with writing(open_database(small_sqlite)) as session:
        _add_run(session, "gen", "done", {}, [{}])
    assert list(_runs(small_sqlite)) == ["gen"]
    with reading(open_database(small_sqlite)) as session:
        every = generation_runs(session, include_imported=True)
    assert len(every) == 13 and every[0]["model"] == "gen"  # newest first
    assert [r["run"] for r in every] == sorted((r["run"] for r in every), reverse=True)
    imported = every[1]
    # no question count stored: what is there is all there is
    assert imported["done"] == imported["questions"] == 6 and imported["progress"] == 1.0


def _add_judge(session: Session, slug: str, passes: list[dict[str, Any]]) -> int:
    upsert(session=session, table=Evaluator, keys=["slug"], rows=[{
        "slug": slug, "kind": "llm", "description": "", "scale_min": 1.0, "scale_max": 10.0,
        "config": {"kind": "judge", "judge_model": "Judge-1", "style": "gpt4",
                   "passes": passes}}])
    return session.exec(select(Evaluator.id).where(Evaluator.slug == slug)).one()


def _score_some(session: Session, judge: int, ok: int, unparsed: list[str]) -> None:
    responses = session.exec(select(Response.id).order_by(Response.id)).all()
    for response in responses[:ok]:
        upsert_score(session=session, response_id=response, evaluator_id=judge, value=5.0)
    for response, raw in zip(responses[ok:], unparsed, strict=False):
        upsert_score(session=session, response_id=response, evaluator_id=judge, value=None,
                     status="unparsed", reason="no score found", raw=raw)


def test_judge_pass_rows(small_sqlite: str) -> None:
    passes = [
        {"status": "done", "failures": [{"error": "old"}], "done": 2, "todo": 2},
        {"status": "running", "process": _here(_ended_pid()), "done": 3, "todo": 4,
         "backend": {"backend": "openai"}, "usage": {"prompt_tokens": 120,
                                                     "completion_tokens": 30},
         "failures": [{"error": "rate limited"}], "started_at": "t0"},
    ]
    with writing(open_database(small_sqlite)) as session:
        judge = _add_judge(session, "judge-a", passes)
        _score_some(session, judge, ok=2, unparsed=["??"])
        _add_judge(session, "judge-b", [])
    with reading(open_database(small_sqlite)) as session:
        rows = {row["evaluator"]: row for row in judge_passes(session)}
    assert list(rows) == ["judge-a", "judge-b"]  # gpt-4 and the humans are not judge passes
    a = rows["judge-a"]
    assert (a["judge_model"], a["style"], a["backend"]) == ("Judge-1", "gpt4", "openai")
    assert a["status"] == "stopped"
    assert (a["done"], a["todo"], a["progress"]) == (3, 4, 0.75)
    assert (a["scored"], a["unparsed"], a["passes"]) == (2, 1, 2)
    assert (a["prompt_tokens"], a["completion_tokens"]) == (120, 30)
    assert a["failures"] == 2 and a["last_error"] == "rate limited"  # over every pass
    assert a["started_at"] == "t0" and a["finished_at"] is None
    b = rows["judge-b"]  # no pass recorded yet
    assert (b["passes"], b["scored"], b["progress"], b["status"]) == (1, 0, 1.0, "")


def test_outputs_altered_by_the_storage_policy_are_counted_and_said_in_one_line(
        small_sqlite: str) -> None:
    altered = {"altered": {"replaced": 1, "cut": 0}}
    with writing(open_database(small_sqlite)) as session:
        _add_run(session, "gen", "done", {}, [altered, {}, altered])
        _add_run(session, "clean", "done", {}, [{}])
        _add_judge(session, "judge-a", [{"altered": 2}, {"altered": 1}, {}])
        _add_judge(session, "judge-b", [{"altered": 0}])
    runs = _runs(small_sqlite)
    assert (runs["gen"]["altered"], runs["clean"]["altered"]) == (2, 0)
    with reading(open_database(small_sqlite)) as session:
        judges = {row["evaluator"]: row for row in judge_passes(session)}
    assert (judges["judge-a"]["altered"], judges["judge-b"]["altered"]) == (3, 0)  # every pass
    line = altered_line(list(runs.values()), list(judges.values()))
    assert line.startswith("Stored altered by the storage policy for model text (NUL, ")
    assert line.endswith(f"2 answer(s) of run #{runs['gen']['run']}; "
                         "3 output(s) of judge judge-a.") and "\n" not in line
    assert altered_line([runs["clean"]], [judges["judge-b"]]) == ""
    many = [{"run": n, "altered": 1} for n in range(ALTERED_NAMED + 3)]
    assert altered_line(many, []).endswith("run #4; 3 more.")


def test_unparsed_judgments(small_sqlite: str) -> None:
    long = "x" * (RAW_PREVIEW + 50)
    with writing(open_database(small_sqlite)) as session:
        _score_some(session, _add_judge(session, "judge-a", []), ok=1,
                    unparsed=["short output", long])
        _score_some(session, _add_judge(session, "judge-b", []), ok=0, unparsed=["other"])
    with reading(open_database(small_sqlite)) as session:
        every = unparsed_judgments(session)
        only_a = unparsed_judgments(session, evaluator="judge-a")
        first = unparsed_judgments(session, limit=1)
    assert [r["evaluator"] for r in every] == ["judge-a", "judge-a", "judge-b"]
    assert [r["evaluator"] for r in only_a] == ["judge-a", "judge-a"]
    assert len(first) == 1
    outputs = sorted(r["output"] for r in only_a)
    assert outputs == ["short output", "x" * RAW_PREVIEW + "..."]
    row = every[-1]
    assert row["reason"] == "no score found" and row["sample"] == 0
    assert row["meeting"].startswith("meeting_en_") and row["question"] >= 1
    assert {"model", "setting", "mode", "split"} <= set(row)


def test_pairwise_judge_pass_row(bundled_sqlite: str) -> None:
    from elitr_core.backends.fake import FakeBackend
    from elitr_core.judging.pairs import PairwiseSpec
    from elitr_core.judging.pairwise_runner import pairwise_judge_run

    spec = PairwiseSpec(judge_model="fake-judge", style="battle", evaluator="battles",
                        models=("GPT-4", "LongAlpaca-7B"), split="test2", setting="qa",
                        mode="st")
    report = pairwise_judge_run(open_database(bundled_sqlite), spec,
                                FakeBackend(unparsable_rate=0.2))
    with reading(open_database(bundled_sqlite)) as session:
        row = next(r for r in judge_passes(session) if r["evaluator"] == "battles")
    assert (row["judge_model"], row["style"], row["status"]) == ("fake-judge", "battle", "done")
    assert (row["scored"], row["unparsed"]) == (report.ok, report.unparsed)
    assert report.unparsed > 0 and row["scored"] + row["unparsed"] == 130 * 2
    assert (row["done"], row["todo"], row["progress"]) == (260, 260, 1.0)


def test_unparsed_pairwise_judgments_are_listed(bundled_sqlite: str) -> None:
    from elitr_core.backends.fake import FakeBackend
    from elitr_core.judging.pairs import PairwiseSpec
    from elitr_core.judging.pairwise_runner import pairwise_judge_run

    spec = PairwiseSpec(judge_model="fake-judge", style="cream", evaluator="cream",
                        models=("GPT-4", "LongAlpaca-7B"), split="test2", setting="qa",
                        mode="st", max_key_facts=2)  # the fake judge lists up to 4 key facts
    report = pairwise_judge_run(open_database(bundled_sqlite), spec, FakeBackend())
    with reading(open_database(bundled_sqlite)) as session:
        rows = unparsed_judgments(session, evaluator="cream")
    assert len(rows) == report.unparsed > 0
    row = rows[0]
    assert row["model"] in ("GPT-4 vs LongAlpaca-7B (ab)", "GPT-4 vs LongAlpaca-7B (ba)",
                            "LongAlpaca-7B vs GPT-4 (ab)", "LongAlpaca-7B vs GPT-4 (ba)")
    assert row["reason"].startswith("key facts: ") and "more than the maximum 2" in row["reason"]
    assert "KEY FACTS:" in row["output"]
