"""Interleaved runs (the LTM benchmark's method) over the real ``openai`` client and a loopback
server: the conversation holds exactly its K transcripts and the questions in the stored order,
every answer's span is measured and within 5% of ``--span``, fillers are never asked, stored
as answers or scored, and a killed run resumes without asking anything twice.

The span is checked against an independent count: the whitespace words (the openai backend's
unit) of the messages the server received between the transcript and the question.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from db.engine import get_engine
from elitr_core.backends.base import DecodingConfig, Message
from elitr_core.backends.fake import FakeBackend
from elitr_core.backends.openai_backend import OpenAIBackend
from elitr_core.errors import UserError
from elitr_core.generation.interleave import (
    ACKNOWLEDGEMENT,
    filler_pairs,
    group_meetings,
    question_order,
)
from elitr_core.generation.runs import GenerationSpec, generate_run
from elitr_core.generation.spec import Interleaving
from tests.elitr_core.backends.fake_openai_server import (
    FakeOpenAIServer,
    ServerScript,
    running_server,
)
from tests.elitr_core.run_helpers import (
    MEETINGS,
    StopAfter,
    questions,
    responses,
    rows,
    set_transcripts,
    transcript_of,
)

ANSWER_PROMPT_START = "The following is the transcript of a meeting with multiple participants"
SHORT = Interleaving(2, 2_000)
SPAN = 20_000  # words: the 28 questions' section (about 900 words) stays within 5%


def last_line_reply(messages: list[Message]) -> str:
    last = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    return "A: " + last.strip().splitlines()[-1]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with running_server(ServerScript(reply=last_line_reply)) as fake:
        yield fake


@pytest.fixture
def url(bundled_sqlite: str) -> str:
    set_transcripts(bundled_sqlite)
    return bundled_sqlite


def backend(server: FakeOpenAIServer, concurrency: int = 1) -> OpenAIBackend:
    return OpenAIBackend("served-model", base_url=server.base_url, concurrency=concurrency,
                         max_retries=0, backoff_base=0.001)


def spec(**changes: Any) -> GenerationSpec:
    values: dict[str, Any] = {"model": "served-model", "setting": "conv", "mode": "mt",
                              "split": "test2", "meetings": MEETINGS,
                              "decoding": DecodingConfig(max_new_tokens=64),
                              "interleave": Interleaving(2, SPAN)}
    values.update(changes)
    return GenerationSpec(**values)


def config(url: str, run_id: int) -> dict[str, Any]:
    (raw,), = rows(url, "SELECT config FROM run WHERE id = :r", r=run_id)
    return json.loads(raw) if isinstance(raw, str) else dict(raw)


def words_between(messages: list[dict[str, str]], meeting: str) -> int:
    """Whitespace words of the contents after ``meeting``'s transcript message, up to the
    last (the question's) message: the span, counted apart from the engine."""
    start = next(i for i, m in enumerate(messages) if m["role"] == "user"
                 and transcript_of(meeting) in m["content"])
    return sum(len(m["content"].split()) for m in messages[start + 1 : -1])


def test_interleaved_run_holds_k_transcripts_stored_order_and_spans(
        url: str, server: FakeOpenAIServer) -> None:
    report = generate_run(get_engine(url), spec(), backend(server))
    assert (report.written, report.total, report.status) == (28, 28, "done")
    assert report.label == "served-model Conv-int2 20k test2 seed 2023"
    (mode, variant), = rows(url, "SELECT mode, variant FROM run WHERE id = :r", r=report.run_id)
    assert (mode, variant) == ("int2", "20k")
    plan = config(url, report.run_id)["interleave_plan"]
    group, = plan["groups"]
    assert sorted(group["meetings"]) == sorted(MEETINGS) and plan["left_out"] == []
    by_number = {(m, n): (qid, text) for qid, m, n, text in questions(url, setting="conv")}
    order = [by_number[(m, n)] for m, n in group["order"]]
    stored = responses(url, report.run_id)
    assert set(stored) == {qid for qid, _ in order}  # only questions are stored: no filler
    records = [r for r in server.successful()]
    assert len(records) == 28  # fillers and transcripts are never asked
    first_meeting = [m for m, _ in group["order"][:2]]
    assert first_meeting[0] != first_meeting[1]  # switches meeting every question
    for turn, record in enumerate(records):
        transcripts = [m for m in record.messages if m["role"] == "user"
                       and m["content"].startswith(ANSWER_PROMPT_START)]
        assert len(transcripts) == 2
        assert [transcript_of(m) in t["content"] for m, t in
                zip(group["meetings"], transcripts, strict=True)] == [True, True]
        acks = [m for m in record.messages if m["content"] == ACKNOWLEDGEMENT]
        assert len(acks) == 2 and all(m["role"] == "assistant" for m in acks)
        qid, text = order[turn]
        assert record.last_user == text.strip()
        asked = [m["content"] for m in record.messages if m["role"] == "user"
                 and not m["content"].startswith(("What are these sums?", ANSWER_PROMPT_START))]
        assert asked == [t.strip() for _, t in order[: turn + 1]]
        meta = stored[qid][1]
        meeting = group["order"][turn][0]
        assert meta["span"] == words_between(record.messages, meeting)
        assert meta["span_target"] == SPAN and meta["turn"] == turn
        assert abs(meta["span"] - SPAN) <= 0.05 * SPAN, (turn, meta["span"])


def test_killed_interleaved_run_resumes_without_asking_twice(
        url: str, server: FakeOpenAIServer) -> None:
    engine = get_engine(url)
    with pytest.raises(KeyboardInterrupt):
        generate_run(engine, spec(interleave=SHORT), backend(server), progress=StopAfter(9))
    run_id, = rows(url, "SELECT id FROM run WHERE model = 'served-model'")[0]
    before = responses(url, run_id)
    assert len(before) == 9
    plan = config(url, run_id)["interleave_plan"]
    cut = len(server.successful())
    report = generate_run(engine, spec(interleave=SHORT), backend(server, concurrency=2))
    assert (report.skipped, report.written, report.status) == (9, 19, "done")
    assert config(url, run_id)["interleave_plan"] == plan  # the stored conversation
    asked = Counter(r.last_user for r in server.successful())
    assert sorted(asked.values()) == [1] * 28
    resumed = server.successful()[cut]
    answers = [m["content"] for m in resumed.messages if m["role"] == "assistant"
               and m["content"].startswith("A: ")]
    by_number = {(m, n): qid for qid, m, n, _ in questions(url)}
    first = [by_number[(m, n)] for m, n in plan["groups"][0]["order"][:9]]
    assert answers == [before[qid][0] for qid in first]  # goes on from its stored answers


def test_span_longer_than_the_transcripts_allow_is_recorded(url: str,
                                                            server: FakeOpenAIServer) -> None:
    """A span shorter than the later transcript cannot be met: the real span is recorded."""
    report = generate_run(get_engine(url), spec(interleave=Interleaving(2, 20, switch=4,
                                                                         named=True)),
                          backend(server, concurrency=2))
    stored = responses(url, report.run_id)
    plan = config(url, report.run_id)["interleave_plan"]["groups"][0]
    assert plan["fillers"][0] == []  # no filler can shorten a span
    first = plan["meetings"][0]
    by_number = {(m, n): qid for qid, m, n, _ in questions(url)}
    spans = [stored[by_number[(m, n)]][1]["span"] for m, n in plan["order"] if m == first]
    assert min(spans) > 20  # longer than asked, and said so
    order = [m for m, _ in plan["order"]]
    assert order[:8] == [order[0]] * 4 + [order[4]] * 4 and order[0] != order[4]
    record = server.successful()[0]
    assert record.last_user.startswith("About meeting ")
    assert sum(m["content"].startswith("Meeting A.\n\n") for m in record.messages) == 1


def test_grouping_is_seeded_and_leftovers_are_not_asked() -> None:
    meetings = [f"m{i}" for i in range(7)]
    groups, left = group_meetings(meetings, 3, seed=1)
    assert [len(g) for g in groups] == [3, 3] and len(left) == 1
    assert sorted(m for g in groups for m in g) + left == sorted(meetings) or \
        sorted([*(m for g in groups for m in g), *left]) == sorted(meetings)
    assert group_meetings(meetings, 3, seed=1) == (groups, left)
    assert group_meetings(meetings, 3, seed=2) != (groups, left)
    assert question_order({"a": 3, "b": 1}, ["a", "b"], 2) == [
        ("a", 0), ("a", 1), ("b", 0), ("a", 2)]
    assert filler_pairs(5, 0, 1, [3, 1]) == filler_pairs(5, 0, 1, [3, 1])
    pair = filler_pairs(5, 0, 1, [2])
    a, b = (int(x) for x in pair[0]["content"].split("? ")[1].split(", ")[0].split(" + "))
    assert pair[1]["content"].startswith(f"{a + b}, ")


def test_interleaving_settings_are_checked(url: str) -> None:
    from elitr_core.backends.fake import FakeBackend

    engine = get_engine(url)
    for bad, match in ((spec(interleave=Interleaving(4)), "2 or 3"),
                       (spec(interleave=Interleaving(2, -1)), "--span"),
                       (spec(mode="st"), "--mode mt"),
                       (spec(system_prompt=True), "--system-prompt")):
        with pytest.raises(UserError, match=match):
            generate_run(engine, bad, FakeBackend())
    generate_run(engine, spec(), FakeBackend())
    with pytest.raises(UserError, match=r"interleave .*--variant"):
        generate_run(engine, spec(interleave=Interleaving(2, SPAN, switch=2)), FakeBackend())


def test_fake_backend_interleaved_resume_on_postgres_and_sqlite(bundled_db: str) -> None:
    from elitr_core.backends.fake import FakeBackend

    set_transcripts(bundled_db)
    engine = get_engine(bundled_db)
    with pytest.raises(KeyboardInterrupt):
        generate_run(engine, spec(), FakeBackend(), progress=StopAfter(5))
    report = generate_run(engine, spec(), FakeBackend())
    assert (report.skipped, report.written, report.status) == (5, 23, "done")
    stored = responses(bundled_db, report.run_id)
    assert len(stored) == 28
    assert all(abs(meta["span"] - SPAN) <= 0.05 * SPAN for _, meta in stored.values())


def test_a_span_beyond_the_context_is_refused_by_default(url: str, tmp_path) -> None:
    """The truncation policy of every run: a conversation longer than the model's context is
    refused (one sentence naming the fix), nothing is stored, and the run is marked failed."""
    import torch

    from elitr_core.backends.hf_engine import HFEngine
    from tests.elitr_core.backends.tiny_model import build_tiny_llama

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        folder = build_tiny_llama(tmp_path / "tiny")
        small = HFEngine(str(folder), device="cpu", max_context=512)
        # a span the context holds, with two transcripts the conversation does not fit
        with pytest.raises(UserError, match="truncation='middle'"):
            generate_run(get_engine(url), spec(model="tiny", interleave=Interleaving(2, 400),
                                               decoding=DecodingConfig(max_new_tokens=4)),
                         small)
        # a span the context cannot hold is refused before any run exists
        with pytest.raises(UserError, match="--span 2,000 does not fit the model's 512-token "
                                            "context with --max-new-tokens 4: give at most 508"):
            generate_run(get_engine(url), spec(model="tiny", variant="long",
                                               interleave=Interleaving(2, 2000),
                                               decoding=DecodingConfig(max_new_tokens=4)),
                         small)
    finally:
        torch.set_num_threads(threads)
    (run_id, status), = rows(url, "SELECT id, status FROM run WHERE model = 'tiny'")
    assert status == "failed" and responses(url, run_id) == {}
    assert "truncation" in config(url, run_id)["failures"][-1]["error"]


def test_three_meetings_without_a_span(url: str, server: FakeOpenAIServer) -> None:
    """K = 3 and no --span: three transcripts back to back, no filler, the questions cycling
    through the three meetings; the run is Conv-int3 with no span in its name."""
    three = (*MEETINGS, "meeting_en_test2_003")
    set_transcripts(url, three)
    report = generate_run(get_engine(url), spec(meetings=three, interleave=Interleaving(3)),
                          backend(server, concurrency=2))
    assert report.label == "served-model Conv-int3 test2 seed 2023"
    (variant,), = rows(url, "SELECT variant FROM run WHERE id = :r", r=report.run_id)
    assert variant == ""
    group, = config(url, report.run_id)["interleave_plan"]["groups"]
    assert sorted(group["meetings"]) == sorted(three) and group["fillers"] == [[], [], []]
    assert len({m for m, _ in group["order"][:3]}) == 3
    for record in server.successful():
        said = [m for m in record.messages if m["content"].startswith(ANSWER_PROMPT_START)]
        assert [transcript_of(m) in t["content"] for m, t in
                zip(group["meetings"], said, strict=True)] == [True] * 3
        assert not any(m["content"].startswith("What are these sums?")
                       for m in record.messages)
    assert len(responses(url, report.run_id)) == len(group["order"]) == report.total


class _StopWhilePlanning(FakeBackend):
    """The fake backend, interrupted (as by Ctrl-C) after counting ``after`` texts."""

    def __init__(self, after: int) -> None:
        super().__init__()
        self.left = after

    def count_tokens(self, text: str) -> int:
        self.left -= 1
        if self.left < 0:
            raise KeyboardInterrupt
        return super().count_tokens(text)


def test_a_span_past_any_context_is_refused_at_once_and_no_run_is_left(
        bundled_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 41: --span had no upper bound and filler planning grew with its square (10^6
    ran past a minute and left the run 'running')."""
    import time

    from elitr_core.cli.main import main
    from tests.dbstate import snapshot

    set_transcripts(bundled_db)
    before = snapshot(bundled_db)
    started = time.monotonic()
    assert main(["generate", "--backend", "fake", "--model", "m", "--setting", "conv",
                 "--mode", "mt", "--split", "test2", "--meetings", ",".join(MEETINGS),
                 "--interleave", "2", "--span", "1000000", "--db", bundled_db]) == 2
    assert time.monotonic() - started < 10
    err = capsys.readouterr().err
    assert err == ("error: --span 1,000,000 is more than the 131,072 whitespace words planned "
                   "for the fake backend, which does not know its model's context: give at "
                   "most 131,072\n")
    assert snapshot(bundled_db) == before
    # planning stopped half-way (Ctrl-C) leaves the run failed, never 'running'
    with pytest.raises(KeyboardInterrupt):
        generate_run(get_engine(bundled_db), spec(model="stopped", interleave=SHORT),
                     _StopWhilePlanning(after=50))
    (status,), = rows(bundled_db, "SELECT status FROM run WHERE model = 'stopped'")
    assert status == "failed"


def test_filler_planning_is_linear_in_the_span(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every filler pair is drawn once: ten times the span, about ten times the random draws
    (before, sizing drew every pair again for each pair after it: a hundred times)."""
    import random

    from elitr_core.generation import interleave

    draws: list[int] = []

    class Counting(random.Random):
        def random(self) -> float:
            draws.append(1)
            return super().random()

    monkeypatch.setattr(interleave.random, "Random", Counting)
    made = []
    for tokens in (10_000, 100_000):
        draws.clear()
        sums = interleave.size_fillers(1, 0, 0, tokens, lambda text: len(text.split()))
        made.append(len(draws))
        words = sum(len(m["content"].split()) for m in filler_pairs(1, 0, 0, sums))
        assert tokens <= words <= tokens + 4  # reached, overshooting by at most one sum
    assert made[1] < 12 * made[0], made
