"""The CLI over the ``openai`` backend against a real server nobody here wrote, on a real model.

``transformers serve`` (transformers' own OpenAI-compatible FastAPI server) runs
SmolLM2-135M-Instruct (float32, CPU, one thread) on free loopback ports; ``generate`` (QA-st
on one meeting and Conv-mt on the other, synthetic transcripts, the two runs at once) and
``judge`` go through the real CLI to it. Every stored answer must be what plain greedy
``model.generate()`` gives on the same prompt in this process (``smollm2.greedy``, the same
answers the hf engine's test compares against), with the server's token counts: so the
messages, the multi-turn history, the decoding settings and the usage we send and store are the
ones the protocol means.
The fake loopback server stays for fault injection (429/500/a killed server), which a real
server cannot give.

The plain answers are computed while the servers answer. This file runs just before
``test_smollm2.py`` on the same xdist worker (``tests/schedule.TOGETHER``), for speed only: that
module asks the same prompts and finds their plain answers already computed, instead of this one
waiting on the servers with a core idle."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from elitr_core.backends.base import Message
from elitr_core.cli.main import main
from elitr_core.data.model_text import as_generated
from elitr_core.prompts.assembly import judge_messages, multi_turn_plan, single_turn_messages
from tests.elitr_core.backends.smollm2 import (
    LINES,
    NEW_TOKENS,
    REAL_MODEL_TIMEOUT,
    Greedy,
    greedy,
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
from tests.workers import free_port

pytestmark = REAL_MODEL_TIMEOUT


# Judgments recomputed here (a 430-token prompt each): a wrong prompt or setting shows in any.
JUDGE_CHECKED = 4


def free_ports(n: int) -> list[int]:
    """``n`` distinct free loopback ports, handed to no other test of the run."""
    return [free_port() for _ in range(n)]


@dataclass
class Server:
    """A started ``transformers serve``; :meth:`ready` waits until it answers."""

    process: subprocess.Popen[bytes]
    root: str
    log: Path
    model: str

    def ready(self) -> str:
        """The base URL (``.../v1``) once ``/health`` answers 200."""
        deadline = time.monotonic() + 300  # two shared cores: loading can take a while
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"transformers serve exited: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.root}/health", timeout=5) as answer:
                    if answer.status == 200:
                        return f"{self.root}/v1"
            except OSError:
                time.sleep(0.5)
        raise RuntimeError(f"transformers serve did not start: {self.log.read_text()[-2000:]}")


@contextmanager
def serving(model: str, port: int, log: Path) -> Iterator[Server]:
    """``transformers serve`` starting on ``model`` (wait for it with :meth:`Server.ready`)."""
    command = [str(Path(sys.executable).parent / "transformers"), "serve", model, "--host",
               "127.0.0.1", "--port", str(port), "--device", "cpu", "--log-level", "warning"]
    # One thread, like the in-process reference: the same arithmetic, not just close logits.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env)
    try:
        yield Server(process, f"http://127.0.0.1:{port}", log, model)
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Server]]:
    """Two servers on SmolLM2. One answers one request at a time on one core, so the
    single-turn run (then its judge) goes to one and the multi-turn run to the other, both
    while this process computes the plain answers: three cores' work on two, not one after
    another (the suite's wall time)."""
    model, folder = str(smollm2_dir()), tmp_path_factory.mktemp("served")
    with ExitStack() as stack:
        first, second = (stack.enter_context(serving(model, port, folder / f"serve-{port}.log"))
                         for port in free_ports(2))
        yield first, second


# One meeting a run (suite time: the server's answers and the 430-token judgments were most of
# this test's CPU, 28 + 28 + 28 requests). Each property still shows: every served answer and
# judgment is checked against plain generate(), a 12-answer QA run is judged whole, and a
# 16-turn conversation carries its history. Several conversations at once keeping their own
# histories is the openai backend's, checked with the fake server
# (test_multi_turn_conversations_grow_turn_by_turn); two meetings' turns on a real model are
# the hf engine's test (test_smollm2).
QA_MEETING, CONV_MEETING = MEETINGS  # 12 questions; 16 turns (the longer conversation)


def generate(url: str, base_url: str, model: str, setting: str, mode: str,
             meeting: str) -> int:
    os.environ.setdefault("OPENAI_API_KEY", "EMPTY")
    return main(["generate", "--backend", "openai", "--base-url", base_url, "--model", model,
                 "--setting", setting, "--mode", mode, "--split", "test2", "--meetings",
                 meeting, "--max-new-tokens", str(NEW_TOKENS), "--concurrency", "8",
                 "--db", url])


def run_answers(url: str, model: str, setting: str, mode: str) -> dict[int, tuple[str, dict]]:
    (run_id,), = rows(url, "SELECT id FROM run WHERE model = :model AND setting = :s AND "
                      "mode = :m", model=model, s=setting, m=mode)
    return responses(url, run_id)


@dataclass(frozen=True)
class Asked:
    """What the CLI will ask, read from the database before it starts writing."""

    transcripts: dict[str, str]
    qa: list[tuple[int, str, int, str]]  # questions(): id, meeting, number, text
    conv: list[tuple[int, str, int, str]]
    references: dict[int, str]


def asked(url: str) -> Asked:
    references = rows(url, "SELECT id, reference FROM question")
    return Asked({meeting: stored_transcript(url, meeting) for meeting in MEETINGS},
                 questions(url), questions(url, setting="conv"),
                 {qid: str(text) for qid, text in references})


def plain_single_turn(todo: Asked) -> dict[int, Greedy]:
    """Question id -> plain greedy answer of every QA-st question."""
    return {qid: greedy(single_turn_messages(todo.transcripts[meeting], text))
            for qid, meeting, _, text in todo.qa}


def plain_multi_turn(todo: Asked) -> dict[int, Greedy]:
    """Question id -> plain greedy answer of every Conv-mt turn, each meeting's conversation
    grown with the plain answers as the server returns them (not stripped, as the openai
    backend sends them back)."""
    out: dict[int, Greedy] = {}
    for meeting in MEETINGS:
        mine = [q for q in todo.conv if q[1] == meeting]
        history, turns = multi_turn_plan(todo.transcripts[meeting], [q[3] for q in mine])
        messages: list[Message] = list(history)
        for (qid, *_), turn in zip(mine, turns, strict=True):
            messages.append({"role": "user", "content": turn})
            out[qid] = greedy(messages)
            messages.append({"role": "assistant", "content": out[qid].text})
    return out


def single_turn_then_judge(url: str, server: Server) -> None:
    """The real CLI against one server: QA-st, then the judge on its answers."""
    base_url = server.ready()
    assert generate(url, base_url, server.model, "qa", "st", QA_MEETING) == 0
    assert main(["judge", "--backend", "openai", "--base-url", base_url, "--judge-model",
                 server.model, "--style", "gpt4", "--evaluator", "served-judge", "--model",
                 server.model, "--split", "test2", "--setting", "qa", "--mode", "st",
                 "--max-new-tokens", str(NEW_TOKENS), "--db", url]) == 0


def multi_turn(url: str, server: Server) -> None:
    """The real CLI against the other server: Conv-mt (a second run writing at the same time)."""
    assert generate(url, server.ready(), server.model, "conv", "mt", CONV_MEETING) == 0


def assert_served_as_plain(answers: dict[int, tuple[str, dict]],
                           plain: dict[int, Greedy]) -> None:
    """Every answer (as the server sent it, before the storage policy) and its token counts
    are plain greedy generation's."""
    assert answers.keys() == plain.keys()
    for qid, (text, meta) in answers.items():
        expected = plain[qid]
        assert as_generated(text, meta) == expected.text, qid
        assert (meta["prompt_tokens"], meta["completion_tokens"]) == (
            expected.prompt_tokens, expected.completion_tokens), qid


def test_generate_and_judge_through_transformers_serve(
        bundled_sqlite: str, servers: tuple[Server, Server],
        capsys: pytest.CaptureFixture[str]) -> None:
    url, (server, other) = bundled_sqlite, servers
    set_transcripts(url, lines=LINES)
    todo = asked(url)
    served = [qid for qid, meeting, *_ in todo.qa if meeting == QA_MEETING]
    checked = served[::len(served) // JUDGE_CHECKED]
    # The CLI waits on the servers in threads while this one computes the plain answers; the
    # arithmetic of each is unchanged (one thread each, the same shapes). Both meetings' plain
    # answers, though each run asks one: test_smollm2 asks them all, and here they take the
    # core the servers leave free.
    with ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(single_turn_then_judge, url, server),
                pool.submit(multi_turn, url, other)]
        single, multi = plain_single_turn(todo), plain_multi_turn(todo)
        questions_by_id = {qid: text for qid, _, _, text in todo.qa}
        judge_plain = {qid: greedy(judge_messages(questions_by_id[qid], single[qid].text,
                                                  todo.references[qid])) for qid in checked}
        for run in runs:
            run.result()
    out = capsys.readouterr().out
    assert "12 answer(s) written" in out and "16 answer(s) written" in out
    assert "12 judgment(s) asked" in out

    # The server decodes greedily when asked for temperature 0 (transformers serve sets
    # do_sample=False then), so its answers are plain generate()'s, token for token.
    answers = run_answers(url, server.model, "qa", "st")
    assert_served_as_plain(answers, {qid: single[qid] for qid in served})
    texts = [text for text, _ in answers.values()]
    assert all(text.strip() for text in texts)
    # Words, not gibberish: at least the share the 28-answer run had to reach (over 20 of 28).
    assert sum(len(text.split()) >= 3 for text in texts) * 28 > 20 * len(texts)

    # Multi-turn: each turn's prompt holds every earlier turn with the server's own answer.
    turns = run_answers(url, server.model, "conv", "mt")
    mine = [qid for qid, found, _, _ in todo.conv if found == CONV_MEETING]
    assert_served_as_plain(turns, {qid: multi[qid] for qid in mine})
    assert [turns[qid][1]["turn"] for qid in mine] == list(range(len(mine)))

    judged = {qid: (status, raw) for qid, status, raw in rows(
        url, "SELECT r.question_id, s.status, s.raw FROM score s JOIN evaluator e ON "
        "e.id = s.evaluator_id JOIN response r ON r.id = s.response_id "
        "WHERE e.slug = 'served-judge'")}
    assert judged.keys() == answers.keys()  # one judgment per answer, with the server's output
    assert all(status in ("ok", "unparsed") and raw.strip() for status, raw in judged.values())
    # The judge asks for the protocol's temperature 0.6, but transformers serve samples only
    # when the model's generation config says do_sample (SmolLM2's converted one does not): a
    # temperature above 0 leaves decoding greedy. So the raw output is plain greedy generation
    # on the judge prompt (question, stored answer, reference) as our judge builds it.
    for qid in checked:
        assert judged[qid][1] == judge_plain[qid].text, qid
