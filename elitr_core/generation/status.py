"""What the Runs page shows: generation runs and judge passes with progress, usage, failures.

Progress is read from the data itself (answers stored per run; judge counters written by the
pass every few seconds), so it is live while a run works in another process. A run marked
``running`` whose process is gone on this machine is shown as ``stopped``: it was killed, and
running its command again resumes it.
"""

from __future__ import annotations

import socket
from typing import Any

from sqlmodel import Session

from db import runs as rq
from db.evaluators import evaluator_list
from db.models import NO_SEED
from db.pairwise import pairwise_rows
from db.runs import ScoreFilter, run_by_id
from db.scores import status_counts, unparsed_scores
from elitr_core.data.model_text import IN_WORDS
from elitr_core.generation.jobs import process_alive
from elitr_core.passes.records import usage_totals

#: Characters of a judge's output shown in the unparsed list.
RAW_PREVIEW = 300
#: Runs and judges named in the line about altered outputs (the tables show every count).
ALTERED_NAMED = 5


def _state(status: str, process: dict[str, Any] | None) -> str:
    """``stopped`` for a ``running`` record whose process is gone from this host."""
    if status != "running" or not process:
        return status
    if process.get("host") != socket.gethostname():
        return status  # another machine: cannot tell
    return status if process_alive(process.get("pid")) else "stopped"


def generation_runs(session: Session, *, include_imported: bool = False) -> list[dict[str, Any]]:
    """One row per generation run: key, backend, status, progress, token usage, failures."""
    runs = rq.run_list(session=session, include_imported=include_imported)
    metas = rq.metas_by_run(session=session, run_ids=[run.id for run in runs if run.id])
    rows = []
    for run in runs:
        assert run.id is not None
        config = run.config or {}
        done = len(metas[run.id])
        expected = int(config.get("questions") or done)
        failures = config.get("failures") or []
        rows.append({
            "run": run.id, "model": run.model, "setting": run.setting, "mode": run.mode,
            "split": run.split, "seed": None if run.seed == NO_SEED else run.seed,
            "language": run.language, "variant": run.variant, "backend": run.backend,
            "status": _state(run.status, config.get("process")),
            "done": done, "questions": expected,
            "progress": done / expected if expected else 1.0,
            **usage_totals(metas[run.id]),
            # answers the storage policy of model text changed (data/model_text.py)
            "altered": sum(1 for meta in metas[run.id] if meta.get("altered")),
            "failures": len(failures),
            "last_error": failures[-1]["error"] if failures else "",
            "started_at": config.get("started_at"), "finished_at": config.get("finished_at"),
        })
    return rows


def altered_line(runs: list[dict[str, Any]], judges: list[dict[str, Any]]) -> str:
    """One line saying how many stored outputs the storage policy of model text altered, and
    where ("" when none was)."""
    where = [f"{row['altered']:,} answer(s) of run #{row['run']}" for row in runs
             if row.get("altered")]
    where += [f"{row['altered']:,} output(s) of judge {row['evaluator']}" for row in judges
              if row.get("altered")]
    if not where:
        return ""
    if len(where) > ALTERED_NAMED:
        where = [*where[:ALTERED_NAMED], f"{len(where) - ALTERED_NAMED} more"]
    return f"Stored altered by the storage policy for model text ({IN_WORDS}): " + \
        "; ".join(where) + "."


def run_config(session: Session, run_id: int) -> dict[str, Any]:
    """The stored config of one run (empty when the run does not exist)."""
    run = run_by_id(session=session, run_id=run_id)
    return dict(run.config) if run is not None else {}


def judge_passes(session: Session) -> list[dict[str, Any]]:
    """One row per evaluator made by ``judge`` (absolute or pairwise): its counts (scores, or
    pairwise judgments) and its latest pass."""
    evaluators = [e for e in evaluator_list(session=session)
                  if (e.config or {}).get("kind") in ("judge", "pairwise-judge")]
    ids = {kind: [e.id for e in evaluators if e.config.get("kind") == kind]
           for kind in ("judge", "pairwise-judge")}
    counts = {**status_counts(session=session, evaluator_ids=ids["judge"]),
              **status_counts(session=session, evaluator_ids=ids["pairwise-judge"],
                              pairwise=True)}
    rows = []
    for evaluator in evaluators:
        config = evaluator.config
        passes = config.get("passes") or [{}]
        last = passes[-1]
        failures = [f for p in passes for f in p.get("failures", [])]
        usage = last.get("usage") or {}
        rows.append({
            "evaluator": evaluator.slug, "judge_model": config.get("judge_model"),
            "style": config.get("style"),
            "backend": (last.get("backend") or {}).get("backend"),
            "status": _state(last.get("status", ""), last.get("process")),
            "done": last.get("done", 0), "todo": last.get("todo", 0),
            "progress": last.get("done", 0) / last["todo"] if last.get("todo") else 1.0,
            "scored": counts.get((evaluator.id, "ok"), 0),  # type: ignore[arg-type]
            "unparsed": counts.get((evaluator.id, "unparsed"), 0),  # type: ignore[arg-type]
            "passes": len(passes),
            "prompt_tokens": usage.get("prompt_tokens", 0),
            "completion_tokens": usage.get("completion_tokens", 0),
            "altered": sum(p.get("altered", 0) for p in passes),
            "failures": len(failures),
            "last_error": failures[-1]["error"] if failures else "",
            "started_at": last.get("started_at"), "finished_at": last.get("finished_at"),
        })
    return rows


def unparsed_judgments(session: Session, *, evaluator: str | None = None,
                       limit: int = 500) -> list[dict[str, Any]]:
    """Judge outputs with no usable score: which response, why, and the output's start."""
    rows = unparsed_scores(session=session, evaluator=evaluator, limit=limit)
    rows += _unparsed_pairwise(session, evaluator, limit - len(rows))
    for row in rows:
        output = row["output"] or ""
        row["output"] = output if len(output) <= RAW_PREVIEW else output[:RAW_PREVIEW] + "..."
    return rows


def _unparsed_pairwise(session: Session, evaluator: str | None,
                       limit: int) -> list[dict[str, Any]]:
    """Pairwise judgments without a verdict, in the shape of the absolute ones (``model``:
    ``A vs B``; ``output``: the step that failed)."""
    flt = ScoreFilter(evaluators=(evaluator,) if evaluator else None)
    found = []
    for row in pairwise_rows(session, flt, status="unparsed")[:max(limit, 0)]:
        a, b = row["model_a"], row["model_b"]
        found.append({"evaluator": row["evaluator"], "model": f"{a} vs {b} ({row['order']})",
                      "setting": row["setting"], "mode": row["mode"], "split": row["split"],
                      "meeting": row["meeting"], "question": row["question_id"],
                      "sample": row["sample"], "reason": row["reason"],
                      "output": row["raw"] if row["raw"] is not None else row["raw_facts"]})
    return found
