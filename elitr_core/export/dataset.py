"""``export dataset DIR``: the human and judge scores as a dataset a paper can cite.

Four Parquet files (``scores``, ``responses``, ``questions``, ``studies``; typed by their
declared schemas, ``export/schema.py``: ``created_at`` a UTC timestamp) and a dataset card,
``README.md``, whose YAML header the Hugging Face Hub reads (licence, one config per file
with its features), so that ``datasets.load_dataset(DIR)`` opens the folder as it is and the
Hub shows it.

Annotators are pseudonymised: each annotator (by id, never by name, so two people of one
name in two pools stay two) becomes ``annotator-N`` in the order the annotators were added to
the database, so a Prolific id (stored as the name ``prolific-<PID>`` and in
``Annotator.external_id``), a name given by a researcher, a token or a completion code never
leaves the database. The ``scores`` file is the ``scores`` export with that one change and a
``response_key`` first, which ``responses`` holds too: a stable key of the response (a hash of
its run's whole key, meeting and question; no database id), so the two join on one non-null
column (``seed`` is null in the release, and NULL never equals NULL in SQL).

The reference answers of summary questions are the ELITR Minuting Corpus's minutes, which the
benchmark's licence does not cover: they are left out (null) unless ``include_minutes``, and
the card then names the corpus and its own licence.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
from sqlmodel import Session

from db.runs import ScoreFilter
from elitr_core.errors import UserError
from elitr_core.export.schema import DATASET_COLUMNS

#: The Parquet files of the dataset, in the card's order (``scores`` is the default config).
FILES: tuple[str, ...] = ("scores", "responses", "questions", "studies")
RESPONSE_COLUMNS = DATASET_COLUMNS["dataset/responses"]
QUESTION_COLUMNS = DATASET_COLUMNS["dataset/questions"]
STUDY_COLUMNS = DATASET_COLUMNS["dataset/studies"]
_DESCRIBED = {
    "scores": "one score per row: a response (its `response_key`; meeting, question, run) "
              "scored by an evaluator (a human pool, an LLM judge or a metric), with the "
              "annotator's pseudonym for individual human scores",
    "responses": "the answers that were scored, with the run that made them; `response_key` "
                 "joins them to `scores`",
    "questions": "the ELITR-Bench questions, their Conv phrasing and reference answers",
    "studies": "the human scoring studies: design, status, items and annotators",
}


def pseudonyms(ids: list[int]) -> dict[int, str]:
    """``annotator-N`` for each annotator id, numbered in the given order (1, 2, ...
    zero-padded to the count's width so that the pseudonyms sort like their numbers)."""
    width = max(3, len(str(len(ids))))
    return {i: f"annotator-{n:0{width}d}" for n, i in enumerate(ids, 1)}


def response_key(run: tuple[Any, ...], meeting: str, number: int) -> str:
    """A response's stable key: 16 hex digits of the SHA-256 of its run's whole key (model,
    setting, mode, split, seed, variant, language), meeting and question number, so it is
    the same in every database holding that response and never null."""
    text = json.dumps([*run, meeting, int(number)], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def run_keys(session: Session) -> dict[int, tuple[Any, ...]]:
    """Run id -> the run's whole key (model, setting, mode, split, seed, variant, language),
    what :func:`response_key` hashes, of every stored run."""
    from db.runs import run_list

    return {int(run.id): (run.model, run.setting, run.mode, run.split, run.seed, run.variant,
                          run.language)
            for run in run_list(session=session, include_imported=True) if run.id is not None}


def response_keys(frame: pd.DataFrame, runs: dict[int, tuple[Any, ...]]) -> list[str]:
    """The :func:`response_key` of each row of ``frame`` (columns ``run_id``, ``meeting``,
    ``question_id``)."""
    return [response_key(runs[int(run)], meeting, number) for run, meeting, number in
            zip(frame["run_id"], frame["meeting"], frame["question_id"], strict=True)]


def dataset_tables(session: Session, flt: ScoreFilter | None = None, *,
                   include_minutes: bool = False) -> dict[str, pd.DataFrame]:
    """The four tables of the dataset (annotators pseudonymised; the minutes, reference
    answers of summary questions, only with ``include_minutes``)."""
    from db import benchmark as bq
    from db import studies as sq
    from db.evaluators import annotator_id_order
    from elitr_core.data.browse import response_rows
    from elitr_core.data.scores import scores_table
    from elitr_core.data.summaries import SUMMARY_TYPE

    flt = flt or ScoreFilter()
    runs = run_keys(session)
    scores = scores_table(session, flt, ids=True)
    names = pseudonyms(annotator_id_order(session=session))
    scores["annotator"] = [None if pd.isna(a) else names[int(a)] for a in scores["annotator_id"]]
    scores.insert(0, "response_key", response_keys(scores, runs))
    scores = scores.drop(columns=["run_id", "annotator_id"])
    responses = pd.DataFrame(response_rows(session, flt, ids=True))
    responses = responses.reindex(columns=[*RESPONSE_COLUMNS[1:], "run_id"])
    responses.insert(0, "response_key", response_keys(responses, runs))
    responses = responses[list(RESPONSE_COLUMNS)]
    responses["seed"] = responses["seed"].astype("Int64")
    questions = pd.DataFrame(bq.question_rows(session=session), columns=[*QUESTION_COLUMNS])
    if not include_minutes:  # the corpus's minutes, not the benchmark's data
        questions["reference"] = questions["reference"].where(
            questions["question_type"] != SUMMARY_TYPE, None)
    studies = pd.DataFrame(sq.study_rows(session=session), columns=[*STUDY_COLUMNS])
    studies["created_at"] = [pd.Timestamp(t).isoformat() if t is not None else None
                             for t in studies["created_at"]]
    for column in ("per_item", "items", "annotators"):
        studies[column] = studies[column].astype("int64")
    studies["attention_rate"] = studies["attention_rate"].astype("float64")
    return {"scores": scores, "responses": responses, "questions": questions,
            "studies": studies}


def dataset_files(tables: dict[str, pd.DataFrame], *, include_minutes: bool = False
                  ) -> dict[str, bytes]:
    """The dataset's files, name -> bytes: the Parquet files of the tables with rows and the
    card, ``README.md``; what ``export dataset DIR`` writes and the page's zip holds."""
    from elitr_core.export.formats import to_parquet
    from elitr_core.export.schema import typed_table

    if tables["scores"].empty:
        raise UserError("no score matches the filters: nothing to share")
    # a table without rows is left out: datasets' Parquet reader fails on a file of no rows
    names = [name for name in FILES if not tables[name].empty]
    out = {f"{name}.parquet": to_parquet(tables[name], f"dataset/{name}") for name in names}
    out["README.md"] = dataset_card({name: typed_table(tables[name], f"dataset/{name}")
                                     for name in names},
                                    minutes=include_minutes).encode("utf-8")
    return out


def write_dataset(tables: dict[str, pd.DataFrame], folder: str, *,
                  include_minutes: bool = False) -> list[Path]:
    """Write the Parquet files (of the tables with rows) and the card into ``folder`` (new,
    or empty), whole or not at all (:func:`write_folder`)."""
    if tables["scores"].empty:
        raise UserError("no score matches the filters: nothing to share")
    return write_folder(folder, lambda: dataset_files(tables, include_minutes=include_minutes),
                        what="the dataset")


def dataset_zip(session: Session) -> bytes:
    """The dataset of the whole database (``export dataset DIR`` without filters) as a ZIP:
    its files, the folder's names and bytes, at the archive's top level; each member dated
    1980-01-01 so the same database gives the same ZIP."""
    import io
    import zipfile

    files = dataset_files(dataset_tables(session))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    return buffer.getvalue()


def write_folder(folder: str, files: Callable[[], dict[str, bytes]], *, what: str
                 ) -> list[Path]:
    """Write ``files()`` (name -> bytes) into ``folder`` (new, or empty), whole or not at
    all: into a temporary folder beside it, renamed into place at the end; the files
    written."""
    target = Path(folder).absolute()
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise UserError(f"{folder} exists and is not an empty folder: give a new folder for "
                        f"{what}")
    if not target.parent.is_dir():
        raise UserError(f"{target.parent} does not exist: create it first")
    partial = Path(tempfile.mkdtemp(prefix=".export-", dir=target.parent))
    umask = os.umask(0o022)
    os.umask(umask)
    try:
        partial.chmod(0o777 & ~umask)  # as mkdir would make it, not mkdtemp's 0700
        for name, data in files().items():
            (partial / name).write_bytes(data)
        if target.exists():
            target.rmdir()
        os.replace(partial, target)
    except OSError as exc:
        shutil.rmtree(partial, ignore_errors=True)
        raise UserError(f"cannot write {what} to {folder}: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return sorted(target.iterdir())


def dataset_card(schemas: dict[str, object], *, minutes: bool = False) -> str:
    """The README.md of the dataset: YAML header (licence, task and size categories,
    configs, features; huggingface_hub's card classes) and text;
    with ``minutes``, the corpus whose minutes it holds and that corpus's licence."""
    from elitr_core.export.dataset_card import card_text

    return card_text(schemas, _DESCRIBED, minutes=minutes)
