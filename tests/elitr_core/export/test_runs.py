"""``export runs`` (issue 39): one row a run saying what made its answers (backend and every
answer-shaping option, prompt hash, decoding, versions, usage, status, source), in every
format, with no credential even from a row stored before they were stripped; both databases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from db.engine import get_engine
from elitr_core.backends.base import DecodingConfig
from elitr_core.backends.fake import FakeBackend
from elitr_core.cli.main import main
from elitr_core.generation.runs import GenerationSpec, generate_run
from elitr_core.prompts.assembly import protocol_prompt_hash
from elitr_core.vocab import EXPORT_COLUMNS
from tests.elitr_core.generation.test_run_config import SCHEMA_1
from tests.elitr_core.run_helpers import MEETINGS, set_transcripts

OLD_HARNESS = {"source": "inspect_ai", "file": "old.eval", "inspect_version": "0.3.99",
               "task": "elitr_bench", "task_args": {"mode": "st"},
               "model_args": {"api_key": "sk-" + "k" * 30, "token": "hf_" + "t" * 24,
                              "dsn": "postgresql://me:hunter2@db/x", "temperature": 0.2},
               "generate_config": {"temperature": 0.7, "max_tokens": 64}}
SECRETS = ("kkkkkkkk", "tttttttt", "hunter2")


def typed(rows: list[dict[str, Any]]) -> list[dict[str, tuple[str, Any]]]:
    return [{k: (type(v).__name__, v) for k, v in row.items()} for row in rows]


@pytest.fixture
def url(bundled_db: str) -> str:
    """The release, a fake run of one meeting, the same run stored as schema 1 under another
    model, and a harness run whose config was stored with its credentials (an old row)."""
    set_transcripts(bundled_db, MEETINGS[:1])
    engine = get_engine(bundled_db)
    for model in ("fresh", "old"):
        generate_run(engine, GenerationSpec(model=model, setting="qa", mode="st", split="test2",
                                            meetings=MEETINGS[:1], decoding=DecodingConfig()),
                     FakeBackend())
    with engine.begin() as conn:
        conn.execute(text("UPDATE run SET config = :c WHERE model = 'old'"),
                     {"c": json.dumps(SCHEMA_1)})
        conn.execute(text("UPDATE run SET backend = 'inspect', source = 'old.eval', "
                          "config = :c WHERE model = 'GPT-4' AND setting = 'qa' AND "
                          "mode = 'st' AND split = 'test2'"), {"c": json.dumps(OLD_HARNESS)})
    return bundled_db


def _runs(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> list[dict[str, Any]]:
    assert main(["export", "runs", "--format", "json", "--db", url, *args]) == 0
    rows: list[dict[str, Any]] = json.loads(capsys.readouterr().out)
    return rows


def test_each_run_says_what_made_its_answers(url: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    rows = _runs(capsys, url)
    assert list(rows[0]) == list(EXPORT_COLUMNS["runs"])
    assert [r["run"] for r in rows] == sorted(r["run"] for r in rows)
    by_model = {(r["model"], r["setting"], r["mode"], r["split"]): r for r in rows}
    fresh, old = by_model[("fresh", "qa", "st", "test2")], by_model[("old", "qa", "st", "test2")]
    assert {k: fresh[k] for k in ("backend", "backend_options", "prompt_hash", "temperature",
                                  "top_p", "repetition_penalty", "max_new_tokens", "seed",
                                  "responses", "status", "source", "config_schema")} == {
        "backend": "fake", "backend_options": "{}", "prompt_hash": protocol_prompt_hash(),
        "temperature": 0.0, "top_p": 1.0, "repetition_penalty": 1.0, "max_new_tokens": 512,
        "seed": 2023, "responses": 12, "status": "done", "source": "generate",
        "config_schema": 2}
    assert fresh["prompt_tokens"] > 0 and fresh["completion_tokens"] > 0
    assert json.loads(fresh["prompt_options"])["qa_markers"] is False
    assert "python" in json.loads(fresh["versions"])
    assert (old["config_schema"], old["backend_options"]) == (1, "{}")  # schema 1 still reads
    harness = by_model[("GPT-4", "qa", "st", "test2")]
    assert (harness["backend"], harness["source"], harness["temperature"],
            harness["max_new_tokens"]) == ("inspect", "inspect_ai: old.eval", 0.7, 64)
    assert json.loads(harness["backend_options"]) == {
        "model": None, "model_args": {"dsn": "postgresql://me:[redacted]@db/x",
                                      "temperature": 0.2}}
    release = by_model[("LongAlpaca-7B", "qa", "mt", "dev")]
    assert release["backend"] == "import" and release["source"].startswith(
        "ELITR-Bench release: ")
    assert _runs(capsys, url, "--model", "fresh", "--split", "test2") == [fresh]


def test_every_format_and_no_credential_in_any(url: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    import pyarrow.parquet as pq

    rows = _runs(capsys, url)
    for fmt in ("csv", "json", "latex", "parquet"):
        target = tmp_path / f"runs.{fmt}"
        assert main(["export", "runs", "--format", fmt, "--out", str(target),
                     "--db", url]) == 0, fmt
        data = target.read_bytes() if fmt != "parquet" else json.dumps(  # zstd: read it
            pq.read_table(target).to_pylist()).encode()
        assert not any(secret.encode() in data for secret in SECRETS), fmt
        assert b"old.eval" in data and b"fresh" in data, fmt
    assert typed(pq.read_table(tmp_path / "runs.parquet").to_pylist()) == typed(rows)
    capsys.readouterr()
