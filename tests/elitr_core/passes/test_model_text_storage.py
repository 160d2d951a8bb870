"""Model text through the real passes, on SQLite and PostgreSQL: answers, judge outputs,
pairwise outputs and a server's error message holding a NUL, lone surrogates (sent by the
loopback server as the JSON escapes ``"\\ud800"``), C0 controls, or more characters than a
column holds. Every run completes; every other output is stored exactly; the altered ones are
stored by the storage policy of model text (``data/model_text.py``) and counted; verdicts are
read from the output as generated; a resumed conversation continues from what the model said.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from db.engine import dispose_engines, get_engine
from elitr_core.backends.base import Backend, Completion, DecodingConfig, Message
from elitr_core.backends.fake import FakeBackend
from elitr_core.backends.openai_backend import OpenAIBackend
from elitr_core.cli.main import main
from elitr_core.data.bounds import MAX_TEXT_CHARS
from elitr_core.data.database import reading
from elitr_core.errors import UserError
from elitr_core.generation import status
from elitr_core.generation.runs import GenerationSpec, generate_run
from elitr_core.judging.pairs import PairwiseSpec
from elitr_core.judging.pairwise_runner import pairwise_judge_run
from elitr_core.judging.runner import JudgeSpec, judge_run
from tests.conftest import _forget_ready, pg_database
from tests.elitr_core.backends.fake_openai_server import ServerScript, running_server
from tests.elitr_core.run_helpers import (
    MEETINGS,
    StopAfter,
    questions,
    responses,
    rows,
    set_transcripts,
)

LONG = MAX_TEXT_CHARS + 1_000
#: What the model says to questions 1-4 of the first meeting, and how each is stored.
HOSTILE = {
    1: ("before\x00after", "before\ufffdafter"),
    2: ("lone \ud800 high and \udfff low", "lone \ufffd high and \ufffd low"),
    3: ("bell\x07 esc\x1b[31m red\x7f vt\x0b ff\x0c",
        "bell\ufffd esc\ufffd[31m red\ufffd vt\ufffd ff\ufffd"),
    4: ("y" * LONG, None),  # cut: checked by its own rule
}
#: What the model says to every other question: stored exactly.
ORDINARY = "Answer to {}:\ttab\r\nCRLF and \ufffd, \U0001F600, \u202e, e\u0301 end"


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
        ) -> Iterator[str]:
    """The bundled data with transcripts, once per backend; tests use their own run names."""
    if request.param == "sqlite":
        path = tmp_path_factory.mktemp("model-text") / "db.sqlite"
        yield _bundled(f"sqlite:///{path}")
        dispose_engines()
        _forget_ready()
        return
    with pg_database("elitr_model_text") as pg:
        yield _bundled(pg)


def _bundled(url: str) -> str:
    assert main(["init", "--db", url]) == 0
    set_transcripts(url)
    return url


def asked(messages: list[Message], url: str) -> tuple[int, str]:
    """(question id, question text) a generation prompt asks: the longest question of its
    meeting (named by its transcript) that the last user turn ends with."""
    meeting = next(m for m in MEETINGS if any(m in x["content"] for x in messages))
    last = messages[-1]["content"].rstrip()
    return max(((qid, text) for qid, where, _, text in questions(url)
                if where == meeting and last.endswith(text.strip())),
               key=lambda found: len(found[1]))


def reply_for(url: str) -> Any:
    first = {number: qid for qid, where, number, _ in questions(url) if where == MEETINGS[0]}
    hostile = {first[number]: said for number, (said, _) in HOSTILE.items()}

    def reply(messages: list[Message]) -> str:
        qid, text = asked(messages, url)
        return hostile.get(qid) or ORDINARY.format(text)

    return reply


class ScriptedFake(FakeBackend):
    """The fake backend saying what :func:`reply_for` scripts (no HTTP, no JSON on the way)."""

    def __init__(self, reply: Any) -> None:
        super().__init__()
        self.reply = reply

    def _answer(self, conversation: list[Message], decoding: DecodingConfig,
                cache_key: str | None) -> Completion:
        text = self.reply(conversation)
        return replace(super()._answer(conversation, decoding, cache_key), text=text,
                       completion_tokens=len(text.split()),
                       metadata={"cache_key": cache_key,  # a server's note, with a NUL once
                                 "note": "server\x00note" if "\x00" in text else "note"})


@pytest.fixture(params=["openai", "fake"])
def backend(request: pytest.FixtureRequest, url: str) -> Iterator[Backend]:
    if request.param == "fake":
        yield ScriptedFake(reply_for(url))
        return
    with running_server(ServerScript(reply=reply_for(url), exact_reply=True)) as server:
        yield OpenAIBackend("m", base_url=server.base_url, max_retries=0)


def spec(model: str, mode: str = "st", **changes: Any) -> GenerationSpec:
    values: dict[str, Any] = {"setting": "qa", "split": "test2", "meetings": MEETINGS,
                              "decoding": DecodingConfig(max_new_tokens=64)}
    return GenerationSpec(model=model, mode=mode, **{**values, **changes})


def cut_rule(stored: str, said: str) -> None:
    """A cut text: its start, then the marker naming exactly the characters not stored."""
    head, _, tail = stored.partition("\u2026[")
    assert len(stored) <= MAX_TEXT_CHARS and said.startswith(head)
    assert tail == f"{len(said) - len(head):,} characters not stored]"


@pytest.mark.parametrize("mode", ["st", "mt"])
def test_every_answer_is_stored_exactly_or_by_the_policy(url: str, backend: Backend,
                                                         mode: str) -> None:
    model = f"answers-{backend.name}-{mode}"
    report = generate_run(get_engine(url), spec(model, mode), backend)
    assert (report.status, report.written, report.altered) == ("done", 28, len(HOSTILE))
    by_number = {qid: number for qid, where, number, _ in questions(url) if where == MEETINGS[0]}
    stored = responses(url, report.run_id)
    assert len(stored) == 28  # nothing missing, nothing twice
    for qid, (text, meta) in stored.items():
        question = next(t for q, _, _, t in questions(url) if q == qid)
        number = by_number.get(qid)
        if number not in HOSTILE:
            assert text == ORDINARY.format(question) and "altered" not in meta
            assert backend.name != "fake" or meta["note"] == "note"
            continue
        said, expected = HOSTILE[number]
        assert meta["completion_tokens"] == len(said.split())  # the raw completion's count
        if expected is None:
            cut_rule(text, said)
            assert meta["altered"] == {"replaced": 0, "cut": len(said) - text.index("\u2026[")}
        else:
            assert text == expected
            in_meta = backend.name == "fake" and number == 1  # the server note's NUL
            assert meta["altered"] == {"replaced": expected.count("\ufffd") + in_meta, "cut": 0,
                                       "original": json.dumps(said).replace("\x7f", "\\u007f")}
        if backend.name == "fake":
            assert meta["note"] == ("server\ufffdnote" if number == 1 else "note")
    config = run_config(url, report.run_id)
    # a typed run config (generation/run_config.py) keeps an empty failure list
    assert (config.get("failures") or [], config["altered_answers"]) == ([], len(HOSTILE))
    with reading(get_engine(url)) as session:
        runs = status.generation_runs(session)
    assert next(r for r in runs if r["run"] == report.run_id)["altered"] == len(HOSTILE)


def run_config(url: str, run_id: int) -> dict[str, Any]:
    (config,), = rows(url, "SELECT config FROM run WHERE id = :r", r=run_id)
    return json.loads(config) if isinstance(config, str) else dict(config)


def test_a_conversation_resumed_after_an_altered_answer_goes_on_from_what_the_model_said(
        url: str) -> None:
    engine = get_engine(url)
    one = {"meetings": MEETINGS[:1]}  # one conversation: killed after its 3 hostile answers
    with running_server(ServerScript(reply=reply_for(url), exact_reply=True)) as server:
        backend = OpenAIBackend("m", base_url=server.base_url, max_retries=0)
        with pytest.raises(KeyboardInterrupt):
            generate_run(engine, spec("resumed", "mt", **one), backend, progress=StopAfter(3))
        server.reset()
        resumed = generate_run(engine, spec("resumed", "mt", **one), backend)
        after_kill = [r.messages for r in server.successful()]
        server.reset()
        whole = generate_run(engine, spec("resumed", "mt", variant="whole", **one), backend)
        uninterrupted = [r.messages for r in server.successful()]
    assert (resumed.skipped, resumed.written, resumed.status) == (3, 9, "done")
    assert run_config(url, resumed.run_id)["altered_answers"] == 4  # over both calls
    # the first request after the kill carries the NUL and controls the model wrote (stored
    # with U+FFFD, kept in meta), exactly as the uninterrupted run's 4th did; only the lone
    # surrogates, which no UTF-8 request carries, travel as U+FFFD in both
    assert [m["content"] for m in after_kill[0][1:6:2]] == [
        HOSTILE[1][0], HOSTILE[2][1], HOSTILE[3][0]]
    assert after_kill == uninterrupted[3:]
    assert {q: t for q, (t, _) in responses(url, resumed.run_id).items()} == \
        {q: t for q, (t, _) in responses(url, whole.run_id).items()}


def judge_reply(messages: list[Message]) -> str:
    """A judge output by the response judged (its length): a NUL and a surrogate in the
    explanation, no score with a NUL, a box too long to quote whole, else a clean output."""
    response = messages[-1]["content"].split("### Response to evaluate:")[-1]
    kind = len(response) % 5
    if kind == 0:
        return f"Close to the reference.\x00 Names\ud800 it. \\boxed{{{1 + len(response) % 10}}}"
    if kind == 1:
        return "No score here.\x00"
    if kind == 2:
        return "The box: \\boxed{" + "w" * 600 + "}"
    return "Plain feedback. \\boxed{7}"


def test_a_judge_reads_the_output_as_generated_and_stores_it_by_the_policy(url: str) -> None:
    with running_server(ServerScript(reply=judge_reply, exact_reply=True)) as server:
        report = judge_run(get_engine(url), JudgeSpec(
            judge_model="j", style="gpt4", evaluator="nul-judge", models=("GPT-4",),
            split="test2", setting="qa", mode="st"),
            OpenAIBackend("j", base_url=server.base_url, max_retries=0))
        said = {record.messages[-1]["content"]: judge_reply(record.messages)
                for record in server.successful()}
    assert report.status == "done" and report.asked == len(said) == 130
    stored = rows(url, "SELECT s.value, s.status, s.reason, s.raw FROM score s JOIN evaluator e "
                       "ON e.id = s.evaluator_id WHERE e.slug = 'nul-judge'")
    assert len(stored) == 130
    altered = 0
    for value, state, reason, raw in stored:
        if raw.startswith("Close to the reference."):
            assert (state, raw.count("\ufffd"), "\x00" in raw) == ("ok", 2, False)
            assert raw.replace("\ufffd", "?") in {s.replace("\x00", "?").replace("\ud800", "?")
                                                 for s in said.values()}
            altered += 1
        elif raw.startswith("No score here."):
            assert (value, state, reason, raw) == (None, "unparsed", "no \\boxed{} score",
                                                   "No score here.\ufffd")
            altered += 1
        elif raw.startswith("The box:"):
            assert (value, state, len(reason)) == (None, "unparsed", 512)
            assert reason.startswith("boxed content 'www") and reason.endswith(
                " characters not stored]")
            altered += 1
        else:
            assert (value, state, reason, raw) == (7.0, "ok", None, "Plain feedback. \\boxed{7}")
    assert 0 < report.altered == altered < 130 and report.ok + report.unparsed == 130
    (config,), = rows(url, "SELECT config FROM evaluator WHERE slug = 'nul-judge'")
    config = json.loads(config) if isinstance(config, str) else config
    assert config["passes"][-1]["altered"] == altered


class HostilePairwiseFake(FakeBackend):
    """The fake backend whose CREAM outputs hold a NUL and a lone surrogate in each key fact
    and in the alignment's preamble, and whose battles explain with a NUL."""

    def _pairwise_text(self, prompt: str, value: int) -> str:
        text = super()._pairwise_text(prompt, value)
        return text.replace("Key fact", "Key\x00 fact\ud800").replace(
            "Aligning.", "Aligning\x00.").replace("Compared with", "Compared\x00 with")


@pytest.mark.parametrize("style", ["cream", "battle"])
def test_pairwise_outputs_and_key_facts_are_stored_by_the_policy(url: str, style: str) -> None:
    pairwise = PairwiseSpec(judge_model="j", style=style, evaluator=f"nul-{style}",
                            models=("GPT-4", "Vicuna-13B-v1.5"), split="test2", setting="qa",
                            mode="st", max_key_facts=4)
    report = pairwise_judge_run(get_engine(url), pairwise, HostilePairwiseFake())
    assert report.status == "done" and report.ok == report.asked == report.altered > 100
    stored = rows(url, "SELECT p.status, p.verdict, p.key_facts, p.raw, p.raw_facts FROM "
                       "pairwisejudgment p JOIN evaluator e ON e.id = p.evaluator_id "
                       "WHERE e.slug = :e", e=f"nul-{style}")
    assert len(stored) == report.asked
    for state, verdict, facts, raw, raw_facts in stored:
        assert state == "ok" and "\x00" not in raw
        if style == "battle":
            assert verdict in ("a", "b", "tie") and raw.startswith("Compared\ufffd with")
            continue
        facts = json.loads(facts) if isinstance(facts, str) else facts
        assert facts and all(f.startswith("Key\ufffd fact\ufffd ") for f in facts)
        assert raw.startswith("Aligning\ufffd.") and "Key\ufffd fact\ufffd 1" in raw_facts


def test_a_server_error_with_a_nul_is_kept_by_the_policy_and_the_run_resumes(url: str) -> None:
    engine = get_engine(url)
    script = ServerScript(reply=reply_for(url), exact_reply=True, failures=[500],
                          error_message="overloaded\x00 at \ud800 once")
    with running_server(script) as server:
        backend = OpenAIBackend("m", base_url=server.base_url, max_retries=0)
        with pytest.raises(UserError, match="overloaded"):
            generate_run(engine, spec("server-error"), backend)
        server.script.failures = ()  # the server is back
        report = generate_run(engine, spec("server-error"), backend)
    assert (report.status, report.written + report.skipped) == ("done", 28)
    failure, = run_config(url, report.run_id)["failures"]
    assert "overloaded\ufffd at \ufffd once" in failure["error"]


def test_the_command_line_says_in_one_line_how_many_answers_were_altered(
        url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with running_server(ServerScript(reply=reply_for(url), exact_reply=True)) as server:
        assert main(["generate", "--backend", "openai", "--model", "cli-model", "--base-url",
                     server.base_url, "--setting", "qa", "--mode", "st", "--split", "test2",
                     "--meetings", ",".join(MEETINGS), "--db", url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2].startswith("run #") and "28 answer(s) written" in lines[-2]
    assert lines[-1].startswith(f"{len(HOSTILE)} answer(s) stored altered by the storage policy")
