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
        "error: --no-chat-template, --truncation: the openai backend does not take them (they "
        "shape the prompt built in this process; use --backend hf)")
