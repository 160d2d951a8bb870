"""Label Studio, back in: a project's JSON export (Label Studio's "JSON" format: a list of
tasks, each with its ``data`` and ``annotations``) imported as the human evaluator
``label-studio:<project>`` of its own namespace and source (``db/evaluators.evaluator_for``:
no other source writes under that name, and a Label Studio export never writes under another
source's evaluator).

Only projects made from ``export label-studio`` are read: every task carries the
``response_key`` of a stored response, its meeting and question, the response text as exported
and the project's name (``label_studio``). Each submitted annotation is one score of its
response (the chosen score's alias, 1..10; the comment in ``Score.raw``, the annotator's time
on it, Label Studio's ``lead_time``, in ``seconds_spent``) by its annotator. Annotators are
pseudonymised as ``export dataset`` does: the first time a Label Studio user is seen under an
evaluator they become ``annotator-NNN`` (numbered in the order of their Label Studio user ids),
their user id kept as the annotator's ``external_id`` so a later export of the same project
maps them to the same pseudonym; no e-mail or user name is read.

Nothing last-wins: a task id, a response given by two tasks, or a user's second annotation of
a task is refused naming both places (``data/strict``), as are tasks of two projects, a task
whose ids or response differ from what is stored, a result of a control the exported config
does not have, and a stored score the file would change (unless ``--replace``,
``overwrite.Guard``). A skipped (cancelled) annotation is listed as left out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlmodel import Session

from db import keyed
from db import responses as pq
from db.evaluators import (
    OtherSetup,
    add_annotator,
    annotator_by_external_id,
    annotator_count,
    evaluator_for,
)
from db.models import Score
from db.scores import SCORE_KEY, score_row
from elitr_core.data import records
from elitr_core.data.bounded import open_regular, read_bytes
from elitr_core.data.overwrite import Guard, guard_scores
from elitr_core.data.report import ImportReport
from elitr_core.data.strict import id_number, loads, refuse_duplicates
from elitr_core.errors import DataFileError, UserError
from elitr_core.integrations.label_studio import (
    COMMENT_CONTROL,
    NAMESPACE,
    PROJECT_FIELD,
    SCORE_CONTROL,
    evaluator_slug,
)
from elitr_core.vocab import SCORE_MAX, SCORE_MIN

_NOT_EXPORT = ("is not a Label Studio JSON export (a list of tasks, each with its data and "
               "annotations): export the project as JSON, not JSON-MIN or CSV")
_NOT_OURS = ("was not made by `export label-studio` (its data has no {field}): import only "
             "projects whose tasks came from the tasks.json it writes")


@dataclass(frozen=True)
class Annotation:
    """One submitted annotation: its task, the Label Studio user, the score and comment."""

    task: int
    annotation: int
    user: int
    value: int
    comment: str | None
    seconds: float | None


@dataclass
class Export:
    """What a Label Studio export holds: its project, the tasks' responses and annotations."""

    path: Path
    project: str = ""
    label_studio_project: int | None = None
    #: task id -> (response_key, meeting, question number, response text)
    tasks: dict[int, tuple[str, str, int, str]] = field(default_factory=dict)
    annotations: list[Annotation] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def is_label_studio_export(path: Path) -> bool:
    """Whether ``import`` reads ``path`` as a Label Studio export: a ``.json`` file whose
    JSON is a list (an ELITR-Bench file is an object), not named as an ELITR-Bench file (one so
    named is read as one, and refused in its own words when it holds a list)."""
    if path.suffix.lower() != ".json" or path.name.lower().startswith("elitr-bench-"):
        return False
    try:
        with open_regular(path) as handle:
            head = handle.read(4096)
    except (DataFileError, OSError):
        return False  # read (and refused, in one line) as an ELITR-Bench file
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"[")


def read_export(path: Path) -> Export:
    """The tasks and annotations of a Label Studio JSON export (refused in one line when it
    is none, or not of a project made by ``export label-studio``)."""
    content = loads(read_bytes(path), where=path)
    if not isinstance(content, list) or not content:
        raise DataFileError(path, "holds no task: export a project that has tasks"
                            if isinstance(content, list) else _NOT_EXPORT)
    export = Export(path)
    projects: set[str] = set()
    ids = []
    for index, task in enumerate(content):
        task_id = id_number(task.get("id")) if isinstance(task, dict) else None
        if task_id is None or not isinstance(task.get("data"), dict) \
                or not isinstance(task.get("annotations"), list):
            raise DataFileError(path, f"entry {index + 1} {_NOT_EXPORT}")
        ids.append(task_id)
        projects.add(_read_task(export, task_id, task["data"], task.get("meta")))
        export.label_studio_project = id_number(task.get("project"))
        for annotation in task["annotations"]:
            _read_annotation(export, task_id, annotation)
    if len(projects) > 1:
        raise DataFileError(path, f"holds the tasks of {len(projects)} projects ("
                            f"{', '.join(sorted(projects))}): export each project apart")
    export.project = projects.pop()
    refuse_duplicates(((t, f"entry {n}") for n, t in enumerate(ids, 1)), path=path,
                      describe=lambda t: f"task {t}")
    refuse_duplicates(((key, f"task {t}") for t, (key, *_) in export.tasks.items()),
                      path=path, describe=lambda key: f"the response {key} (tasks.json "
                      "imported twice into the project?)")
    refuse_duplicates((((a.task, a.user), f"annotation {a.annotation}")
                       for a in export.annotations), path=path,
                      describe=lambda key: f"an annotation of task {key[0]} by one user")
    return export


def _read_task(export: Export, task_id: int, data: dict[str, Any], meta: Any) -> str:
    """Record one task's response; its project's name."""
    where = f"task {task_id}"
    for name, kind in (("response_key", str), ("meeting", str), ("question_id", int),
                       ("response", str), (PROJECT_FIELD, str)):
        if not isinstance(data.get(name), kind) or isinstance(data.get(name), bool):
            raise DataFileError(export.path, f"{where} " + _NOT_OURS.format(field=name))
    number = id_number(data["question_id"])
    if number is None:
        raise DataFileError(export.path, f"{where}: question_id {data['question_id']!r} is "
                            "not a question number")
    if isinstance(meta, dict) and meta.get("response_key", data["response_key"]) \
            != data["response_key"]:
        raise DataFileError(export.path, f"{where}: its data and meta name two responses "
                            f"({data['response_key']}, {meta['response_key']}): the task was "
                            "edited; export the tasks again")
    export.tasks.setdefault(task_id, (data["response_key"], data["meeting"], number,
                                      data["response"]))
    return str(data[PROJECT_FIELD])


def _read_annotation(export: Export, task_id: int, raw: Any) -> None:
    """Record one annotation of a task (a cancelled one as left out)."""
    annotation = id_number(raw.get("id")) if isinstance(raw, dict) else None
    if annotation is None:
        raise DataFileError(export.path, f"task {task_id}: an annotation {_NOT_EXPORT}")
    where = f"task {task_id} annotation {annotation}"
    user = raw.get("completed_by")
    user = id_number(user.get("id") if isinstance(user, dict) else user)
    if user is None:
        raise DataFileError(export.path, f"{where} names no annotator (completed_by): "
                            "export the project again from Label Studio")
    if raw.get("was_cancelled") is True:
        export.skipped.append(f"{export.path}: {where} was skipped by its annotator: no score")
        return
    value, comment = None, None
    for result in raw.get("result") or []:
        name = result.get("from_name") if isinstance(result, dict) else None
        given = result.get("value") if isinstance(result, dict) else None
        if name == SCORE_CONTROL and isinstance(given, dict) and value is None:
            value = _score(export.path, where, given.get("choices"))
        elif name == COMMENT_CONTROL and isinstance(given, dict) and comment is None:
            texts = given.get("text")
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                raise DataFileError(export.path, f"{where}: its comment is not text")
            comment = records.check_options(records.COMMENT, "\n".join(texts),
                                            what=f"the comment of {where}") or None
        else:
            raise DataFileError(export.path, f"{where} holds a result of {name!r} "
                                f"{'twice' if name in (SCORE_CONTROL, COMMENT_CONTROL) else ''}"
                                " that the exported config does not ask: label with the "
                                "config.xml of `export label-studio`")
    if value is None:
        raise DataFileError(export.path, f"{where} holds no score: submit it with a score, "
                            "or skip the task, and export again")
    seconds = raw.get("lead_time")
    if not (isinstance(seconds, int | float) and not isinstance(seconds, bool)
            and math.isfinite(seconds) and seconds >= 0):
        seconds = None
    export.annotations.append(Annotation(task_id, annotation, user, value, comment, seconds))


def _score(path: Path, where: str, choices: Any) -> int:
    if isinstance(choices, list) and len(choices) == 1:
        value = id_number(choices[0])
        if value is not None and SCORE_MIN <= value <= SCORE_MAX:
            return value
    raise DataFileError(path, f"{where}: its score {choices!r} is not one of the config's "
                        f"choices {SCORE_MIN:.0f}..{SCORE_MAX:.0f}: label with the config.xml "
                        "of `export label-studio`")


def import_label_studio_paths(session: Session, paths: list[Path], report: ImportReport, *,
                              replace: bool = False, variant: str = "") -> list[str]:
    """Read and store every Label Studio export of ``paths``; the lines of what was left
    out (skipped tasks)."""
    guard = Guard(replace, report)
    skipped: list[str] = []
    for path in paths:
        export = read_export(path)
        store_export(session, export, report, guard, variant=variant)
        report.files.append(path.name)
        skipped += export.skipped
    return skipped


def store_export(session: Session, export: Export, report: ImportReport, guard: Guard, *,
                 variant: str = "") -> int:
    """Store an export's annotations as scores of its evaluator; the evaluator's id."""
    evaluator = _evaluator(session, export, variant)
    responses = _responses(session, export)
    annotators = _pseudonyms(session, evaluator, sorted({a.user for a in export.annotations}))
    rows = [{**score_row(response_id=responses[a.task], evaluator_id=evaluator,
                         annotator_id=annotators[a.user], value=a.value),
             "raw": a.comment, "seconds_spent": a.seconds} for a in export.annotations]
    guard_scores(session, guard, path=export.path, rows=rows,
                 describe=lambda i: f"the score of task {export.annotations[i].task} "
                 f"annotation {export.annotations[i].annotation}")
    keyed.upsert(session=session, table=Score, rows=rows, keys=SCORE_KEY,
                 update=["value", "status", "raw", "seconds_spent"])
    report.counts["scores"] += len(rows)
    return evaluator


def _evaluator(session: Session, export: Export, variant: str) -> int:
    """The project's evaluator (``label-studio:<project>``, with ``variant``
    ``label-studio:<project>~<variant>``); a second Label Studio project under one name is
    refused unless imported as a variant."""
    slug = evaluator_slug(export.project) + (f"~{variant}" if variant else "")
    slug = records.validate(records.EVALUATOR_SLUG, slug, path=export.path,
                            what="the project's evaluator")
    identity = {"project": export.project,
                "label_studio_project": export.label_studio_project}
    description = (f"Label Studio project {export.project!r} (its project "
                   f"{export.label_studio_project}), annotators pseudonymised")
    try:
        return evaluator_for(session=session, slug=slug, kind="human", source=NAMESPACE,
                             description=description[:512], identity=identity)
    except OtherSetup as exc:
        raise DataFileError(export.path, f"{exc} (another Label Studio project exported "
                            "under the same name)") from None
    except UserError as exc:
        raise DataFileError(export.path, str(exc)) from None


def _responses(session: Session, export: Export) -> dict[int, int]:
    """Task id -> stored response id; a task naming no stored response, or naming it with
    another meeting, question or text, is refused."""
    from elitr_core.export.dataset import response_key, run_keys

    runs = run_keys(session)
    stored = {response_key(runs[run], meeting, number): (rid, meeting, number)
              for rid, run, meeting, number in pq.response_index(session=session)}
    found = {}
    for task, (key, meeting, number, _text) in export.tasks.items():
        if key not in stored:
            raise DataFileError(export.path, f"task {task} names the response {key}, which "
                                "is not stored here: import into the database the tasks "
                                "were exported from")
        rid, stored_meeting, stored_number = stored[key]
        if (stored_meeting, stored_number) != (meeting, number):
            raise DataFileError(export.path, f"task {task} names meeting {meeting} question "
                                f"{number}, but its response answers {stored_meeting} "
                                f"question {stored_number}: the task was edited")
        found[task] = rid
    texts = pq.response_texts(session=session, ids=sorted(set(found.values())))
    for task, rid in found.items():
        if texts[rid] != export.tasks[task][3]:
            raise DataFileError(export.path, f"task {task}: the response it showed is not "
                                "the one stored now (it was replaced since the export): "
                                "export the tasks again and have them scored anew")
    return found


def _pseudonyms(session: Session, evaluator: int, users: list[int]) -> dict[int, int]:
    """Label Studio user id -> annotator id of the evaluator: a user seen before keeps their
    annotator; a new one becomes ``annotator-NNN`` (numbered after the evaluator's others)."""
    out = {}
    count = annotator_count(session=session, evaluator_id=evaluator)
    for user in users:
        external = f"{NAMESPACE}-user:{user}"
        annotator = annotator_by_external_id(session=session, evaluator_id=evaluator,
                                             external_id=external)
        if annotator is None:
            count += 1
            annotator = add_annotator(session=session, evaluator_id=evaluator,
                                      name=f"annotator-{count:03d}", external_id=external)
        assert annotator.id is not None
        out[user] = annotator.id
    return out
