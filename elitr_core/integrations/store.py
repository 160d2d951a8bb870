"""Storing harness runs (inspect_ai logs, lm-evaluation-harness samples) as runs of the project.

Everything passes the project's import gate: the model and evaluator names and the scores are
checked by ``records`` (bounds from the schema, the same on SQLite and PostgreSQL), the answers
are stored by the policy of text a model made (``model_text``: never refused, altered
characters counted and the original kept), and a stored answer or score a file would change
is refused unless ``--replace`` (``overwrite.Guard``). One import is one transaction: a refused
file leaves nothing written, and importing the same file again changes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlmodel import Session

from db import benchmark as bq
from db import keyed
from db import responses as pq
from db import runs as rq
from db.evaluators import OtherSetup, evaluator_for
from db.models import NO_SEED, Meeting, Response, Run
from db.scores import SCORE_KEY, score_row, upsert_scores
from elitr_core.data import records
from elitr_core.data.credentials import without_credentials
from elitr_core.data.model_text import storable_row
from elitr_core.data.overwrite import Guard, guard_scores, refuse_other_split
from elitr_core.data.report import ImportReport
from elitr_core.data.strict import refuse_duplicates, refuse_non_finite
from elitr_core.errors import DataFileError, UserError
from elitr_core.integrations.harness import BACKENDS, HarnessRun, evaluator_slug
from elitr_core.vocab import LANGUAGES, MODES, REFUSED_PAIRS, SETTINGS, SPLITS

_RUN_KEY = ["model", "setting", "mode", "split", "seed", "variant", "language"]


def is_harness_file(path: Path) -> bool:
    """Whether ``import`` reads ``path`` as a harness's output rather than an ELITR-Bench file:
    an inspect_ai log, or an lm-evaluation-harness ``samples_*.jsonl``."""
    from elitr_core.integrations.inspect_logs import is_inspect_log

    return is_inspect_log(path) or path.suffix.lower() == ".jsonl"


def read_harness_file(path: Path, *, partial: bool = False) -> HarnessRun:
    """The run held by one harness file (see :func:`is_harness_file`)."""
    if path.suffix.lower() == ".jsonl":
        from elitr_core.integrations.lm_eval_samples import read_lm_eval_samples

        return read_lm_eval_samples(path)
    from elitr_core.integrations.inspect_logs import read_inspect_log

    return read_inspect_log(path, partial=partial)


def import_harness_paths(session: Session, paths: list[Path], report: ImportReport, *,
                         replace: bool = False, partial: bool = False,
                         variant: str = "") -> list[str]:
    """Read and store every harness file of ``paths`` (as runs of ``variant``, which tells
    apart two runs of one model, split, setting and mode); the lines of what was left out."""
    skipped: list[str] = []
    guard = Guard(replace, report)
    for path in paths:
        run = read_harness_file(path, partial=partial)
        store_harness_run(session, run, report, guard, variant=variant)
        report.files.append(path.name)
        skipped += run.skipped
    return skipped


def store_harness_run(session: Session, run: HarnessRun, report: ImportReport,
                      guard: Guard, *, variant: str = "") -> int:
    """Store one run (of ``variant``) with its answers and scores; its run id."""
    model, variant = _checked_key(run, variant)
    refuse_duplicates((((a.meeting, a.number), f"sample {a.sample}") for a in run.answers),
                      path=run.source, describe=lambda key: f"the answer to meeting {key[0]} "
                      f"question {key[1]}")
    refuse_non_finite(run.config, path=run.source, what="the run's config")
    questions = _question_ids(session, run)
    config = without_credentials(run.config)  # api_key, token=hf_..., a DSN's password
    row = {"model": model, "setting": run.setting, "mode": run.mode, "split": run.split,
           "seed": NO_SEED, "variant": variant, "language": run.language,
           "backend": run.backend, "status": "done", "source": run.source[:512],
           "config": config}
    _refuse_other_setup(session, run, row)
    # no update columns: a run imported before keeps its config (a second import is a no-op)
    keyed.upsert(session=session, table=Run, keys=_RUN_KEY, rows=[row])
    run_id = keyed.id_map(session=session, table=Run, keys=_RUN_KEY,
                          where={"model": model})[tuple(row[k] for k in _RUN_KEY)]
    rows = {}
    for answer in run.answers:
        meta: dict[str, Any] = {"harness": BACKENDS[run.backend], "sample": answer.sample}
        stored = storable_row(Response, {"text": answer.text})
        if stored.altered:
            meta["altered"] = stored.note(answer.text)
        rows[questions[(answer.meeting, answer.number)]] = {
            "run_id": run_id, "question_id": questions[(answer.meeting, answer.number)],
            "text": stored.values["text"], "meta": meta}
    old = keyed.stored_rows(session=session, table=Response, keys=["question_id"],
                            columns=["text"], where={"run_id": [run_id]})
    label = rq.label_of(model, variant, run.language)
    for (meeting, number), qid in questions.items():
        if qid in rows:
            guard.check(path=run.source, what=f"the response of {label} to meeting {meeting} "
                        f"question {number}", stored=old.get((qid,)), new=rows[qid],
                        columns=["text"])
    keyed.upsert(session=session, table=Response, rows=list(rows.values()),
                 keys=["run_id", "question_id"], update=["text", "meta"])
    _store_scores(session, run, run_id, questions, guard, report, variant)
    report.counts["runs"] += 1
    report.counts["responses"] += len(rows)
    return run_id


#: What shapes a harness run's answers (its identity): a second log of the same run key must
#: agree on each, or be imported as another run (``--variant``). The log file, its ids, its
#: status and the harness's version are not compared (two parts of one run differ in those).
HARNESS_IDENTITY = ("source", "task", "task_version", "task_args", "model", "model_args",
                    "generate_config", "gen_kwargs", "generation_kwargs", "chat_template_sha",
                    "system_instruction")


def _refuse_other_setup(session: Session, run: HarnessRun, row: dict[str, Any]) -> None:
    """Refuse a log whose run key names a stored run made otherwise: by ``generate`` or the
    release, or by this harness with other task arguments, model arguments or generation
    settings (each differing field named); a log never merges into another setup's run."""
    stored = rq.stored_run(session=session, key={k: row[k] for k in _RUN_KEY})
    if stored is None:
        return
    label = rq.label_of(row["model"], row["variant"], row["language"])
    if stored.backend != run.backend:
        raise DataFileError(run.source, f"run {label} ({run.setting}-{run.mode} {run.split}) "
                            f"is stored already, made by {stored.backend}: import this log "
                            "as another run with --variant NAME")
    old = without_credentials(stored.config or {})
    changed = [key for key in HARNESS_IDENTITY if old.get(key) != row["config"].get(key)]
    if changed:
        listed = ", ".join(f"{key} {old.get(key)!r} -> {row['config'].get(key)!r}"
                           for key in changed)
        raise DataFileError(run.source, f"run {label} ({run.setting}-{run.mode} {run.split}) "
                            f"is stored with another setup ({listed}): import this log as "
                            "another run with --variant NAME")


def _checked_key(run: HarnessRun, variant: str) -> tuple[str, str]:
    """The run's model name and variant through the gate; its split, setting, mode and
    language known."""
    for name, value, allowed in (("split", run.split, SPLITS), ("setting", run.setting,
                                 SETTINGS), ("mode", run.mode, MODES),
                                 ("language", run.language, LANGUAGES)):
        if value not in allowed:
            raise DataFileError(run.source, f"{name} {value!r} is not one of "
                                f"{', '.join(allowed)}")
    refused = REFUSED_PAIRS.get((run.setting, run.mode))
    if refused is not None:
        raise DataFileError(run.source, f"a {run.setting}-{run.mode} run: {refused}, so "
                            "generate refuses it and so does import")
    checked = records.validate(records.RUN, {"model": run.model, "seed": 0, "variant": variant},
                               path=run.source, labels={"model": "model name"})
    return str(checked["model"]), str(checked["variant"])


def _question_ids(session: Session, run: HarnessRun) -> dict[tuple[str, int], int]:
    """(meeting, number) -> question id of every answer; an answer naming no stored question
    of the run's split is refused."""
    known = bq.question_ids(session=session)
    meetings = sorted({a.meeting for a in run.answers})
    splits = keyed.stored_rows(session=session, table=Meeting, keys=["external_id"],
                               columns=["split"], where={"external_id": meetings})
    for meeting in meetings:
        row = splits.get((meeting,))
        refuse_other_split(run.source, meeting, row["split"] if row else None, run.split)
    found = {}
    for a in run.answers:
        if (a.meeting, a.number) not in known:
            raise DataFileError(run.source, f"sample {a.sample} names meeting {a.meeting!r} "
                                f"question {a.number}, which is not an ELITR-Bench question "
                                "stored here (import the benchmark first: init)")
        found[(a.meeting, a.number)] = known[(a.meeting, a.number)]
    return found


def _store_scores(session: Session, run: HarnessRun, run_id: int,
                  questions: dict[tuple[str, int], int], guard: Guard,
                  report: ImportReport, variant: str) -> None:
    """The scorers' scores as evaluators' scores of the run's responses; a scorer whose
    evaluator holds another setup's scores is refused, or with ``variant`` gets its own
    evaluator ``<slug>~<variant>``."""
    response_ids = pq.response_ids(session=session,
                                   pairs=[(run_id, qid) for qid in questions.values()])
    rows, names = [], []
    for name, values in run.scores.items():
        identity = run.identities[name]
        slug = records.validate(records.EVALUATOR_SLUG, evaluator_slug(run.backend, name,
                                                                       identity),
                                path=run.source, what=f"the evaluator of scorer {name}")
        refuse_non_finite(identity, path=run.source, what=f"scorer {name}'s grader settings")
        kind, description = run.evaluators[name]
        try:
            try:
                evaluator = evaluator_for(session=session, slug=slug, kind=kind,
                                          source=run.backend, description=description[:512],
                                          identity=identity)
            except OtherSetup:
                if not variant:
                    raise
                slug = records.validate(records.EVALUATOR_SLUG, f"{slug}~{variant}",
                                        path=run.source, what=f"the evaluator of {name}")
                evaluator = evaluator_for(session=session, slug=slug, kind=kind,
                                          source=run.backend, description=description[:512],
                                          identity=identity)
        except UserError as exc:
            raise DataFileError(run.source, str(exc)) from None
        for meeting, number, value in values:
            response = response_ids[(run_id, questions[(meeting, number)])]
            rows.append(score_row(response_id=response, evaluator_id=evaluator,
                                  value=value))
            names.append(f"the {slug} score of meeting {meeting} question {number}")
    guard_scores(session, guard, path=run.source, rows=rows, describe=names.__getitem__)
    unique = {tuple(row[k] for k in SCORE_KEY): row for row in rows}
    upsert_scores(session=session, rows=list(unique.values()))
    report.counts["scores"] += len(unique)
