"""An interleaved run on the ``hf`` engine and SmolLM2-135M-Instruct (float32, CPU):
``generate --interleave 2 --span 2000`` answers equal plain greedy ``model.generate()`` on the
same conversation grown turn by turn, the conversation holds exactly the two transcripts and
the questions in the stored order, and each answer's span, counted again with the tokenizer
on the conversation, is the stored one and within 5% of 2000 tokens.

Kept small (one question a meeting, 8 new tokens): the suite must stay quick, and plain
greedy generation on the whole ~2,200-token conversation is most of this test's time (about
22 s a turn on one thread). Two turns show what the hf engine adds: the second question is
asked on the cache carried from the first turn, with the first question and its answer inside
the second one's span. Several questions a meeting (the stored order, switching back to a
meeting, spans growing with the answers) are the interleave plan's, the same on every backend:
``tests/elitr_core/generation/test_interleave.py`` checks them at 28 questions.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from sqlalchemy import text

from db.engine import get_engine
from elitr_core.backends.base import Message
from elitr_core.cli.main import main
from elitr_core.data.model_text import as_generated
from elitr_core.generation.interleave import ACKNOWLEDGEMENT, filler_pairs, transcript_messages
from tests.elitr_core.backends.smollm2 import (
    NEW_TOKENS,
    REAL_MODEL_TIMEOUT,
    greedy,
    load,
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
SPAN = 2000
KEPT = 1  # questions a meeting (see the module's docstring)
#: transcript lines: a transcript message of about 115 tokens, so that the two meetings' spans
#: (which differ by about one transcript, split between them) stay within 5% of SPAN
SHORT_LINES = 2


@pytest.fixture(scope="module")
def smollm2() -> Iterator[Path]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield load()[0]
    torch.set_num_threads(threads)


def keep_first_questions(url: str, n: int) -> None:
    """Leave each meeting its first ``n`` questions (and nothing that points at the rest)."""
    later = "SELECT id FROM question WHERE number > :n"
    responses_of = f"SELECT id FROM response WHERE question_id IN ({later})"
    with get_engine(url).begin() as conn:
        for table, column, inner in (("score", "response_id", responses_of),
                                     ("response", "question_id", later),
                                     ("questiontranslation", "question_id", later)):
            conn.execute(text(f"DELETE FROM {table} WHERE {column} IN ({inner})"), {"n": n})
        conn.execute(text("DELETE FROM question WHERE number > :n"), {"n": n})


def test_interleaved_answers_equal_plain_generate(bundled_sqlite: str, smollm2: Path) -> None:
    url = bundled_sqlite
    set_transcripts(url, lines=SHORT_LINES)
    keep_first_questions(url, KEPT)
    assert main(["generate", "--backend", "hf", "--model", "smollm2", "--model-path",
                 str(smollm2), "--device", "cpu", "--dtype", "float32", "--setting", "conv",
                 "--interleave", "2", "--span", str(SPAN), "--split", "test2", "--meetings",
                 ",".join(MEETINGS), "--max-new-tokens", str(NEW_TOKENS), "--db", url]) == 0
    (run_id, seed, config), = rows(url, "SELECT id, seed, config FROM run "
                                        "WHERE model = 'smollm2'")
    config = json.loads(config) if isinstance(config, str) else config
    group, = config["interleave_plan"]["groups"]
    assert config["interleave"]["span_unit"] == "tokens (the model's tokenizer)"
    stored = responses(url, run_id)
    by_number = {(m, n): (qid, q) for qid, m, n, q in questions(url, setting="conv")}
    assert len(stored) == len(group["order"]) == 2 * KEPT
    tokenizer = load()[1]

    def tokens(messages: list[Message]) -> int:
        return sum(len(tokenizer(m["content"], add_special_tokens=False).input_ids)
                   for m in messages)

    messages: list[Message] = []
    ends = {}
    for k, meeting in enumerate(group["meetings"]):
        said = transcript_messages(stored_transcript(url, meeting), None)
        assert said[1]["content"] == ACKNOWLEDGEMENT
        messages += [said[0]]
        ends[meeting] = len(messages)
        messages += [said[1], *filler_pairs(seed, 0, k, group["fillers"][k])]
    assert sum(m["content"].startswith("The following is the transcript") for m in messages) == 2
    for turn, (meeting, number) in enumerate(group["order"]):
        question_id, question = by_number[(meeting, number)]
        span = tokens(messages[ends[meeting]:])
        messages.append({"role": "user", "content": question.strip()})
        expected = greedy(messages).text.strip()
        text_, meta = stored[question_id]
        assert as_generated(text_, meta) == expected, (turn, meeting, number)
        assert meta["span"] == span and abs(span - SPAN) <= 0.05 * SPAN, (turn, span)
        messages.append({"role": "assistant", "content": expected})
