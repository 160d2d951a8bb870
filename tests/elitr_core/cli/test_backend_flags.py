"""The backends' flags of ``generate`` and ``judge``, built from what each backend declares:
one flag per option however many backends take it, prompt options for generation only and
refused with a backend that does not take them."""

from __future__ import annotations

import pytest

from elitr_core.backends import registry
from elitr_core.backends.base import BackendOption
from elitr_core.backends.fake import FakeBackend
from elitr_core.cli.backend_flags import declared
from elitr_core.cli.main import build_parser, main

HERE = "tests.elitr_core.cli.test_backend_flags"


class SharingBackend(FakeBackend):
    """Takes ``--device`` as hf does (one flag), and a help of its own."""

    name = "sharing"
    options = (BackendOption("device", help="where the fake answers are made"),)


class ClashingBackend(FakeBackend):
    """Declares ``device`` as a number: the one flag cannot be both."""

    name = "clashing"
    options = (BackendOption("device", int),)


def _flags(command: str) -> dict[str, str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]  # type: ignore[index]
    return {flag: action.help or "" for action in sub._actions for flag in action.option_strings}


def test_prompt_options_are_generation_s_only() -> None:
    generate, judge = _flags("generate"), _flags("judge")
    for flag in ("--no-chat-template", "--truncation", "--max-context"):
        assert flag in generate and flag not in judge
    for flag in ("--model-path", "--device", "--base-url", "--api-key-env", "--concurrency"):
        assert flag in generate and flag in judge
    assert generate["--concurrency"] == "openai: requests in flight at once (default 8)"


def test_an_option_two_backends_declare_is_one_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.BACKENDS, "sharing", f"{HERE}:SharingBackend")
    assert declared()["device"][1] == ["hf", "sharing"]
    assert _flags("generate")["--device"] == (
        "hf: cuda, cuda:1 or cpu (default: CUDA when available); sharing: where the fake "
        "answers are made")
    monkeypatch.setitem(registry.BACKENDS, "clashing", f"{HERE}:ClashingBackend")
    with pytest.raises(ValueError, match="declare device differently"):
        declared()


def test_a_prompt_option_for_a_backend_that_does_not_take_it_is_refused(
        capsys: pytest.CaptureFixture[str]) -> None:
    args = ["generate", "--model", "m", "--setting", "qa", "--mode", "st", "--split", "test2",
            "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1", "--truncation",
            "middle", "--no-chat-template"]
    assert main(args) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "error: --no-chat-template, --truncation: the openai backend does not take them (use "
        "--backend hf, or leave them out)")


@pytest.mark.parametrize(("command", "flags", "said"), [
    (["generate", "--model", "m", "--setting", "qa", "--mode", "st"],
     ["--model-path", "/nonexistent"], "--model-path: the fake backend does not take it (use "
     "--backend hf, or leave it out)"),
    (["generate", "--model", "m", "--setting", "qa", "--mode", "st"],
     ["--concurrency", "4", "--dtype", "float16"], "--dtype, --concurrency: the fake backend "
     "does not take them (use --backend hf or openai, or leave them out)"),
    (["judge", "--judge-model", "j", "--style", "gpt4", "--evaluator", "j"], ["--base-url", "http://x:1/v1"],
     "--base-url: the fake backend does not take it (use --backend openai, or leave it out)"),
])
def test_an_option_the_chosen_backend_does_not_take_is_refused_before_anything_runs(
        db_url: str, capsys: pytest.CaptureFixture[str], command: list[str], flags: list[str],
        said: str) -> None:
    """Dropping it would run without the model (or setup) the command names, and record a
    setup the run never had: ``generate --backend fake --model-path /nonexistent`` ran."""
    assert main([*command, "--db", db_url, "--split", "test2", "--backend", "fake",
                 *flags]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {said}"]
