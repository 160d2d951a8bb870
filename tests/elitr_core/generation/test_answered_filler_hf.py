"""Answered fillers on the ``hf`` engine and SmolLM2-135M-Instruct (float32, CPU):
``generate --interleave 2 --span 2000 --answered-filler`` asks every filler as a turn of its
own, stores each benchmark answer once and each filler's reply apart (``filleranswer``), and
each answer's span, counted again with the tokenizer on the conversation rebuilt from the
stored replies and answers, is the stored one and within 1% of the span ``--plan-only``
printed before (the same plan, the printed planned span stored as ``span_planned``).

Kept small, as ``test_interleave_hf.py``: one question a meeting, short transcripts, 8 new
tokens (every reply planned at 8 tokens: SmolLM2 fills them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from elitr_core.backends.base import Message
from elitr_core.cli.main import main
from elitr_core.data.model_text import as_generated
from elitr_core.generation.interleave import ACKNOWLEDGEMENT, transcript_messages
from tests.elitr_core import run_helpers as rh
from tests.elitr_core.backends.smollm2 import NEW_TOKENS, REAL_MODEL_TIMEOUT, load
from tests.elitr_core.generation.test_answered_filler import printed_plan
from tests.elitr_core.generation.test_interleave_hf import keep_first_questions

pytestmark = REAL_MODEL_TIMEOUT
SPAN = 2000


@pytest.fixture(scope="module")
def smollm2() -> Iterator[Path]:
    """The model directory, the engine on one thread (as test_interleave_hf's): the two xdist
    workers share two cores, and torch's default (one thread a core) made this file use both
    (48 CPU-s in 43 s) against the other worker."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield load()[0]
    torch.set_num_threads(threads)


def test_answered_fillers_on_smollm2(bundled_sqlite: str, smollm2: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    url = bundled_sqlite
    rh.set_transcripts(url, lines=2)
    keep_first_questions(url, 1)
    path, tokenizer = smollm2, load()[1]
    args = ["generate", "--backend", "hf", "--model", "smollm2", "--model-path", str(path),
            "--device", "cpu", "--dtype", "float32", "--setting", "conv", "--interleave", "2",
            "--span", str(SPAN), "--answered-filler", "--split", "test2", "--meetings",
            ",".join(rh.MEETINGS), "--max-new-tokens", str(NEW_TOKENS), "--db", url]
    assert main([*args, "--plan-only"]) == 0
    plan = printed_plan(capsys.readouterr().out)
    assert len(plan) == 2 and not rh.rows(url, "SELECT id FROM run WHERE model = 'smollm2'")

    assert main(args) == 0
    out = capsys.readouterr().out
    assert printed_plan(out) == plan and "fillers (stored apart, never scored)" in out
    (run_id, raw), = rh.rows(url, "SELECT id, config FROM run WHERE model = 'smollm2'")
    config = json.loads(raw) if isinstance(raw, str) else raw
    group, = config["interleave_plan"]["groups"]
    stored = rh.responses(url, run_id)  # fails on a duplicate
    by_number = {(m, n): (qid, q) for qid, m, n, q in rh.questions(url, setting="conv")}
    assert set(stored) == {by_number[(m, n)][0] for m, n in group["order"]}
    fillers = rh.rows(url, "SELECT turn, gap, question, text, meta FROM filleranswer "
                        "WHERE run_id = :r ORDER BY turn", r=run_id)
    assert [f[0] for f in fillers] == list(range(len(fillers))) and len(fillers) >= 5
    assert not {text for text, _ in stored.values()} & {f[3] for f in fillers}

    def tokens(messages: list[Message]) -> int:
        return sum(len(tokenizer(m["content"], add_special_tokens=False).input_ids)
                   for m in messages)

    messages: list[Message] = []  # the conversation, rebuilt from what is stored
    ends = {}
    for k, meeting in enumerate(group["meetings"]):
        said = transcript_messages(rh.stored_transcript(url, meeting), None)
        messages.append(said[0])
        ends[meeting] = len(messages)
        messages.append({"role": "assistant", "content": ACKNOWLEDGEMENT})
        for _, gap, question, text, meta in fillers:
            if gap == k:
                meta = json.loads(meta) if isinstance(meta, str) else meta
                messages += [{"role": "user", "content": question},
                             {"role": "assistant", "content": as_generated(text, meta)}]
    for meeting, number in group["order"]:
        question_id, question = by_number[(meeting, number)]
        text, meta = stored[question_id]
        span = tokens(messages[ends[meeting]:])
        assert meta["span"] == span and meta["span_planned"] == plan[(1, meta["turn"])]
        assert abs(span - meta["span_planned"]) <= 0.01 * meta["span_planned"], (span, meta)
        messages += [{"role": "user", "content": question.strip()},
                     {"role": "assistant", "content": as_generated(text, meta)}]
