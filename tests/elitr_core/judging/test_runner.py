"""Judge passes over the real ``openai`` client and a loopback server.

The judged responses are the bundled ones of LongAlpaca-7B on test2 QA-st (130 responses);
the server's replies are scripted per response so that the stored values can be checked.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from db.engine import get_engine
from elitr_core.backends.base import Message
from elitr_core.backends.fake import FakeBackend
from elitr_core.backends.openai_backend import OpenAIBackend
from elitr_core.errors import UserError
from elitr_core.judging.runner import JudgeSpec, judge_run
from tests.elitr_core.backends.fake_openai_server import (
    FakeOpenAIServer,
    ServerScript,
    running_server,
)
from tests.elitr_core.run_helpers import StopAfter, rows

MODEL = "LongAlpaca-7B"
N_RESPONSES = 130


def response_text(messages: list[Message]) -> str:
    """The response under judgment, cut out of the judge prompt."""
    prompt = messages[-1]["content"]
    return prompt.split("### Response to evaluate:\n", 1)[1].split("\n\n### Reference", 1)[0]


def score_for(response: str) -> int:
    """A score the scripted judge gives a response: 1..10, from its length."""
    return 1 + len(response) % 10


def unparsable(response: str) -> bool:
    """About one response in seven gets an output with no score."""
    return len(response) % 7 == 0


def gpt4_judge(messages: list[Message]) -> str:
    response = response_text(messages)
    if unparsable(response):
        return "The response is fine, I would give it a high mark."
    return f"Feedback: judged. \\boxed{{{score_for(response)}}}"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with running_server(ServerScript(reply=gpt4_judge)) as fake:
        yield fake


def judge(server: FakeOpenAIServer, concurrency: int = 8) -> OpenAIBackend:
    return OpenAIBackend("judge-model", base_url=server.base_url, concurrency=concurrency,
                         max_retries=0, backoff_base=0.001)


def spec(**changes: Any) -> JudgeSpec:
    values: dict[str, Any] = {"judge_model": "judge-model", "style": "gpt4",
                              "evaluator": "test-judge", "models": (MODEL,), "split": "test2",
                              "setting": "qa", "mode": "st"}
    values.update(changes)
    return JudgeSpec(**values)


def scores(url: str, slug: str = "test-judge") -> list[tuple[Any, ...]]:
    """(response text, sample, value, status, reason, raw) of an evaluator's scores."""
    return rows(url, "SELECT r.text, s.sample, s.value, s.status, s.reason, s.raw FROM score s "
                     "JOIN response r ON r.id = s.response_id JOIN evaluator e "
                     "ON e.id = s.evaluator_id WHERE e.slug = :e", e=slug)


def test_judge_pass_stores_scores_raw_outputs_and_unparsable_items(
        bundled_sqlite: str, server: FakeOpenAIServer) -> None:
    report = judge_run(get_engine(bundled_sqlite), spec(), judge(server))
    stored = scores(bundled_sqlite)
    assert len(stored) == N_RESPONSES and report.asked == N_RESPONSES
    bad = [s for s in stored if unparsable(s[0])]
    assert 5 <= len(bad) < N_RESPONSES and report.unparsed == len(bad)
    for text, sample, value, status, reason, raw in stored:
        assert sample == 0
        if unparsable(text):
            assert (value, status, reason) == (None, "unparsed", "no \\boxed{} score")
            assert raw == "The response is fine, I would give it a high mark."
        else:
            assert (value, status, reason) == (score_for(text), "ok", None)
            assert raw == f"Feedback: judged. \\boxed{{{score_for(text)}}}"
    assert all(s[2] is None or s[2] >= 1 for s in stored)  # never -1
    (kind, scale_max, config), = rows(
        bundled_sqlite, "SELECT kind, scale_max, config FROM evaluator WHERE slug='test-judge'")
    config = json.loads(config) if isinstance(config, str) else config
    assert (kind, scale_max, config["judge_model"], config["style"]) == (
        "llm", 10, "judge-model", "gpt4")
    last = config["passes"][-1]
    assert (last["status"], last["done"], last["ok"], last["unparsed"]) == (
        "done", N_RESPONSES, N_RESPONSES - len(bad), len(bad))
    body = server.successful()[0].body
    # protocol judge decoding; bundled runs have no seed, so the default 2023
    assert (body["temperature"], body["top_p"], body["max_tokens"], body["seed"]) == (
        0.6, 0.9, 1024, 2023)
    assert "### Reference answer (score 10):" in body["messages"][0]["content"]


def test_second_pass_asks_only_unparsed_items(bundled_sqlite: str,
                                              server: FakeOpenAIServer) -> None:
    engine = get_engine(bundled_sqlite)
    judge_run(engine, spec(), judge(server))
    bad = {s[0] for s in scores(bundled_sqlite) if s[3] == "unparsed"}
    server.reset()
    server.script.reply = lambda m: f"Now sure. \\boxed{{{score_for(response_text(m))}}}"
    report = judge_run(engine, spec(), judge(server))
    asked = [response_text(r.messages) for r in server.successful()]
    assert sorted(asked) == sorted(bad) and report.asked == len(bad)
    assert report.skipped == N_RESPONSES - len(bad)
    stored = scores(bundled_sqlite)
    assert len(stored) == N_RESPONSES and {s[3] for s in stored} == {"ok"}
    assert all(s[2] == score_for(s[0]) and s[4] is None for s in stored)
    server.reset()
    assert judge_run(engine, spec(), judge(server)).asked == 0 and server.successful() == []


def test_k_samples_store_k_rows_with_their_own_seeds(bundled_sqlite: str,
                                                     server: FakeOpenAIServer) -> None:
    report = judge_run(get_engine(bundled_sqlite), spec(samples=3, seed=7), judge(server, 16))
    stored = scores(bundled_sqlite)
    assert len(stored) == 3 * N_RESPONSES and report.asked == 3 * N_RESPONSES
    per_response = Counter(s[0] for s in stored)
    assert set(Counter(s[1] for s in stored).values()) == {N_RESPONSES}
    assert sum(per_response.values()) == 3 * N_RESPONSES
    seeds = Counter(r.body["seed"] for r in server.successful())
    assert seeds == {7: N_RESPONSES, 8: N_RESPONSES, 9: N_RESPONSES}


def test_prometheus_scores_are_doubled(bundled_sqlite: str, server: FakeOpenAIServer) -> None:
    def prometheus(messages: list[Message]) -> str:
        return f"Feedback: partly right. [RESULT] {1 + len(response_text(messages)) % 5}"

    server.script.reply = prometheus
    judge_run(get_engine(bundled_sqlite), spec(style="prometheus", evaluator="prom"),
              judge(server))
    stored = scores(bundled_sqlite, "prom")
    assert len(stored) == N_RESPONSES
    assert all(s[2] == 2 * (1 + len(s[0]) % 5) and s[3] == "ok" for s in stored)
    assert {s[2] for s in stored} == {2, 4, 6, 8, 10}
    prompt = server.successful()[0].body["messages"][0]["content"]
    assert "[RESULT]" in prompt and "### Reference answer (score 5):" in prompt


def test_interrupted_pass_resumes_without_duplicates(bundled_sqlite: str,
                                                     server: FakeOpenAIServer) -> None:
    engine = get_engine(bundled_sqlite)
    with pytest.raises(KeyboardInterrupt):
        judge_run(engine, spec(), judge(server, 1), progress=StopAfter(20))
    assert len(scores(bundled_sqlite)) == 20
    (config,), = rows(bundled_sqlite, "SELECT config FROM evaluator WHERE slug='test-judge'")
    last = json.loads(config)["passes"][-1] if isinstance(config, str) else config["passes"][-1]
    assert last["status"] == "failed" and "interrupted" in last["failures"][-1]["error"]
    report = judge_run(engine, spec(), judge(server, 8))
    assert report.skipped + report.asked == N_RESPONSES
    assert len(scores(bundled_sqlite)) == N_RESPONSES
    asked = Counter(response_text(r.messages) for r in server.successful())
    # no response asked twice except the unparsable ones the second pass retries
    again = {t for t, n in asked.items() if n > 1}
    assert all(unparsable(t) for t in again)


def test_judge_identity_and_imported_evaluators_are_protected(bundled_sqlite: str) -> None:
    engine = get_engine(bundled_sqlite)
    judge_run(engine, spec(models=("GPT-4",), evaluator="fake-j"), FakeBackend())
    with pytest.raises(UserError, match="choose another --evaluator"):
        judge_run(engine, spec(models=("GPT-4",), evaluator="fake-j", style="prometheus"),
                  FakeBackend())
    with pytest.raises(UserError, match="holds the ELITR-Bench release.s human scores: a "
                       "judge pass.s llm scores never go under it"):
        judge_run(engine, spec(evaluator="gold-human"), FakeBackend())
    with pytest.raises(UserError, match="no stored response matches"):
        judge_run(engine, spec(models=("no-such-model",), evaluator="x"), FakeBackend())
    with pytest.raises(UserError, match="evaluator slug"):
        judge_run(engine, spec(evaluator="bad slug!"), FakeBackend())


def test_fake_judge_unparsable_rate_and_scores_in_exports(bundled_sqlite: str) -> None:
    from db.runs import ScoreFilter
    from db.scores import score_rows
    from db.transaction import reading

    judge_run(get_engine(bundled_sqlite), spec(evaluator="fake-j"),
              FakeBackend(unparsable_rate=0.2))
    stored = scores(bundled_sqlite, "fake-j")
    unparsed = [s for s in stored if s[3] == "unparsed"]
    assert 10 <= len(unparsed) <= 45 and all(s[2] is None for s in unparsed)
    with reading(get_engine(bundled_sqlite)) as session:
        exported = score_rows(session, ScoreFilter(evaluators=("fake-j",)))
    assert len(exported) == N_RESPONSES - len(unparsed)  # analyses see only scored rows
    assert all(re.fullmatch(r"\d+(\.0)?", str(r["score"])) for r in exported)


def test_czech_runs_are_judged_with_the_czech_question_and_reference(
        bundled_sqlite: str, server: FakeOpenAIServer) -> None:
    from elitr_core.generation.runs import GenerationSpec, generate_run
    from tests.elitr_core.run_helpers import MEETINGS, set_transcripts

    set_transcripts(bundled_sqlite, MEETINGS[:1])
    engine = get_engine(bundled_sqlite)
    generate_run(engine, GenerationSpec(model="cs-model", setting="qa", mode="st",
                                        split="test2", language="cs", meetings=MEETINGS[:1]),
                 FakeBackend())
    judge_run(engine, spec(models=("cs-model",), language="cs"), judge(server))
    czech = {(q.strip(), r.strip()) for q, r in rows(
        bundled_sqlite, "SELECT t.qa_text, t.reference FROM questiontranslation t "
                        "JOIN question q ON q.id = t.question_id JOIN meeting m "
                        "ON m.id = q.meeting_id WHERE t.language = 'cs' AND m.external_id = :m",
        m=MEETINGS[0])}
    sent = set()
    for record in server.successful():
        prompt = record.messages[0]["content"]
        question = prompt.split("### Question:\n", 1)[1].split("\n\n###", 1)[0]
        reference = prompt.split("### Reference answer (score 10):\n", 1)[1].split("\n\n###")[0]
        sent.add((question, reference))
    assert sent == czech and len(sent) == 12


def test_the_pass_record_counts_what_is_stored_while_the_pass_runs(
        bundled_sqlite: str, server: FakeOpenAIServer) -> None:
    """The Runs page's ``done`` is the pass record's; ``scored`` counts the stored scores. The
    record is written in each batch's transaction, so a reader never finds them apart (it
    was written every 2 s, and lagged: done 975 against scored 1,034)."""
    from elitr_core.passes.records import NullProgress

    seen: list[tuple[int, int]] = []

    class Watch(NullProgress):
        def advance(self, count: int = 1) -> None:
            found = rows(bundled_sqlite, "SELECT e.config, (SELECT count(*) FROM score s WHERE "
                                         "s.evaluator_id = e.id) FROM evaluator e "
                                         "WHERE e.slug = 'test-judge'")
            if found:
                config, stored = found[0]
                config = json.loads(config) if isinstance(config, str) else config
                seen.append((config["passes"][-1]["done"], stored))

    server.script.latency = 0.01
    judge_run(get_engine(bundled_sqlite), spec(), judge(server, concurrency=4), progress=Watch())
    assert len(seen) > 10 and seen[-1][1] > 0
    assert all(done == stored for done, stored in seen), seen
