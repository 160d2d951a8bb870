"""A generation run's config: typed, versioned, and read as stored by earlier versions.

``SCHEMA_1`` is a config exactly as ``generate --backend fake`` stored it before the
backend's options were recorded (commit 73f864a): it still reads, resumes when its backend
declares no option that shapes answers, and is refused (naming what was not recorded) when
its backend declares some."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import text

from db.engine import get_engine
from elitr_core.backends import registry
from elitr_core.backends.base import DecodingConfig
from elitr_core.backends.fake import FakeBackend
from elitr_core.errors import UserError
from elitr_core.generation.run_config import SCHEMA_VERSION, GenerationConfig, RunIdentity
from elitr_core.generation.runs import GenerationSpec, generate_run
from tests.elitr_core.run_helpers import MEETINGS, rows, set_transcripts

SCHEMA_1: dict[str, Any] = json.loads(
    '{"kind": "generation", "backend_name": "fake", "decoding": {"temperature": 0.0, "top_p": '
    '1.0, "repetition_penalty": 1.0, "max_new_tokens": 512, "seed": 2023}, "chat_template": '
    'true, "system_prompt": false, "qa_markers": false, "length_instruction": false, '
    '"truncation": null, "prompt_hash": "cc9a7946ca6c", "context": null, "task": null, '
    '"interleave": null, "model": "m", "backend": {"backend": "fake", "unparsable_rate": 0.0}, '
    '"language": "en", "meetings": ["meeting_en_test2_001"], "questions": 12, "versions": '
    '{"python": "3.11.2", "elitr_core": "0.1.0", "openai": "3.54.0", "torch": "2.13.0+cpu", '
    '"transformers": "5.23.0", "tokenizers": "0.23.3"}, "process": {"pid": 20815, "host": '
    '"vm"}, "started_at": "2026-11-27T23:24:39+00:00", "finished_at": '
    '"2026-11-27T23:24:39+00:00", "altered_answers": 0}')
OVERLAP = "tests.elitr_core.passes.overlap_backend:OverlapBackend"


def spec(**changes: Any) -> GenerationSpec:
    return GenerationSpec(**{"model": "m", "setting": "qa", "mode": "st", "split": "test2",
                             "meetings": MEETINGS[:1], "decoding": DecodingConfig(), **changes})


def test_a_schema_1_config_reads_and_is_written_back_whole_as_the_current_schema() -> None:
    config = GenerationConfig.read(SCHEMA_1)
    assert (config.schema_version, config.backend_options, config.questions) == (1, {}, 12)
    assert config.backend == {"backend": "fake", "unparsable_rate": 0.0}
    stored = config.stored()
    assert stored["schema_version"] == SCHEMA_VERSION == 2
    assert {k: v for k, v in stored.items() if k not in SCHEMA_1} == {
        "schema_version": 2, "backend_options": {}, "failures": [], "interleave_plan": None}
    assert {k: stored[k] for k in SCHEMA_1} == SCHEMA_1  # nothing stored is lost
    assert GenerationConfig.read(stored) == config.model_copy(update={"schema_version": 2})


def test_a_config_of_a_newer_schema_or_of_an_imported_run_is_refused() -> None:
    with pytest.raises(UserError, match="schema 3, newer than this version reads"):
        GenerationConfig.read({**SCHEMA_1, "schema_version": 3})
    with pytest.raises(UserError, match="not made by generate"):
        GenerationConfig.read({"source": "ELITR-Bench release", "file": "x.json"})


def test_differences_name_each_field_and_each_backend_option() -> None:
    old = RunIdentity(backend_name="hf", decoding={"temperature": 0.0},
                      backend_options={"dtype": "bfloat16", "revision": None})
    new = old.model_copy(update={"backend_options": {"dtype": "float32", "revision": "v2"},
                                 "qa_markers": True})
    assert old.differences(new) == ["backend option dtype 'bfloat16' -> 'float32'",
                                    "backend option revision None -> 'v2'",
                                    "qa_markers False -> True"]
    unknown = old.model_copy(update={"backend_options": None})
    assert unknown.differences(old) == [
        "backend_options not recorded -> {'dtype': 'bfloat16', 'revision': None}"]
    assert old.differences(old) == []


def _store_schema_1(url: str, run_id: int, backend: str) -> None:
    with get_engine(url).begin() as conn:
        conn.execute(text("UPDATE run SET config = :c, backend = :b WHERE id = :r"),
                     {"c": json.dumps({**SCHEMA_1, "backend_name": backend}), "b": backend,
                      "r": run_id})


def _config(url: str, run_id: int) -> dict[str, Any]:
    (config,), = rows(url, "SELECT config FROM run WHERE id = :r", r=run_id)
    return json.loads(config) if isinstance(config, str) else dict(config)


def test_a_run_stored_with_a_schema_1_config_resumes_and_is_then_schema_2(
        bundled_db: str) -> None:
    set_transcripts(bundled_db, MEETINGS[:1])
    engine = get_engine(bundled_db)
    first = generate_run(engine, spec(), FakeBackend())
    _store_schema_1(bundled_db, first.run_id, "fake")
    again = generate_run(engine, spec(), FakeBackend())
    assert (again.run_id, again.skipped, again.written, again.status) == (
        first.run_id, 12, 0, "done")
    config = _config(bundled_db, first.run_id)
    assert (config["schema_version"], config["backend_options"]) == (2, {})
    assert config["versions"] and config["finished_at"]


def test_a_schema_1_run_of_a_backend_with_answer_shaping_options_is_not_resumed_blind(
        bundled_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its options were never recorded: resuming would mix two setups without a sound."""
    monkeypatch.setitem(registry.BACKENDS, "overlap", OVERLAP)
    set_transcripts(bundled_db, MEETINGS[:1])
    engine = get_engine(bundled_db)
    backend = registry.get_backend("overlap", max_words=4)
    first = generate_run(engine, spec(), backend)
    _store_schema_1(bundled_db, first.run_id, "overlap")
    with pytest.raises(UserError, match=r"stored with other settings \(backend_options not "
                       r"recorded -> \{'max_words': 4\}\).*--variant NAME"):
        generate_run(engine, spec(), backend)
    assert _config(bundled_db, first.run_id)["backend_name"] == "overlap"  # left as stored
    assert "schema_version" not in _config(bundled_db, first.run_id)
