"""The backend registry: backends by name, each imported only when asked for; clear errors."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

from elitr_core.backends import hf
from elitr_core.backends.base import BackendOption, load
from elitr_core.backends.fake import FakeBackend
from elitr_core.backends.registry import BACKEND_NAMES, backend_class, get_backend
from elitr_core.errors import UserError

ROOT = Path(__file__).resolve().parents[3]

# Run in a fresh interpreter: the test process has imported torch and openai long ago.
LAZY_SCRIPT = """
import json, sys
HEAVY = ("torch", "transformers", "openai")
seen = {}
from elitr_core.backends.registry import BACKENDS, backend_class, get_backend
seen["import"] = [m for m in HEAVY if m in sys.modules]
declared = [(o.name, o.help_text) for name in BACKENDS for o in backend_class(name).options]
seen["declarations"] = [m for m in HEAVY if m in sys.modules]
get_backend("fake", model="ignored")
seen["fake"] = [m for m in HEAVY if m in sys.modules]
backend = get_backend("openai", model="m", base_url="http://127.0.0.1:9/v1")
seen["openai"] = [m for m in HEAVY if m in sys.modules]
seen["openai_class"] = type(backend).__name__
print(json.dumps(seen))
"""


def test_importing_the_registry_imports_no_backend_stack() -> None:
    result = subprocess.run([sys.executable, "-c", LAZY_SCRIPT], capture_output=True,
                            text=True, cwd=ROOT, timeout=120, check=True)
    seen = json.loads(result.stdout)
    assert seen["import"] == [] and seen["declarations"] == [] and seen["fake"] == []
    assert seen["openai"] == []  # the openai client is imported with the first request
    assert seen["openai_class"] == "OpenAIBackend"


def test_unknown_backend() -> None:
    with pytest.raises(UserError, match=r"unknown backend 'vllm'; use one of hf, openai, fake$"):
        get_backend("vllm")
    assert BACKEND_NAMES == ("hf", "openai", "fake")


def test_none_options_leave_the_backend_defaults() -> None:
    fake = get_backend("fake", model="any", unparsable_rate=None)
    assert isinstance(fake, FakeBackend) and fake.unparsable_rate == 0.0
    assert get_backend("fake", unparsable_rate=0.25).unparsable_rate == 0.25
    openai = get_backend("openai", model="m", base_url="http://127.0.0.1:9/v1",
                         concurrency=None, api_key=None)
    assert openai.model == "m" and openai.concurrency == 8  # type: ignore[attr-defined]
    assert openai.base_url == "http://127.0.0.1:9/v1"  # type: ignore[attr-defined]


@pytest.mark.parametrize(("name", "options", "message"), [
    ("openai", {}, "the openai backend needs a model name (--model)"),
    ("openai", {"model": ""}, "the openai backend needs a model name (--model)"),
    ("openai", {"model": "m", "base_url": "ftp://x"}, "bad base URL"),
    ("hf", {}, "the hf backend needs a local model directory (--model-path DIR)"),
    ("hf", {"model_path": None, "model": None}, "needs a local model directory"),
    ("fake", {"unparsable_rate": 2.0}, "unparsable_rate must be between 0 and 1"),
])
def test_a_backend_that_refuses_its_options(name: str, options: dict[str, object],
                                            message: str) -> None:
    with pytest.raises(UserError) as caught:
        get_backend(name, **options)
    assert message in str(caught.value)


@pytest.mark.parametrize("name", BACKEND_NAMES)
def test_declared_options_are_the_constructor_s_with_its_defaults(name: str) -> None:
    """What the help says is the default is what the backend applies when the option is
    left unset; an option no constructor takes is one ``from_options`` reads itself."""
    declared = backend_class(name)
    built = load(hf.ENGINE) if name == "hf" else declared
    taken = inspect.signature(built).parameters
    read_by_from_options = {"hf": {"model_path"}}.get(name, set())
    for option in declared.options:
        if option.name in read_by_from_options:
            continue
        assert option.name in taken, f"{name} declares {option.name}, its constructor lacks it"
        assert taken[option.name].default == option.default, option.name


def test_an_option_s_flag_help_and_arguments() -> None:
    count = BackendOption("concurrency", int, 8, "requests in flight at once", metavar="N")
    assert count.cli_flag == "--concurrency"
    assert count.help_text == "requests in flight at once (default 8)"
    assert count.argv(8) == [] and count.argv(None) == [] and count.argv(4) == [
        "--concurrency", "4"]
    assert BackendOption("timeout", float, 600.0, "seconds").help_text == "seconds (default 600)"
    template = BackendOption("use_chat_template", bool, True, "raw prompt",
                             flag="--no-chat-template")
    assert template.help_text == "raw prompt" and template.argv(True) == []
    assert template.argv(False) == ["--no-chat-template"]
    path = BackendOption("model_path", label="Model path")
    assert path.cli_flag == "--model-path" and path.argv("") == [] and path.argv("d") == [
        "--model-path", "d"]
    assert backend_class("hf").field("model_path") == '"Model path (hf)"'
