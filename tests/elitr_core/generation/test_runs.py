"""Generation runs over the real ``openai`` client and a loopback server: protocol, resume, config.

The server records every request, so "no question asked twice" is checked on what it saw, and
"no duplicate" on the database (one response per run and question).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from db.engine import get_engine
from elitr_core.backends.base import DecodingConfig, Message
from elitr_core.backends.openai_backend import OpenAIBackend
from elitr_core.errors import UserError
from elitr_core.generation.runs import GenerationSpec, generate_run
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


def last_line_reply(messages: list[Message]) -> str:
    """Answer with the last line of the last user turn (the question), so answers differ."""
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


def backend(server: FakeOpenAIServer, concurrency: int = 1, retries: int = 0) -> OpenAIBackend:
    return OpenAIBackend("served-model", base_url=server.base_url, concurrency=concurrency,
                         max_retries=retries, backoff_base=0.001)


def spec(**changes: Any) -> GenerationSpec:
    values: dict[str, Any] = {"model": "served-model", "setting": "qa", "mode": "st",
                              "split": "test2", "meetings": MEETINGS,
                              "decoding": DecodingConfig(max_new_tokens=64)}
    values.update(changes)
    return GenerationSpec(**values)


def asked_questions(server: FakeOpenAIServer) -> Counter[str]:
    """How often each question was answered by the server (its last user line).

    One-token prefix-cache warm-ups (``max_tokens=1``) are not answers and are left out.
    """
    return Counter(r.last_user.strip().splitlines()[-1] for r in server.successful()
                   if r.body.get("max_tokens") != 1)


def warm_ups(server: FakeOpenAIServer) -> int:
    return sum(r.body.get("max_tokens") == 1 for r in server.successful())


def test_single_turn_run_writes_one_answer_per_question(url: str,
                                                        server: FakeOpenAIServer) -> None:
    report = generate_run(get_engine(url), spec(), backend(server, concurrency=4))
    qs = questions(url)
    stored = responses(url, report.run_id)
    assert set(stored) == {q[0] for q in qs} and report.written == len(qs) == 28
    assert report.status == "done" and report.skipped == 0
    texts = {q[0]: q[3].strip() for q in qs}
    for qid, (answer, meta) in stored.items():
        assert answer == "A: " + texts[qid]
        assert meta["prompt_tokens"] > 0 and meta["finish_reason"] == "stop"
        assert "cached_tokens" in meta and meta["attempts"] == 1
    # one conversation per question: the answer prompt, the transcript, then the question
    for record in server.successful():
        (message,) = record.messages
        assert message["role"] == "user" and message["content"].startswith(ANSWER_PROMPT_START)
        meeting = message["content"].split("This is ")[1].split(".")[0]
        assert transcript_of(meeting) in message["content"]
    assert sorted(asked_questions(server).values()) == [1] * 28
    assert warm_ups(server) == len({q[1] for q in qs})  # one per meeting
    # the server's prefix cache is warm for the meeting's later questions
    assert report.usage["cached_tokens"] > 0


def test_run_config_records_how_answers_were_made(url: str, server: FakeOpenAIServer) -> None:
    nucleus = DecodingConfig(temperature=0.6, top_p=0.9, repetition_penalty=1.1,
                             max_new_tokens=32)
    report = generate_run(get_engine(url), spec(decoding=nucleus, seed=2024, qa_markers=True),
                          backend(server))
    (config_json, status, backend_name), = rows(
        url, "SELECT config, status, backend FROM run WHERE id = :i", i=report.run_id)
    import json

    config = json.loads(config_json) if isinstance(config_json, str) else config_json
    assert status == "done" and backend_name == "openai"
    assert config["decoding"] == {"temperature": 0.6, "top_p": 0.9, "repetition_penalty": 1.1,
                                  "max_new_tokens": 32, "seed": 2024}
    assert config["backend"]["base_url"] == server.base_url
    assert config["backend"]["model"] == "served-model" and config["model"] == "served-model"
    assert config["qa_markers"] is True and config["length_instruction"] is False
    assert config["truncation"] is None and config["chat_template"] is True
    assert len(config["prompt_hash"]) == 12 and config["versions"]["openai"]
    assert config["questions"] == 28 and config["meetings"] == list(MEETINGS)
    body = server.successful()[-1].body  # an answer, not the one-token warm-up
    assert (body["temperature"], body["top_p"], body["seed"], body["max_tokens"]) == (
        0.6, 0.9, 2024, 32)
    assert body["repetition_penalty"] == 1.1  # extra_body lands at the top level
    assert body["messages"][0]["content"].endswith(" ANSWER:")


def test_killed_single_turn_run_resumes_without_asking_twice(url: str,
                                                             server: FakeOpenAIServer) -> None:
    engine = get_engine(url)
    with pytest.raises(KeyboardInterrupt):
        generate_run(engine, spec(), backend(server), progress=StopAfter(5))
    (status, ), = rows(url, "SELECT status FROM run WHERE model = 'served-model'")
    assert status == "failed"
    first = asked_questions(server)
    assert sum(first.values()) == 5
    progress = StopAfter(10_000)
    report = generate_run(engine, spec(), backend(server), progress=progress)
    assert progress.started == [23] and report.skipped == 5 and report.written == 23
    assert len(responses(url, report.run_id)) == 28
    assert sorted(asked_questions(server).values()) == [1] * 28  # nothing asked twice
    sent = len(server.records)
    again = generate_run(engine, spec(), backend(server))  # a third run has nothing to do
    assert again.written == 0 and again.skipped == 28 and len(server.records) == sent


def test_dead_server_fails_the_run_and_a_rerun_finishes_it(url: str,
                                                           server: FakeOpenAIServer) -> None:
    calls = {"n": 0}

    def fail_after_six(messages: list[Message]) -> float:
        calls["n"] += 1
        if calls["n"] > 6:  # the server fails for good from the 7th request on
            server.script.failures = [500] * 1000
        return 0.0

    server.script.latency = fail_after_six
    engine = get_engine(url)
    with pytest.raises(UserError, match="HTTP 500"):
        generate_run(engine, spec(), backend(server, concurrency=1))
    (status, config), = rows(url, "SELECT status, config FROM run WHERE model = 'served-model'")
    assert status == "failed" and "HTTP 500" in str(config)
    server.script.latency, server.script.failures = 0.0, ()
    report = generate_run(engine, spec(), backend(server, concurrency=4))
    assert report.skipped == 6 - 2 and report.status == "done"  # 2 were the warm-ups
    assert len(responses(url, report.run_id)) == 28
    assert sorted(asked_questions(server).values()) == [1] * 28


def test_multi_turn_conversations_grow_and_resume_mid_conversation(
        url: str, server: FakeOpenAIServer) -> None:
    engine = get_engine(url)
    with pytest.raises(KeyboardInterrupt):
        generate_run(engine, spec(mode="mt"), backend(server), progress=StopAfter(9))
    run_id = rows(url, "SELECT id FROM run WHERE model = 'served-model'")[0][0]
    before = responses(url, run_id)
    assert len(before) == 9
    cut = len(server.successful())
    report = generate_run(engine, spec(mode="mt"), backend(server, concurrency=2))
    stored = responses(url, run_id)
    assert report.written == 19 and len(stored) == 28
    assert sorted(asked_questions(server).values()) == [1] * 28
    by_meeting = {m: [q for q in questions(url) if q[1] == m] for m in MEETINGS}
    for meeting, qs in by_meeting.items():
        records = [r for r in server.successful() if f"This is {meeting}." in
                   r.messages[0]["content"]]
        assert len(records) == len(qs)
        for turn, record in enumerate(records):
            # turn k: the first user turn, then k (answer, question) pairs
            assert len(record.messages) == 1 + 2 * turn
            assert record.last_user.strip().endswith(qs[turn][3].strip())
            answers = [m["content"] for m in record.messages if m["role"] == "assistant"]
            assert answers == [stored[q[0]][0] for q in qs[:turn]]
        assert stored[qs[-1][0]][1]["turn"] == len(qs) - 1
        # the resumed conversation went on from its stored answers, not from the beginning
        kept = sum(1 for q in qs if q[0] in before)
        resumed = [r for r in records if r in server.successful()[cut:]]
        assert len(records) - len(resumed) == kept
        assert len(resumed[0].messages) == 1 + 2 * kept
    assert all(0 < sum(q[0] in before for q in qs) for qs in by_meeting.values())


def test_czech_questions_markers_length_instruction_and_system_prompt(
        url: str, server: FakeOpenAIServer) -> None:
    report = generate_run(
        get_engine(url),
        spec(language="cs", qa_markers=True, length_instruction=True, system_prompt=True,
             meetings=MEETINGS[:1]),
        backend(server, concurrency=4))
    czech = dict(((r[0]), (r[1], r[2])) for r in rows(
        url, "SELECT question_id, qa_text, reference FROM questiontranslation "
             "WHERE language = 'cs'"))
    stored = responses(url, report.run_id)
    assert len(stored) == 12
    sent = {r.messages[1]["content"] for r in server.successful()}
    expected = {f"QUESTION: {czech[q][0].strip()}\nAnswer this question with "
                f"{len(czech[q][1].split())} words. ANSWER:" for q in stored}
    assert sent == expected
    for record in server.successful():
        system = record.messages[0]
        assert system["role"] == "system" and system["content"].startswith(ANSWER_PROMPT_START)
        assert transcript_of(MEETINGS[0]) in system["content"]  # English transcript


def test_stored_run_with_other_settings_is_refused_unless_a_variant(
        url: str, server: FakeOpenAIServer) -> None:
    engine = get_engine(url)
    generate_run(engine, spec(meetings=MEETINGS[:1]), backend(server, concurrency=4))
    with pytest.raises(UserError, match="qa_markers False -> True.*--variant"):
        generate_run(engine, spec(meetings=MEETINGS[:1], qa_markers=True), backend(server))
    other = generate_run(engine, spec(meetings=MEETINGS[:1], qa_markers=True, variant="qa-m"),
                         backend(server, concurrency=4))
    assert other.written == 12
    assert len(rows(url, "SELECT id FROM run WHERE model = 'served-model'")) == 2


def test_missing_transcripts_and_bad_settings_are_user_errors(bundled_sqlite: str) -> None:
    from elitr_core.backends.fake import FakeBackend

    engine = get_engine(bundled_sqlite)
    set_transcripts(bundled_sqlite, MEETINGS[:1])
    with pytest.raises(UserError) as error:
        generate_run(engine, spec(), FakeBackend())
    assert "meeting_en_test2_002" in str(error.value)
    assert "meeting_en_test2_001" not in str(error.value)
    assert "python -m elitr_core transcripts" in str(error.value)
    with pytest.raises(UserError, match="--mode mt"):
        generate_run(engine, spec(setting="conv", mode="st"), FakeBackend())
    with pytest.raises(UserError, match="unknown meeting"):
        generate_run(engine, spec(meetings=("meeting_en_test2_999",)), FakeBackend())
    assert rows(bundled_sqlite, "SELECT id FROM run WHERE model = 'served-model'") == []


def test_fake_backend_conv_multi_turn_on_postgres_and_sqlite(bundled_db: str) -> None:
    from elitr_core.backends.fake import FakeBackend

    set_transcripts(bundled_db)
    engine = get_engine(bundled_db)
    with pytest.raises(KeyboardInterrupt):
        generate_run(engine, spec(setting="conv", mode="mt"), FakeBackend(),
                     progress=StopAfter(4))
    report = generate_run(engine, spec(setting="conv", mode="mt"), FakeBackend())
    assert (report.skipped, report.written, report.status) == (4, 24, "done")
    assert len(responses(bundled_db, report.run_id)) == 28
