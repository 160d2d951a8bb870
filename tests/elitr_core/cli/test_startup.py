"""A command's start-up: the cyclic collector holds back during imports, and only then."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from elitr_core.cli import runs, startup
from elitr_core.cli.main import main
from elitr_core.errors import UserError

USUAL = gc.get_threshold()


def judge_args(url: str) -> list[str]:
    return ["judge", "--judge-model", "demo", "--backend", "fake", "--style", "gpt4",
            "--evaluator", "startup-judge", "--model", "GPT-4", "--split", "test2",
            "--setting", "qa", "--mode", "st", "--db", url]


def test_collector_waits_while_the_command_starts_and_runs_as_usual_for_the_pass(
        bundled_sqlite: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import elitr_core.judging.runner as runner

    seen: dict[str, tuple[int, int, int]] = {}
    make_backend, judge_run = runs._backend, runner.judge_run

    def backend(*args: Any) -> Any:
        seen["backend"] = gc.get_threshold()
        return make_backend(*args)

    def run(*args: Any, **kwargs: Any) -> Any:
        seen["pass"] = gc.get_threshold()
        return judge_run(*args, **kwargs)

    monkeypatch.setattr(runs, "_backend", backend)
    monkeypatch.setattr(runner, "judge_run", run)
    assert main(judge_args(bundled_sqlite)) == 0
    assert seen["backend"] == (startup.STARTUP_GC_THRESHOLD, *USUAL[1:])
    assert seen["pass"] == USUAL
    assert gc.get_threshold() == USUAL


def test_collector_is_back_to_usual_after_a_failed_command(
        bundled_sqlite: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    def refuse(*args: Any) -> Any:
        raise UserError("no backend today")

    monkeypatch.setattr(runs, "_backend", refuse)
    assert main(judge_args(bundled_sqlite)) == 2
    assert "error: no backend today" in capsys.readouterr().err
    assert gc.get_threshold() == USUAL
