"""``export dataset DIR``: the human and judge scores as a dataset a paper can cite.

Four Parquet files (``scores``, ``responses``, ``questions``, ``studies``; the types of the
JSON export, :func:`~elitr_core.export.formats.arrow_table`) and a dataset card, ``README.md``,
whose YAML header the Hugging Face Hub reads (licence, one config per file with its features),
so that ``datasets.load_dataset(DIR)`` opens the folder as it is and the Hub shows it.

Annotators are pseudonymised: each name becomes ``annotator-N`` in the order the annotators
were added to the database, so a Prolific id (stored as the name ``prolific-<PID>`` and in
``Annotator.external_id``), a name given by a researcher, a token or a completion code never
leaves the database. The ``scores`` file is the ``scores`` export with that one change.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pandas as pd
from sqlmodel import Session

from db.runs import ScoreFilter
from elitr_core.errors import UserError

#: The Parquet files of the dataset, in the card's order (``scores`` is the default config).
FILES: tuple[str, ...] = ("scores", "responses", "questions", "studies")
RESPONSE_COLUMNS = ("meeting", "question_id", "split", "setting", "mode", "seed", "model",
                    "response")
QUESTION_COLUMNS = ("meeting", "question_id", "split", "question_type", "answer_position",
                    "question", "question_conv", "reference")
STUDY_COLUMNS = ("study", "evaluator", "assignment", "per_item", "attention_rate", "status",
                 "created_at", "items", "annotators")
_DESCRIBED = {
    "scores": "one score per row: a response (meeting, question, run) scored by an evaluator "
              "(a human pool, an LLM judge or a metric), with the annotator's pseudonym for "
              "individual human scores",
    "responses": "the answers that were scored, with the run that made them",
    "questions": "the ELITR-Bench questions, their Conv phrasing and reference answers",
    "studies": "the human scoring studies: design, status, items and annotators",
}


def pseudonyms(names: list[str]) -> dict[str, str]:
    """``annotator-N`` for each name, numbered in the given order (1, 2, ... zero-padded to
    the count's width so that the pseudonyms sort like their numbers)."""
    width = max(3, len(str(len(names))))
    return {name: f"annotator-{i:0{width}d}" for i, name in enumerate(names, 1)}


def dataset_tables(session: Session, flt: ScoreFilter | None = None) -> dict[str, pd.DataFrame]:
    """The four tables of the dataset (annotators pseudonymised)."""
    from db import benchmark as bq
    from db import studies as sq
    from db.evaluators import annotator_names
    from elitr_core.data.browse import response_rows
    from elitr_core.data.scores import scores_table

    flt = flt or ScoreFilter()
    scores = scores_table(session, flt)
    names = pseudonyms(annotator_names(session=session))
    scores["annotator"] = scores["annotator"].map(
        lambda a: None if a is None or pd.isna(a) or a == "" else names[a])
    responses = pd.DataFrame(response_rows(session, flt), columns=[*RESPONSE_COLUMNS])
    responses["seed"] = responses["seed"].astype("Int64")
    questions = pd.DataFrame(bq.question_rows(session=session), columns=[*QUESTION_COLUMNS])
    studies = pd.DataFrame(sq.study_rows(session=session), columns=[*STUDY_COLUMNS])
    studies["created_at"] = [pd.Timestamp(t).isoformat() if t is not None else None
                             for t in studies["created_at"]]
    for column in ("per_item", "items", "annotators"):
        studies[column] = studies[column].astype("int64")
    studies["attention_rate"] = studies["attention_rate"].astype("float64")
    return {"scores": scores, "responses": responses, "questions": questions,
            "studies": studies}


def write_dataset(tables: dict[str, pd.DataFrame], folder: str) -> list[Path]:
    """Write the Parquet files (of the tables with rows) and the card into ``folder`` (new,
    or empty), whole or not at all: into a temporary folder beside it, renamed into place at
    the end."""
    from elitr_core.export.formats import arrow_table, to_parquet

    target = Path(folder).absolute()
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise UserError(f"{folder} exists and is not an empty folder: give a new folder for "
                        "the dataset")
    if not target.parent.is_dir():
        raise UserError(f"{target.parent} does not exist: create it first")
    if tables["scores"].empty:
        raise UserError("no score matches the filters: nothing to share")
    # a table without rows is left out: datasets' Parquet reader fails on a file of no rows
    names = [name for name in FILES if not tables[name].empty]
    partial = Path(tempfile.mkdtemp(prefix=".dataset-", dir=target.parent))
    umask = os.umask(0o022)
    os.umask(umask)
    try:
        partial.chmod(0o777 & ~umask)  # as mkdir would make it, not mkdtemp's 0700
        for name in names:
            (partial / f"{name}.parquet").write_bytes(to_parquet(tables[name]))
        card = dataset_card({name: arrow_table(tables[name]) for name in names})
        (partial / "README.md").write_text(card, encoding="utf-8")
        if target.exists():
            target.rmdir()
        os.replace(partial, target)
    except OSError as exc:
        shutil.rmtree(partial, ignore_errors=True)
        raise UserError(f"cannot write the dataset to {folder}: {exc.strerror or exc}") from None
    return sorted(target.iterdir())


def dataset_card(schemas: dict[str, object]) -> str:
    """The README.md of the dataset: YAML header (licence, configs, features) and text."""
    from elitr_core.export.dataset_card import card_text

    return card_text(schemas, _DESCRIBED)
