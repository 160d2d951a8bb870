"""Label Studio, out: ``export label-studio DIR`` writes the responses to score as Label
Studio tasks and a labelling config with the benchmark's 10-point rubric.

The tasks are blind, as the annotation page is: each shows the question (its Conv phrasing in
the conv setting), the reference answer and the response, and holds the response's
``response_key`` (``export/dataset.response_key``: a hash of its run's whole key, meeting and
question), its meeting and question number; no model name, run, setting or score. They are in
``response_key`` order, so no model's answers come in a block. The config
(:func:`label_config`) asks the rubric's question, one choice per score 1..10 with its level's
text (the choice's ``alias`` is the bare number, what Label Studio's export then holds) and
an optional comment.

The evaluator the annotations come back as (``label_studio_import``) is named by the project:
``label-studio:<project>``, stored in every task's ``meta`` and ``data``.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlmodel import Session

from db.runs import ScoreFilter
from elitr_core.errors import UserError
from elitr_core.vocab import SCORE_MAX, SCORE_MIN

if TYPE_CHECKING:  # pandas is imported where a table is built: `import` (which reads a
    # Label Studio export) must not pay pandas' ~100 MB (tests/.../test_refusal_memory.py)
    import pandas as pd

#: The evaluators' namespace (``db/evaluators.NAMESPACES``) and source of imported annotations.
NAMESPACE = "label-studio"
TASKS_FILE, CONFIG_FILE = "tasks.json", "config.xml"
TABLE = "label-studio/tasks"
#: The config's control names, which Label Studio's export names in each result.
SCORE_CONTROL, COMMENT_CONTROL, RESPONSE_OBJECT = "score", "comment", "response"
#: The task field naming the project (the evaluator ``label-studio:<project>``).
PROJECT_FIELD = "elitr_project"
#: Longest project name: ``label-studio:`` and it fit an evaluator slug (64 characters).
MAX_PROJECT = 64 - len(NAMESPACE) - 1


def evaluator_slug(project: str) -> str:
    """The evaluator that a project's annotations are stored under."""
    return f"{NAMESPACE}:{project}"


def checked_project(name: str) -> str:
    """A project name usable in an evaluator slug, or one line saying why not."""
    from elitr_core.data import records

    name = name.strip()
    if not name or len(name) > MAX_PROJECT:
        raise UserError(f"a Label Studio project name is 1 to {MAX_PROJECT} characters, not "
                        f"{len(name)}: give --project NAME")
    records.validate(records.EVALUATOR_SLUG, evaluator_slug(name), path="--project",
                     what="the project's evaluator name")
    return name


def label_config() -> str:
    """The labelling config: the question, reference and response as plain text (Label
    Studio's ``Text``, never HTML), the rubric's question, a required choice of one score
    (keys 1-9, 0 = 10) with the meaning of its level, and an optional comment."""
    from elitr_core.annotation.guidelines import rubric_criterion, score_meaning

    view = ET.Element("View")
    for title, name in (("Question", "question"), ("Reference answer", "reference"),
                        ("Response to evaluate", RESPONSE_OBJECT)):
        ET.SubElement(view, "Header", value=title, size="5")
        ET.SubElement(view, "Text", name=name, value=f"${name}", selectionEnabled="false")
    ET.SubElement(view, "Header", value=rubric_criterion(), size="5")
    choices = ET.SubElement(view, "Choices", name=SCORE_CONTROL, toName=RESPONSE_OBJECT,
                            choice="single-radio", required="true",
                            requiredMessage="Pick a score from 1 to 10")
    for value in range(round(SCORE_MIN), round(SCORE_MAX) + 1):
        ET.SubElement(choices, "Choice", value=f"{value}: {score_meaning(value)}",
                      alias=str(value), hotkey=str(value % 10))
    ET.SubElement(view, "TextArea", name=COMMENT_CONTROL, toName=RESPONSE_OBJECT,
                  placeholder="Comment (optional)", maxSubmissions="1", editable="true",
                  rows="2")
    ET.indent(view)
    return ET.tostring(view, encoding="unicode") + "\n"


def task_table(session: Session, flt: ScoreFilter | None = None) -> pd.DataFrame:
    """One row per response to score (:data:`~elitr_core.export.schema.LABEL_STUDIO_COLUMNS`),
    in ``response_key`` order; summary questions are left out (the rubric scores answers)."""
    from elitr_core.data.browse import response_rows
    from elitr_core.data.summaries import SUMMARY_TYPE
    from elitr_core.export.dataset import response_keys, run_keys
    from elitr_core.export.schema import declared_schema

    columns = declared_schema(TABLE).names
    rows = [row for row in response_rows(session, flt or ScoreFilter(), ids=True)
            if row["question_type"] != SUMMARY_TYPE]
    import pandas as pd

    frame = pd.DataFrame(rows, columns=[*columns[1:], "run_id"])
    frame.insert(0, "response_key", response_keys(frame, run_keys(session)))
    return frame[columns].sort_values("response_key", kind="stable").reset_index(drop=True)


def tasks(frame: pd.DataFrame, project: str) -> list[dict[str, Any]]:
    """The Label Studio tasks of :func:`task_table` (typed by its declared schema)."""
    from elitr_core.export.schema import typed_table

    out = []
    for row in typed_table(frame, TABLE).to_pylist():
        out.append({"data": {**row, PROJECT_FIELD: project},
                    "meta": {PROJECT_FIELD: project, "response_key": row["response_key"]}})
    return out


def write_label_studio(frame: pd.DataFrame, folder: str, project: str) -> list[Path]:
    """``tasks.json`` and ``config.xml`` written into ``folder`` (new or empty), whole or not
    at all."""
    from elitr_core.export.dataset import write_folder

    if frame.empty:
        raise UserError("no response matches the filters: no task to write")

    def files() -> dict[str, bytes]:
        text = json.dumps(tasks(frame, project), ensure_ascii=False, indent=1)
        return {TASKS_FILE: (text + "\n").encode("utf-8"),
                CONFIG_FILE: label_config().encode("utf-8")}

    return write_folder(folder, files, what="the Label Studio tasks")
