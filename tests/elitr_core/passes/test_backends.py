"""The pass lifecycle, the same tests for every backend: the three real ones and a whole new
backend with one option, of under 50 lines (``overlap_backend.py``), added by one line in the
registry's table: it runs, and its option is a flag of the command line, without a change to
the command line's code (the Runs page's form: ``tests/pages/test_runs.py``).

Each backend runs a single-turn and a multi-turn generation run and a judge pass through the
real passes on a SQLite database of the bundled data: every answer stored once, tokens counted
as they arrive, a run killed mid-way resumed without asking anything twice and ending as an
uninterrupted run does, a judge pass that asks again only what it could not read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from db.engine import get_engine
from elitr_core.backends import registry
from elitr_core.backends.base import Backend, DecodingConfig
from elitr_core.cli.main import main
from elitr_core.generation.runs import GenerationSpec, generate_run
from elitr_core.judging.runner import JudgeSpec, judge_run
from elitr_core.passes.records import usage_totals
from tests.elitr_core.backends.fake_openai_server import ServerScript, running_server
from tests.elitr_core.run_helpers import (
    MEETINGS,
    StopAfter,
    responses,
    rows,
    set_transcripts,
)

OVERLAP = "tests.elitr_core.passes.overlap_backend:OverlapBackend"
BACKENDS = ("fake", "openai", "hf", "overlap")


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    import torch

    from tests.elitr_core.backends.tiny_model import build_tiny_llama

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # two shared cores: one thread avoids oversubscription
    yield build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def one_line_in_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.BACKENDS, "overlap", OVERLAP)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    name = request.param
    if name == "openai":
        reply = ServerScript(reply=lambda m: "A: " + m[-1]["content"].strip().splitlines()[-1])
        with running_server(reply) as server:
            yield registry.get_backend("openai", model="m", base_url=server.base_url)
    elif name == "hf":
        yield registry.get_backend("hf", model_path=request.getfixturevalue("tiny_llama"))
    elif name == "overlap":
        yield registry.get_backend(name, max_words=6)  # its option, as the CLI gives it
    else:
        yield registry.get_backend(name)


def spec(mode: str, variant: str = "") -> GenerationSpec:
    return GenerationSpec(model="m", setting="qa", mode=mode, split="test2", meetings=MEETINGS,
                          variant=variant, decoding=DecodingConfig(max_new_tokens=8))


def texts(url: str, run_id: int) -> dict[int, str]:
    return {question: text for question, (text, _) in responses(url, run_id).items()}


@pytest.mark.parametrize("mode", ["st", "mt"])
def test_a_run_stores_every_answer_once_and_counts_tokens_as_they_arrive(
        bundled_sqlite: str, backend: Backend, mode: str) -> None:
    set_transcripts(bundled_sqlite)
    report = generate_run(get_engine(bundled_sqlite), spec(mode), backend)
    stored = responses(bundled_sqlite, report.run_id)  # fails on a duplicate
    assert (report.written, report.total, len(stored), report.status) == (28, 28, 28, "done")
    assert report.usage == usage_totals(meta for _, meta in stored.values())


@pytest.mark.parametrize("mode", ["st", "mt"])
def test_a_killed_run_resumes_and_ends_as_an_uninterrupted_one(
        bundled_sqlite: str, backend: Backend, mode: str) -> None:
    set_transcripts(bundled_sqlite)
    engine = get_engine(bundled_sqlite)
    with pytest.raises(KeyboardInterrupt):
        generate_run(engine, spec(mode), backend, progress=StopAfter(5))
    (run_id, status), = rows(bundled_sqlite, "SELECT id, status FROM run WHERE model = 'm'")
    assert status == "failed" and len(responses(bundled_sqlite, run_id)) == 5
    report = generate_run(engine, spec(mode), backend)
    assert (report.skipped, report.written, report.status) == (5, 23, "done")
    whole = generate_run(engine, spec(mode, variant="whole"), backend)
    assert texts(bundled_sqlite, run_id) == texts(bundled_sqlite, whole.run_id)


def test_a_judge_pass_asks_again_only_what_it_could_not_read(bundled_sqlite: str,
                                                             backend: Backend) -> None:
    set_transcripts(bundled_sqlite)
    engine = get_engine(bundled_sqlite)
    generate_run(engine, spec("st"), backend)  # the backend's own (short) answers are judged
    judge = JudgeSpec(judge_model="m", style="gpt4", evaluator="judge", models=("m",),
                      max_new_tokens=8)
    first = judge_run(engine, judge, backend)
    assert first.asked == first.total == first.ok + first.unparsed == 28
    stored = rows(bundled_sqlite, "SELECT status FROM score s JOIN evaluator e ON "
                  "e.id = s.evaluator_id WHERE e.slug = 'judge'")
    assert sorted(s for (s,) in stored) == sorted(["ok"] * first.ok + ["unparsed"] * first.unparsed)
    again = judge_run(engine, judge, backend)
    assert (again.asked, again.skipped) == (first.unparsed, first.ok)


def test_the_command_line_takes_a_backend_from_its_registry_line(
        bundled_sqlite: str, capsys: pytest.CaptureFixture[str]) -> None:
    set_transcripts(bundled_sqlite, MEETINGS[:1])
    args = ["generate", "--db", bundled_sqlite, "--backend", "overlap", "--model", "baseline",
            "--setting", "qa", "--mode", "st", "--split", "test2", "--meetings", MEETINGS[0]]
    assert main(args) == 0
    assert "12 answer(s) written" in capsys.readouterr().out
    answers: list[Any] = rows(bundled_sqlite, "SELECT r.text FROM response r JOIN run u ON "
                                              "u.id = r.run_id WHERE u.model = 'baseline'")
    assert len(answers) == 12 and len(set(answers)) > 1 and all(text for (text,) in answers)
    assert max(len(text.split()) for (text,) in answers) > 3
    assert main([*args, "--max-words", "3", "--variant", "short"]) == 0  # its declared option
    short: list[Any] = rows(bundled_sqlite, "SELECT r.text FROM response r JOIN run u ON "
                                            "u.id = r.run_id WHERE u.variant = 'short'")
    assert len(short) == 12 and all(0 < len(text.split()) <= 3 for (text,) in short)


@pytest.mark.parametrize("command", ["generate", "judge"])
def test_its_option_shows_in_the_help_of_the_command_line(
        command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "--help"]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "--backend {hf,openai,fake,overlap}" in shown
    assert "overlap: the line sharing most words with the question" in shown
    assert "--max-words N overlap: answer with at most N words (default: the whole line)" in shown


def test_its_answer_shaping_option_is_in_the_identity_of_its_runs(
        bundled_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Declared with ``shapes_answers``, nothing else: a resume with another value is refused
    naming it, an equal one resumes, and ``--variant`` keeps the other setup apart."""
    set_transcripts(bundled_db, MEETINGS[:1])
    args = ["generate", "--db", bundled_db, "--backend", "overlap", "--model", "baseline",
            "--setting", "qa", "--mode", "st", "--split", "test2", "--meetings", MEETINGS[0]]
    assert main([*args, "--max-words", "6"]) == 0
    (config,), = rows(bundled_db, "SELECT config FROM run WHERE model = 'baseline'")
    config = json.loads(config) if isinstance(config, str) else config
    assert (config["backend_options"], config["schema_version"]) == ({"max_words": 6}, 2)
    capsys.readouterr()
    assert main([*args, "--max-words", "3"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: baseline QA-st test2 seed 2023 is stored with other settings (backend option "
        "max_words 6 -> 3): rerun with the stored settings to resume, or add --variant NAME"]
    assert main(args) == 2  # left out: its default (the whole line) is another setup
    assert "backend option max_words 6 -> None" in capsys.readouterr().err
    assert main([*args, "--max-words", "6"]) == 0
    assert "0 answer(s) written, 12 already stored" in capsys.readouterr().out
    assert main([*args, "--max-words", "3", "--variant", "short"]) == 0
    assert rows(bundled_db, "SELECT variant, COUNT(*) FROM run u JOIN response r ON "
                "r.run_id = u.id WHERE u.model = 'baseline' GROUP BY variant "
                "ORDER BY variant") == [("", 12), ("short", 12)]
