"""Answered fillers (``generate --interleave K --span N --answered-filler``, issue 44) over the
real ``openai`` client and a loopback server, on SQLite and PostgreSQL: every filler is a turn
the model answers, its reply checked and stored apart (``filleranswer``), every benchmark
answer stored once and only those; ``--plan-only`` prints the spans, stores and asks nothing,
and the run then measures each span within 1% of the printed plan (the same plan: its
``span_planned`` equals the printed one), each span equal to an independent count of the
words the server received between the transcript and the question.

The loopback server answers a question with a reply of about the planned length (31 words
for a 32-word plan) and a filler with its sums, wrong on every third filler: the plan holds
within 1% when the answers keep near their planned lengths, which is what is checked.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from elitr_core.backends.base import Message
from elitr_core.cli.main import main
from elitr_core.generation.fillers import QUESTION_START, check_reply, sums_of
from tests.elitr_core.backends.fake_openai_server import (
    FakeOpenAIServer,
    ServerScript,
    running_server,
)
from tests.elitr_core.run_helpers import (
    MEETINGS,
    questions,
    responses,
    rows,
    set_transcripts,
    transcript_of,
)

SPAN = 6_000  # words
TRANSCRIPT_START = "The following is the transcript of a meeting with multiple participants"
WRONG_EVERY = 3


def scripted_reply(messages: list[Message]) -> str:
    """A filler's sums (every third one off by one), or a 31-word answer to a question."""
    last = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    if last.startswith(QUESTION_START):
        fillers_asked = sum(m["role"] == "user" and m["content"].startswith(QUESTION_START)
                            for m in messages)
        sums = list(sums_of(last))
        if fillers_asked % WRONG_EVERY == 0:
            sums[0] += 1
        return ", ".join(str(s) for s in sums)
    return "A: " + " ".join(["word"] * 30)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with running_server(ServerScript(reply=scripted_reply, exact_reply=True)) as fake:
        yield fake


def generate(url: str, server: FakeOpenAIServer, *extra: str) -> list[str]:
    return ["generate", "--backend", "openai", "--base-url", server.base_url, "--model",
            "served-model", "--max-retries", "0", "--setting", "conv", "--interleave", "2",
            "--span", str(SPAN), "--answered-filler", "--split", "test2", "--meetings",
            ",".join(MEETINGS), "--max-new-tokens", "64", "--db", url, *extra]


def printed_plan(out: str) -> dict[tuple[int, int], int]:
    """(conversation, turn) -> planned span, read from the printed table."""
    found = {}
    for line in out.splitlines():
        cells = line.split()
        if len(cells) == 7 and cells[0].isdigit() and cells[2].startswith("meeting_"):
            found[(int(cells[0]), int(cells[1]))] = int(cells[5])
    return found


def words_between(messages: list[dict[str, str]], meeting: str) -> int:
    """Whitespace words of the contents after ``meeting``'s transcript message up to the last
    (the question's) message: the span, counted apart from the run."""
    start = next(i for i, m in enumerate(messages) if m["role"] == "user"
                 and transcript_of(meeting) in m["content"])
    return sum(len(m["content"].split()) for m in messages[start + 1 : -1])


def test_answered_fillers_are_answered_stored_apart_and_the_plan_holds(
        bundled_db: str, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    url = bundled_db
    set_transcripts(url)
    assert main(generate(url, server, "--plan-only")) == 0
    out = capsys.readouterr().out
    plan = printed_plan(out)
    assert len(plan) == 28 and "answered filler(s)" in out and "target 6,000" in out
    assert not rows(url, "SELECT id FROM run WHERE model = 'served-model'")
    assert server.successful() == []  # nothing asked

    assert main(generate(url, server)) == 0
    out = capsys.readouterr().out
    assert printed_plan(out) == plan  # the run prints the same plan before it asks
    (run_id, raw), = rows(url, "SELECT id, config FROM run WHERE model = 'served-model'")
    config = json.loads(raw) if isinstance(raw, str) else raw
    assert config["interleave"]["answered_filler"] is True

    stored = responses(url, run_id)  # fails on a duplicate
    by_id = {qid: (m, n) for qid, m, n, _ in questions(url, setting="conv")}
    assert set(stored) == set(by_id) and len(stored) == 28
    assert not any(text.startswith(QUESTION_START) or re.fullmatch(r"[\d, ]+", text)
                   for text, _ in stored.values())
    fillers = rows(url, "SELECT conversation, turn, question, expected, text, correct, total, "
                        "followed FROM filleranswer WHERE run_id = :r ORDER BY turn", r=run_id)
    records = server.successful()
    asked = Counter(r.last_user for r in records)
    assert len(records) == 28 + len(fillers) and max(asked.values()) == 1  # each asked once
    assert all(q.startswith(QUESTION_START) for _, _, q, *_ in fillers)
    for index, (_, _, question, expected, reply, correct, total, followed) in enumerate(
            fillers, 1):
        right = index % WRONG_EVERY != 0
        assert expected == ", ".join(str(s) for s in sums_of(question))
        assert bool(followed) is right and total == len(sums_of(question))
        assert correct == (total if right else total - 1)
        assert check_reply(sums_of(question), reply)["followed"] is right
    assert (f"fillers (stored apart, never scored): {len(fillers)} answered, "
            f"{sum(bool(f[7]) for f in fillers)} with every sum right") in out

    spans = []
    for record in records:
        if record.last_user.startswith(QUESTION_START):
            continue
        qid = next(q for q, (text, meta) in stored.items()
                   if meta["turn"] == turn_of(record, stored))
        meta = stored[qid][1]
        meeting = by_id[qid][0]
        assert meta["span"] == words_between(record.messages, meeting)
        assert meta["span_planned"] == plan[(1, meta["turn"])]
        spans.append((meta["span"], meta["span_planned"]))
        assert abs(meta["span"] - meta["span_planned"]) <= 0.01 * meta["span_planned"], meta
    assert len(spans) == 28

    # the replies' table: each filler's correctness, the run named as in every table
    assert main(["export", "fillers", "--format", "json", "--db", url]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert [(r["turn"], r["reply"], r["correct"], r["followed"]) for r in exported] == [
        (f[1], f[4], f[5], bool(f[7])) for f in fillers]
    assert {(r["model"], r["mode"], r["seed"]) for r in exported} == {
        ("served-model (6k)", "int2", 2023)}


def turn_of(record: Any, stored: dict[int, tuple[str, dict[str, Any]]]) -> int:
    """The turn of a recorded request: the user messages after the first transcript."""
    users = [m for m in record.messages if m["role"] == "user"]
    first = next(i for i, m in enumerate(users)
                 if m["content"].startswith(TRANSCRIPT_START))
    later = [m for m in users[first + 1:] if not m["content"].startswith(
        TRANSCRIPT_START)]
    return len(later) - 1


@pytest.mark.parametrize(("reply", "correct", "followed"), [
    ("92, 83", 2, True),
    ("92,83.", 2, True),
    ("34 + 58 = 92, 71 + 12 = 83", 2, True),  # the sums echoed: their terms are not answers
    ("The sums are 92 and 83.", 2, True),
    ("92", 1, False),
    ("83, 92", 0, False),
    ("92, 83, 7", 2, False),
    ("", 0, False),
    ("I cannot help with that.", 0, False),
])
def test_a_reply_is_checked_sum_by_sum(reply: str, correct: int, followed: bool) -> None:
    assert check_reply((92, 83), reply) == {"correct": correct, "total": 2,
                                            "followed": followed}


def test_the_questions_are_seeded_and_read_back() -> None:
    from elitr_core.generation.interleave import filler_pairs

    pairs = filler_pairs(7, 0, 1, [8, 3], answered=True)
    assert pairs == filler_pairs(7, 0, 1, [8, 3], answered=True)
    assert pairs != filler_pairs(8, 0, 1, [8, 3], answered=True)
    for question, reply in zip(pairs[::2], pairs[1::2], strict=True):
        sums = sums_of(question["content"])
        assert question["content"].startswith(QUESTION_START)
        assert reply["content"] == ", ".join(map(str, sums)) and all(20 <= s <= 198
                                                                      for s in sums)
    assert [len(sums_of(q["content"])) for q in pairs[::2]] == [8, 3]


def test_the_option_shapes_the_run_and_is_refused_alone(
        bundled_sqlite: str, capsys: pytest.CaptureFixture[str]) -> None:
    from db.engine import get_engine
    from elitr_core.backends.base import DecodingConfig
    from elitr_core.backends.fake import FakeBackend
    from elitr_core.errors import UserError
    from elitr_core.generation.runs import GenerationSpec, generate_run
    from elitr_core.generation.spec import Interleaving

    assert "answered_filler" not in Interleaving(2, 100).to_dict()  # stored runs keep theirs
    assert Interleaving(2, 100, answered_filler=True).to_dict()["answered_filler"] is True
    url = bundled_sqlite
    set_transcripts(url)
    spec = GenerationSpec(model="m", setting="conv", mode="mt", split="test2",
                          meetings=MEETINGS, decoding=DecodingConfig(max_new_tokens=16),
                          interleave=Interleaving(2, 3000))
    report = generate_run(get_engine(url), spec, FakeBackend())
    assert report.status == "done" and report.notes() == []
    answered = GenerationSpec(**{**spec.__dict__,
                                 "interleave": Interleaving(2, 3000, answered_filler=True)})
    with pytest.raises(UserError, match=r"interleave .*answered_filler.*--variant"):
        generate_run(get_engine(url), answered, FakeBackend())
    for args, message in (
            (["--interleave", "2", "--answered-filler"], "give --span TOKENS too"),
            (["--answered-filler", "--mode", "mt"], "add --interleave 2 or 3"),
            (["--plan-only", "--mode", "mt"], "add --interleave 2 or 3")):
        assert main(["generate", "--backend", "fake", "--model", "m", "--setting", "conv",
                     "--split", "test2", *args, "--db", url]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


def test_a_killed_run_resumes_after_its_answers_and_replies(
        bundled_sqlite: str, server: FakeOpenAIServer) -> None:
    """Ctrl-C after 9 answers: the second call asks no question and no filler twice, and goes
    on from the stored answers and replies."""
    from db.engine import get_engine
    from elitr_core.backends.base import DecodingConfig
    from elitr_core.backends.openai_backend import OpenAIBackend
    from elitr_core.generation.runs import GenerationSpec, generate_run
    from elitr_core.generation.spec import Interleaving
    from tests.elitr_core.run_helpers import StopAfter

    url = bundled_sqlite
    set_transcripts(url)
    spec = GenerationSpec(model="served-model", setting="conv", mode="mt", split="test2",
                          meetings=MEETINGS, decoding=DecodingConfig(max_new_tokens=64),
                          interleave=Interleaving(2, 1500, answered_filler=True))
    backend = OpenAIBackend("served-model", base_url=server.base_url, max_retries=0)
    with pytest.raises(KeyboardInterrupt):
        generate_run(get_engine(url), spec, backend, progress=StopAfter(9))
    (run_id,), = rows(url, "SELECT id FROM run WHERE model = 'served-model'")
    assert len(responses(url, run_id)) == 9
    kept = rows(url, "SELECT turn, text FROM filleranswer WHERE run_id = :r", r=run_id)
    assert kept
    report = generate_run(get_engine(url), spec, backend)
    assert (report.skipped, report.written, report.status) == (9, 19, "done")
    asked = Counter(r.last_user for r in server.successful())
    assert max(asked.values()) == 1  # no question and no filler asked twice
    replies = rows(url, "SELECT turn, text FROM filleranswer WHERE run_id = :r", r=run_id)
    assert set(kept) <= set(replies) and report.fillers is not None
    assert report.fillers[0] == len(replies) == sum(
        q.startswith(QUESTION_START) for q in asked)
    resumed = server.successful()[len(kept) + 9]  # the first request of the second call
    given = [m["content"] for m in resumed.messages if m["role"] == "assistant"]
    assert all(text in given for _, text in kept)  # it goes on from the stored replies
