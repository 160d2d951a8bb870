"""The ``hf`` engine on real trained weights: SmolLM2-135M-Instruct, float32, CPU.

``generate --backend hf`` (the whole command: database, passes, engine) answers every question
of two meetings with synthetic transcripts, single-turn and multi-turn; each answer must equal
plain greedy ``model.generate()`` on the same prompt, one question at a time (multi-turn: on
the conversation grown with the reference's own answers). Random weights can hide bugs behind
gibberish; a trained model's answers are words, and a wrong cache shows.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from elitr_core.backends.base import Message
from elitr_core.cli.main import main
from elitr_core.data.bounds import MAX_TEXT_CHARS
from elitr_core.data.model_text import as_generated, storable
from elitr_core.prompts.assembly import multi_turn_plan, single_turn_messages
from tests.elitr_core.backends.smollm2 import smollm2_dir
from tests.elitr_core.run_helpers import MEETINGS, questions, responses, rows, set_transcripts

NEW_TOKENS = 8
LINES = 6  # transcript lines per meeting: prompts of about 350 tokens


@pytest.fixture(scope="module")
def smollm2() -> Iterator[tuple[Path, Any, Any]]:
    """(model directory, tokenizer, model) of SmolLM2 in float32 (converted once per machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # two shared cores
    folder = smollm2_dir()
    yield folder, AutoTokenizer.from_pretrained(folder), AutoModelForCausalLM.from_pretrained(
        folder, dtype=torch.float32).eval()
    torch.set_num_threads(threads)


def reference(tokenizer: Any, model: Any, messages: list[Message]) -> str:
    """Greedy ``model.generate`` on one conversation, the prompt from the chat template."""
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    ids = tokenizer(text, add_special_tokens=False, return_tensors="pt").input_ids
    with torch.inference_mode():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                             max_new_tokens=NEW_TOKENS, pad_token_id=tokenizer.eos_token_id)
    return str(tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True).strip())


def generated(url: str, folder: Path, mode: str) -> dict[int, str]:
    """Run ``generate --backend hf`` in ``mode``; question id -> the answer as the engine
    decoded it. The storage policy of model text is a separate step (an answer holding a
    control character is stored with U+FFFD and keeps its original in its metadata), so the
    engine is compared through ``as_generated`` and the stored form checked against the
    policy."""
    assert main(["generate", "--backend", "hf", "--model", "smollm2", "--model-path",
                 str(folder), "--device", "cpu", "--dtype", "float32", "--setting", "qa",
                 "--mode", mode, "--split", "test2", "--meetings", ",".join(MEETINGS),
                 "--max-new-tokens", str(NEW_TOKENS), "--db", url]) == 0
    (run_id,), = rows(url, "SELECT id FROM run WHERE model = 'smollm2' AND mode = :m", m=mode)
    answers = {}
    for question, (text, meta) in responses(url, run_id).items():
        answers[question] = as_generated(text, meta)
        assert text == storable(answers[question], MAX_TEXT_CHARS).text
    return answers


def transcript(url: str, meeting: str) -> str:
    (text,), = rows(url, "SELECT transcript FROM meeting WHERE external_id = :m", m=meeting)
    return str(text)


def test_single_turn_answers_equal_plain_generate(
        bundled_sqlite: str, smollm2: tuple[Path, Any, Any]) -> None:
    folder, tokenizer, model = smollm2
    set_transcripts(bundled_sqlite, lines=LINES)
    answers = generated(bundled_sqlite, folder, "st")
    asked = questions(bundled_sqlite)
    assert len(answers) == len(asked) == 28
    for question_id, meeting, _, text in asked:
        messages = single_turn_messages(transcript(bundled_sqlite, meeting), text)
        assert answers[question_id] == reference(tokenizer, model, messages), question_id
    assert sum(len(a.split()) >= 3 for a in answers.values()) > 20  # words, not gibberish


def test_multi_turn_answers_equal_plain_generate_turn_by_turn(
        bundled_sqlite: str, smollm2: tuple[Path, Any, Any]) -> None:
    folder, tokenizer, model = smollm2
    set_transcripts(bundled_sqlite, lines=LINES)
    answers = generated(bundled_sqlite, folder, "mt")
    for meeting in MEETINGS:
        asked = [q for q in questions(bundled_sqlite) if q[1] == meeting]
        history, turns = multi_turn_plan(transcript(bundled_sqlite, meeting),
                                         [q[3] for q in asked])
        messages = list(history)
        for (question_id, *_), turn in zip(asked, turns, strict=True):
            messages.append({"role": "user", "content": turn})
            expected = reference(tokenizer, model, messages)
            assert answers[question_id] == expected, (meeting, question_id)
            messages.append({"role": "assistant", "content": expected})
