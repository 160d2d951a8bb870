"""``export runs``: one row a run, saying what made its answers.

Every run of the database (generated, imported from a harness's log, or from the release)
with its key, its backend and every answer-shaping option it recorded, the prompt hash, the
decoding, the prompt options, the library versions, its token usage, its status and where it
came from. Object-valued cells (options, versions) are JSON texts with sorted keys, so every
format (CSV, JSON, LaTeX, Parquet) holds the same text. Configs pass
:func:`~elitr_core.data.credentials.without_credentials` on the way out, so a row stored
before credentials were stripped at store time never exports one.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
from sqlmodel import Session

from db.models import NO_SEED, Run
from db.runs import ScoreFilter, filtered_runs
from elitr_core.data.credentials import without_credentials
from elitr_core.errors import UserError
from elitr_core.vocab import EXPORT_COLUMNS

#: Where a harness keeps its decoding settings, and their names there.
_HARNESS_DECODING = {"temperature": ("temperature",), "top_p": ("top_p",),
                     "max_new_tokens": ("max_tokens", "max_gen_toks", "max_new_tokens"),
                     "repetition_penalty": ("repetition_penalty",)}
_HARNESS_PROMPT = ("task", "task_version", "task_args", "chat_template_sha",
                   "system_instruction", "generation_kwargs")
_PROMPT_OPTIONS = ("chat_template", "system_prompt", "qa_markers", "length_instruction",
                   "truncation", "context", "task", "interleave")


def runs_table(session: Session, flt: ScoreFilter | None = None) -> pd.DataFrame:
    """The ``runs`` table (columns ``EXPORT_COLUMNS["runs"]``), runs in id order, narrowed by
    the run filters of ``flt`` (split, setting, mode, models by name or label)."""
    from db.runs import metas_by_run
    from elitr_core.passes.records import usage_totals

    runs = filtered_runs(session, flt)
    metas = metas_by_run(session=session, run_ids=[r.id for r in runs if r.id is not None])
    rows = []
    for run in runs:
        assert run.id is not None
        rows.append({**_key(run), **_made(run), "responses": len(metas[run.id]),
                     **usage_totals(metas[run.id]), "status": run.status})
    frame = pd.DataFrame(rows, columns=list(EXPORT_COLUMNS["runs"]))
    for column in ("run", "responses", "prompt_tokens", "completion_tokens", "cached_tokens"):
        frame[column] = frame[column].astype("int64")
    for column in ("seed", "max_new_tokens", "config_schema"):
        frame[column] = frame[column].astype("Int64")
    for column in ("temperature", "top_p", "repetition_penalty"):
        frame[column] = frame[column].astype("float64")
    return frame


def fillers_table(session: Session, flt: ScoreFilter | None = None) -> pd.DataFrame:
    """The ``fillers`` table: every stored reply of an answered filler
    (``generate --interleave K --answered-filler``) with its run, the question, the right
    sums, the reply, the sums right in place of those asked and ``followed`` (all right); the
    runs narrowed as in :func:`runs_table`. The replies are never scored or counted as
    answers: this is where a researcher sees whether the model followed its distraction."""
    from db.fillers import filler_rows

    kept = [r.id for r in filtered_runs(session, flt) if r.id is not None]
    frame = pd.DataFrame(filler_rows(session=session, runs=kept),
                         columns=list(EXPORT_COLUMNS["fillers"]))
    for column in ("run", "conversation", "turn", "gap", "correct", "total"):
        frame[column] = frame[column].astype("int64")
    frame["seed"] = frame["seed"].where(frame["seed"] != NO_SEED).astype("Int64")
    frame["followed"] = frame["followed"].astype("bool")
    return frame


def _key(run: Run) -> dict[str, Any]:
    return {"run": run.id, "model": run.model, "variant": run.variant, "setting": run.setting,
            "mode": run.mode, "split": run.split,
            "seed": None if run.seed == NO_SEED else run.seed, "language": run.language,
            "backend": run.backend}


def _made(run: Run) -> dict[str, Any]:
    """What made the run's answers, from its config (credentials left out)."""
    config: dict[str, Any] = without_credentials(dict(run.config or {}))
    if config.get("kind") == "generation":
        return _generated(config)
    if "model_args" in config or "generate_config" in config or "gen_kwargs" in config:
        return _harness(run, config)
    return {"backend_options": None, "prompt_hash": None, "temperature": None, "top_p": None,
            "repetition_penalty": None, "max_new_tokens": None, "prompt_options": None,
            "versions": None, "source": _source(run, config), "config_schema": None}


def _generated(config: dict[str, Any]) -> dict[str, Any]:
    from elitr_core.generation.run_config import GenerationConfig

    try:
        read = GenerationConfig.read(config)
    except UserError:  # a newer schema: what this version can say, as stored
        read = GenerationConfig.model_construct(**config)
    decoding = read.decoding or {}
    return {"backend_options": _text(read.backend_options), "prompt_hash": read.prompt_hash,
            "temperature": decoding.get("temperature"), "top_p": decoding.get("top_p"),
            "repetition_penalty": decoding.get("repetition_penalty"),
            "max_new_tokens": decoding.get("max_new_tokens"),
            "prompt_options": _text({k: getattr(read, k, None) for k in _PROMPT_OPTIONS}),
            "versions": _text(read.versions or None), "source": "generate",
            "config_schema": int(config.get("schema_version") or 1)}


def _harness(run: Run, config: dict[str, Any]) -> dict[str, Any]:
    settings = {**(config.get("gen_kwargs") or {}), **(config.get("generate_config") or {})}
    decoding = {column: next((settings[k] for k in names if _number(settings.get(k))), None)
                for column, names in _HARNESS_DECODING.items()}
    versions = {name: config.get(key) for name, key in (
        ("inspect_ai", "inspect_version"), ("lm_eval", "lm_eval_version"),
        ("transformers", "transformers_version")) if config.get(key)}
    return {"backend_options": _text({"model": config.get("model"),
                                      "model_args": config.get("model_args")}),
            "prompt_hash": None, **decoding,
            "prompt_options": _text({k: config[k] for k in _HARNESS_PROMPT if k in config}),
            "versions": _text(versions or None), "source": _source(run, config),
            "config_schema": None}


def _source(run: Run, config: dict[str, Any]) -> str | None:
    """Where the run came from: its harness or the release, and the file."""
    found = [str(part) for part in (config.get("source"), run.source or config.get("file"))
             if part]
    return ": ".join(dict.fromkeys(found)) or None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _text(value: Any) -> str | None:
    """A JSON text with sorted keys (``None`` stays null)."""
    return None if value is None else json.dumps(value, sort_keys=True, ensure_ascii=False)
