"""Pairwise judge passes: battles over the real ``openai`` client and a loopback server, CREAM
on the fake backend, scheduling, resuming, and what is stored."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from db.engine import get_engine
from elitr_core.backends.base import Backend, DecodingConfig, Message, ResultCallback
from elitr_core.backends.fake import FakeBackend
from elitr_core.backends.openai_backend import OpenAIBackend
from elitr_core.errors import UserError
from elitr_core.judging.pairs import PairwiseSpec
from elitr_core.judging.pairwise_runner import pairwise_judge_run
from elitr_core.judging.runner import JudgeSpec, judge_run
from tests.elitr_core.backends.fake_openai_server import (
    FakeOpenAIServer,
    ServerScript,
    running_server,
)
from tests.elitr_core.run_helpers import rows

MODELS = ("GPT-4", "Vicuna-13B-v1.5", "LongAlpaca-7B")
N_QUESTIONS = 130  # test2


def answers(messages: list[Message]) -> tuple[str, str]:
    prompt = messages[-1]["content"]
    first = prompt.split("[The Start of Assistant A's Answer]\n", 1)[1].split("\n[The End", 1)[0]
    second = prompt.split("[The Start of Assistant B's Answer]\n", 1)[1].split("\n[The End", 1)[0]
    return first, second


def unreadable(messages: list[Message]) -> bool:
    first, second = answers(messages)
    return (len(first) + len(second)) % 9 == 0


def longer_wins(messages: list[Message]) -> str:
    """The scripted judge prefers the longer answer; about one output in nine has no verdict."""
    first, second = answers(messages)
    if unreadable(messages):
        return "Both answers have merits."
    return "[[A]]" if len(first.strip()) >= len(second.strip()) else "[[B]]"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with running_server(ServerScript(reply=longer_wins)) as fake:
        yield fake


def judge(server: FakeOpenAIServer) -> OpenAIBackend:
    return OpenAIBackend("judge-model", base_url=server.base_url, concurrency=16, max_retries=0,
                         backoff_base=0.001)


def spec(**changes: Any) -> PairwiseSpec:
    values: dict[str, Any] = {"judge_model": "judge-model", "style": "battle",
                              "evaluator": "battle-judge", "models": MODELS, "split": "test2",
                              "setting": "qa", "mode": "st"}
    return PairwiseSpec(**{**values, **changes})


def stored(url: str, slug: str = "battle-judge") -> list[dict[str, Any]]:
    found = rows(url, "SELECT ra.text, rb.text, p.\"order\", p.sample, p.status, p.reason, "
                      "p.verdict, p.raw, p.completeness_a, p.conciseness_b, p.key_facts, "
                      "p.support, p.raw_facts, ra.id < rb.id FROM pairwisejudgment p "
                      "JOIN response ra ON ra.id = p.response_a_id "
                      "JOIN response rb ON rb.id = p.response_b_id "
                      "JOIN evaluator e ON e.id = p.evaluator_id WHERE e.slug = :e", e=slug)
    keys = ("text_a", "text_b", "order", "sample", "status", "reason", "verdict", "raw",
            "completeness_a", "conciseness_b", "key_facts", "support", "raw_facts", "canonical")
    return [dict(zip(keys, r, strict=True)) for r in found]


def test_battles_in_both_orders_stored_from_the_pairs_side(bundled_sqlite: str,
                                                           server: FakeOpenAIServer) -> None:
    report = pairwise_judge_run(get_engine(bundled_sqlite), spec(), judge(server))
    judged = stored(bundled_sqlite)
    expected = N_QUESTIONS * 3 * 2  # every pair of 3 models, in both orders
    assert len(judged) == report.asked == report.calls == expected
    assert Counter(j["order"] for j in judged) == {"ab": expected // 2, "ba": expected // 2}
    assert all(j["canonical"] for j in judged)
    bad = [j for j in judged if j["status"] == "unparsed"]
    assert 10 < len(bad) < expected // 3 and report.unparsed == len(bad)
    for j in judged:
        if j["status"] == "unparsed":
            assert (j["verdict"], j["reason"]) == (None, "no [[A]], [[B]] or [[C]] verdict")
            continue
        # the judge picked the longer answer whichever order it saw them in
        winner = "a" if len(j["text_a"].strip()) >= len(j["text_b"].strip()) else "b"
        if len(j["text_a"].strip()) == len(j["text_b"].strip()):
            winner = "a" if j["order"] == "ab" else "b"  # ties go to the answer shown first
        assert j["verdict"] == winner
        assert j["raw"] in ("[[A]]", "[[B]]")
    body = server.successful()[0].body
    assert (body["temperature"], body["top_p"], body["seed"]) == (0.6, 0.9, 2023)
    assert "[The Start of Reference Answer]" in body["messages"][0]["content"]
    (kind, config), = rows(bundled_sqlite,
                           "SELECT kind, config FROM evaluator WHERE slug = 'battle-judge'")
    config = json.loads(config) if isinstance(config, str) else config
    assert (kind, config["style"], config["passes"][-1]["status"]) == ("pairwise", "battle",
                                                                        "done")
    assert config["passes"][-1]["filters"]["scheduling"] == "all"


def test_second_pass_asks_only_the_unparsed_ones(bundled_sqlite: str,
                                                 server: FakeOpenAIServer) -> None:
    engine = get_engine(bundled_sqlite)
    pairwise_judge_run(engine, spec(), judge(server))
    bad = Counter((j["text_a"], j["text_b"], j["order"]) for j in stored(bundled_sqlite)
                  if j["status"] == "unparsed")
    server.reset()
    server.script.reply = lambda m: "[[C]]"
    report = pairwise_judge_run(engine, spec(), judge(server))
    assert report.asked == sum(bad.values()) and report.skipped == N_QUESTIONS * 6 - report.asked
    judged = stored(bundled_sqlite)
    assert len(judged) == N_QUESTIONS * 6 and {j["status"] for j in judged} == {"ok"}
    assert Counter((j["text_a"], j["text_b"], j["order"]) for j in judged
                   if j["verdict"] == "tie") == bad
    server.reset()
    assert pairwise_judge_run(engine, spec(), judge(server)).asked == 0
    assert server.successful() == []


def test_baseline_and_budget_scheduling(bundled_sqlite: str) -> None:
    engine = get_engine(bundled_sqlite)
    report = pairwise_judge_run(engine, spec(baseline="GPT-4", evaluator="vs-gpt4"),
                                FakeBackend())
    assert report.asked == N_QUESTIONS * 4  # 2 pairs with the baseline, in both orders
    pairs = {tuple(r) for r in rows(
        bundled_sqlite, "SELECT DISTINCT ua.model, ub.model FROM pairwisejudgment p "
        "JOIN response ra ON ra.id = p.response_a_id JOIN run ua ON ua.id = ra.run_id "
        "JOIN response rb ON rb.id = p.response_b_id JOIN run ub ON ub.id = rb.run_id")}
    assert all("GPT-4" in pair for pair in pairs) and len(pairs) == 2
    budget = spec(pairs_per_question=1, evaluator="budget", seed=5)
    first = pairwise_judge_run(engine, budget, FakeBackend())
    assert first.asked == first.total == N_QUESTIONS * 2
    assert pairwise_judge_run(engine, budget, FakeBackend()).asked == 0  # same pairs drawn
    with pytest.raises(UserError, match="--baseline 'GPT-5' has no response here"):
        pairwise_judge_run(engine, spec(baseline="GPT-5"), FakeBackend())
    with pytest.raises(UserError, match="exclude each other"):
        pairwise_judge_run(engine, spec(baseline="GPT-4", pairs_per_question=2), FakeBackend())


class StopAfter(Backend):
    """The fake judge, killed after ``limit`` alignment calls (a crash between the steps)."""

    name = "fake"

    def __init__(self, limit: int) -> None:
        self.inner, self.limit, self.facts_calls, self.alignment_calls = FakeBackend(), limit, 0, 0

    def generate(self, conversations: Any, decoding: DecodingConfig,
                 on_result: ResultCallback) -> None:
        for index, conversation in enumerate(conversations):
            if "ALIGNMENT:" in conversation.turns[-1]:
                if self.alignment_calls >= self.limit:
                    raise ConnectionError("judge server went away")
                self.alignment_calls += 1
            else:
                self.facts_calls += 1
            self.inner.generate([conversation], decoding,
                                lambda _, turn, c, index=index: on_result(index, turn, c))


def test_cream_two_steps_resume_at_the_alignment(bundled_sqlite: str) -> None:
    engine = get_engine(bundled_sqlite)
    cream = spec(style="cream", evaluator="cream-judge", models=MODELS[:2], max_key_facts=4)
    crashing = StopAfter(limit=50)
    with pytest.raises(ConnectionError):
        pairwise_judge_run(engine, cream, crashing)
    total = N_QUESTIONS * 2
    assert crashing.facts_calls == total  # every key-facts step was asked and stored
    pending = [j for j in stored(bundled_sqlite, "cream-judge")
               if j["reason"] == "alignment not asked yet"]
    assert len(pending) == total - 50
    resumed = StopAfter(limit=10_000)
    report = pairwise_judge_run(engine, cream, resumed)
    assert resumed.facts_calls == 0 and resumed.alignment_calls == len(pending)
    assert report.asked == len(pending)
    judged = stored(bundled_sqlite, "cream-judge")
    assert len(judged) == total and {j["status"] for j in judged} == {"ok"}
    for j in judged:
        facts = json.loads(j["key_facts"]) if isinstance(j["key_facts"], str) else j["key_facts"]
        support = json.loads(j["support"]) if isinstance(j["support"], str) else j["support"]
        assert 1 <= len(facts) <= 4 and "KEY FACTS:" in j["raw_facts"]
        assert re.search(r"^Fact 1: A: ", j["raw"], re.M)
        assert len(support["a"]) == len(facts)
        assert j["completeness_a"] == sum(1 for s in support["a"] if s) / len(facts)
    (config,), = rows(bundled_sqlite, "SELECT config FROM evaluator WHERE slug='cream-judge'")
    config = json.loads(config) if isinstance(config, str) else config
    assert [p["status"] for p in config["passes"]] == ["failed", "done"]
    assert "judge server went away" in config["passes"][0]["failures"][0]["error"]


def test_too_many_key_facts_are_unparsed_and_asked_again_from_step_one(
        bundled_sqlite: str) -> None:
    engine = get_engine(bundled_sqlite)
    cream = spec(style="cream", evaluator="cream-3", models=MODELS[:2], max_key_facts=3)
    report = pairwise_judge_run(engine, cream, FakeBackend())
    bad = [j for j in stored(bundled_sqlite, "cream-3") if j["status"] == "unparsed"]
    assert bad and report.unparsed == len(bad) and report.calls == 2 * report.asked - len(bad)
    for j in bad:
        assert j["reason"] == "key facts: 4 key facts, more than the maximum 3"
        assert j["key_facts"] is None and j["raw"] is None and "4. Key fact" in j["raw_facts"]
    again = StopAfter(limit=10_000)
    assert pairwise_judge_run(engine, cream, again).asked == len(bad)
    assert again.facts_calls == len(bad) and again.alignment_calls == 0  # same seed, same output


def test_a_slug_of_absolute_scores_is_refused(bundled_sqlite: str) -> None:
    engine = get_engine(bundled_sqlite)
    with pytest.raises(UserError, match="'gpt-4' holds .*scores"):
        pairwise_judge_run(engine, spec(evaluator="gpt-4"), FakeBackend())
    pairwise_judge_run(engine, spec(evaluator="pw", models=MODELS[:2]), FakeBackend())
    with pytest.raises(UserError, match="another pairwise judge"):
        pairwise_judge_run(engine, spec(evaluator="pw", style="cream", models=MODELS[:2]),
                           FakeBackend())
    with pytest.raises(UserError, match="'pw' holds a judge pass's pairwise scores"):
        judge_run(engine, JudgeSpec(judge_model="j", style="gpt4", evaluator="pw",
                                    models=MODELS[:1], split="test2"), FakeBackend())
