"""The openai backend: the real ``openai`` client over real HTTP to a loopback fake server."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator

import pytest

from elitr_core.backends.base import (
    Completion,
    Conversation,
    DecodingConfig,
    Message,
    collect,
    complete,
)
from elitr_core.backends.openai_backend import OpenAIBackend, public_url
from elitr_core.errors import UserError

try:  # the test tree may or may not be a package
    from fake_openai_server import FakeOpenAIServer, ServerScript, running_server
except ImportError:  # pragma: no cover
    from .fake_openai_server import FakeOpenAIServer, ServerScript, running_server

TRANSCRIPT = "(PERSON1) we meet on Monday about the [PROJECT1] budget " * 20
GREEDY = DecodingConfig()


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with running_server(ServerScript()) as fake:
        yield fake


def make_backend(server: FakeOpenAIServer, **options: object) -> OpenAIBackend:
    settings: dict[str, object] = {"concurrency": 4, "backoff_base": 0.001, "max_retries": 6}
    settings.update(options)
    return OpenAIBackend("fake-model", base_url=server.base_url, **settings)  # type: ignore[arg-type]


def meeting(n: int, transcript: str = TRANSCRIPT) -> list[list[Message]]:
    return [
        [{"role": "system", "content": transcript}, {"role": "user", "content": f"question {i}"}]
        for i in range(n)
    ]


def reference_prompt_tokens(messages: list[Message]) -> int:
    """Independent count of the fake server's tokens: one role marker plus the words."""
    return sum(1 + len(m["content"].split()) for m in messages)


def test_on_result_for_every_item_as_it_arrives(server: FakeOpenAIServer) -> None:
    # Later questions answer faster, so arrival order is the reverse of input order.
    server.script.latency = lambda msgs: 0.02 * (8 - int(msgs[-1]["content"].split()[-1]))
    seen: list[tuple[int, str]] = []
    make_backend(server, concurrency=8).generate(
        [Conversation.single(c) for c in meeting(8)], GREEDY,
        lambda i, _, c: seen.append((i, c.text)))
    assert sorted(seen) == [(i, f"echo: question {i}") for i in range(8)]
    assert [i for i, _ in seen] != list(range(8))  # callbacks fired as answers arrived


def test_concurrency_is_bounded(server: FakeOpenAIServer) -> None:
    server.script.latency = 0.03
    complete(make_backend(server, concurrency=3), meeting(12), GREEDY)
    assert len(server.successful()) == 12
    assert server.max_in_flight == 3  # never more, and the bound is actually used


def test_retries_on_429_and_500_are_counted(server: FakeOpenAIServer) -> None:
    server.script.failures = [429, 500]
    results = complete(make_backend(server), meeting(5), GREEDY)
    assert [c.metadata["attempts"] for c in results] == [3] * 5
    statuses = sorted(r.status for r in server.records)
    assert statuses == [200] * 5 + [429] * 5 + [500] * 5


def test_retry_after_is_respected(server: FakeOpenAIServer) -> None:
    server.script.failures = [429]
    server.script.retry_after = "0.3"
    complete(make_backend(server), meeting(1), GREEDY)
    first, second = server.records
    assert second.started - first.finished >= 0.29  # 10 ms for timer granularity
    server.reset()
    server.script.retry_after = None  # without the header: the 1 ms backoff base applies
    complete(make_backend(server), meeting(1, "other"), GREEDY)
    first, second = server.records
    assert second.started - first.finished < 0.2


def test_exhausted_retries_raise_user_error(server: FakeOpenAIServer) -> None:
    server.script.failures = [503] * 10
    with pytest.raises(UserError) as caught:
        complete(make_backend(server, max_retries=2), meeting(1), GREEDY)
    assert server.base_url in str(caught.value) and "503" in str(caught.value)
    assert len(server.records) == 3  # first attempt + 2 retries


def test_client_errors_are_not_retried(server: FakeOpenAIServer) -> None:
    server.script.api_key = "right"
    with pytest.raises(UserError, match="OPENAI_API_KEY"):
        complete(make_backend(server, api_key="wrong"), meeting(1), GREEDY)
    assert [r.status for r in server.records] == [401]


@pytest.mark.parametrize("status", [405, 415])
def test_a_server_that_is_not_openai_compatible_is_told_apart(
        server: FakeOpenAIServer, status: int) -> None:
    """A URL that answers, but not as an OpenAI-compatible API (a web server's 405 to a
    POST): the advice is about the base URL, not the decoding settings (those are 400's)."""
    server.script.failures = [status]
    with pytest.raises(UserError) as caught:
        complete(make_backend(server), meeting(1), GREEDY)
    message = str(caught.value)
    assert f"HTTP {status}" in message and "decoding" not in message
    assert "check the base URL (it ends with /v1) and that an OpenAI-compatible server is there" \
        in message


@pytest.mark.parametrize("base_url", ["", "   "])
def test_an_empty_base_url_is_refused_as_empty(base_url: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(UserError, match="the base URL is empty") as caught:
        OpenAIBackend("m", base_url=base_url)
    assert "cannot reach" not in str(caught.value)


def test_dead_server_gives_user_error_with_url() -> None:
    with socket.socket() as sock:  # a port that was free and is now closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    backend = OpenAIBackend("m", base_url=url, max_retries=2, backoff_base=0.001)
    started = time.monotonic()
    with pytest.raises(UserError, match="is it running") as caught:
        complete(backend, meeting(2), GREEDY)
    assert url in str(caught.value) and "3 attempts" in str(caught.value)
    assert time.monotonic() - started < 5


def test_warm_up_request_completes_before_the_others_start(server: FakeOpenAIServer) -> None:
    server.script.latency = 0.08
    results = complete(make_backend(server, concurrency=8), meeting(6), GREEDY, cache_key="m1")
    warm_up, *others = server.successful()
    assert (warm_up.last_user, warm_up.body["max_tokens"]) == ("question 0", 1)
    assert all(other.started >= warm_up.finished for other in others)
    assert len(others) == 6 and server.max_in_flight == 6  # then all six fan out together
    # Cached prefix: the system message, the user role marker and the word "question".
    shared = reference_prompt_tokens(meeting(1)[0][:1]) + 2
    assert [c.cached_tokens for c in results] == [reference_prompt_tokens(meeting(1)[0])] + [
        shared
    ] * 5


def test_every_meeting_in_flight_at_once(server: FakeOpenAIServer) -> None:
    server.script.latency = 0.25
    groups = [meeting(5, f"transcript of meeting {m} " * 30) for m in range(4)]
    conversations = [Conversation.single(c, f"m{m}") for m, g in enumerate(groups) for c in g]
    seen: dict[int, str] = {}
    make_backend(server, concurrency=16).generate(
        conversations, GREEDY, lambda i, _, c: seen.setdefault(i, c.text))
    assert [seen[i] for i in range(20)] == [f"echo: question {i}" for i in range(5)] * 4
    records = server.successful()
    warm_ups = [r for r in records if r.body["max_tokens"] == 1]
    answers = [r for r in records if r.body["max_tokens"] != 1]
    assert len(warm_ups) == 4 and len(answers) == 20
    # The four warm-ups went out together, and questions of several meetings overlapped.
    assert max(w.started for w in warm_ups) < min(w.finished for w in warm_ups)
    assert server.max_in_flight == 16
    for group, key in enumerate(f"m{m}" for m in range(4)):
        warm = next(w for w in warm_ups if group_of(w.body, groups) == group)
        mine = [a for a in answers if group_of(a.body, groups) == group]
        assert len(mine) == 5 and all(a.started >= warm.finished for a in mine), key


def group_of(body: dict[str, object], groups: list[list[list[Message]]]) -> int:
    messages = body["messages"]
    assert isinstance(messages, list)
    return next(i for i, g in enumerate(groups) if g[0][0] == messages[0])


def test_without_cache_key_requests_start_cold_and_together(server: FakeOpenAIServer) -> None:
    server.script.latency = 0.08
    results = complete(make_backend(server, concurrency=8), meeting(6), GREEDY)
    assert server.max_in_flight == 6
    assert [c.cached_tokens for c in results] == [0] * 6


def test_prompt_cache_key_only_when_enabled(server: FakeOpenAIServer) -> None:
    complete(make_backend(server), meeting(2), GREEDY, cache_key="m1")
    assert all("prompt_cache_key" not in r.body for r in server.records)  # off for non-OpenAI
    server.reset()
    complete(make_backend(server, send_prompt_cache_key=True), meeting(2), GREEDY, cache_key="m1")
    assert [r.body["prompt_cache_key"] for r in server.records] == ["m1"] * 3  # warm-up + 2


def test_rejected_prompt_cache_key_is_dropped_for_the_rest_of_the_run(
    server: FakeOpenAIServer,
) -> None:
    server.script.reject_params = frozenset({"prompt_cache_key"})
    backend = make_backend(server, send_prompt_cache_key=True)
    results = complete(backend, meeting(4), GREEDY, cache_key="m1")
    assert len(results) == 4 and not backend.send_prompt_cache_key
    # Only the warm-up request carried the key; it was retried once without it.
    assert [r.status for r in server.records] == [400] + [200] * 5  # warm-up again + 4
    complete(backend, meeting(2, "another meeting"), GREEDY, cache_key="m2")
    assert [r.status for r in server.records].count(400) == 1


def test_usage_and_finish_reason_are_recorded(server: FakeOpenAIServer) -> None:
    server.script.reply = lambda msgs: "one two three four five"
    conversations = meeting(2)
    full, cut = (
        complete(make_backend(server), conversations[:1], GREEDY)[0],
        complete(make_backend(server), conversations[1:], DecodingConfig(max_new_tokens=3))[0],
    )
    assert full.prompt_tokens == reference_prompt_tokens(conversations[0])
    assert (full.completion_tokens, full.finish_reason) == (5, "stop")
    assert (cut.text, cut.completion_tokens, cut.finish_reason) == ("one two three", 3, "length")
    assert cut.cached_tokens == reference_prompt_tokens(conversations[0][:1]) + 2


def test_decoding_parameters_reach_the_server(server: FakeOpenAIServer) -> None:
    nucleus = DecodingConfig(temperature=0.6, top_p=0.9, repetition_penalty=1.1, seed=2024)
    complete(make_backend(server), meeting(1), nucleus)
    complete(make_backend(server), meeting(1, "other"), GREEDY)
    sampled, greedy = (r.body for r in server.records)
    assert (sampled["temperature"], sampled["top_p"], sampled["seed"]) == (0.6, 0.9, 2024)
    assert (sampled["max_tokens"], sampled["repetition_penalty"]) == (512, 1.1)
    assert "repetition_penalty" not in greedy and "seed" not in greedy
    assert greedy["temperature"] == 0.0


def test_multi_turn_conversations_grow_turn_by_turn(server: FakeOpenAIServer) -> None:
    server.script.latency = 0.02
    plans = [
        Conversation([{"role": "system", "content": f"transcript {m}"}], ["q0", "q1", "q2"])
        for m in range(3)
    ]
    seen: list[tuple[int, int]] = []
    results: list[list[Completion]] = [[], [], []]

    def on_result(index: int, turn: int, completion: Completion) -> None:
        seen.append((index, turn))
        results[index].append(completion)

    make_backend(server, concurrency=2).generate(plans, GREEDY, on_result)
    assert sorted(seen) == [(c, t) for c in range(3) for t in range(3)]
    assert server.max_in_flight == 2
    for conversation, completions in enumerate(results):
        requests = [
            r.messages
            for r in server.records
            if r.messages[0]["content"] == f"transcript {conversation}"
        ]
        # Request k holds the system message and 2k+1 turns; earlier answers stay in history.
        assert [len(m) for m in requests] == [1 + 2 * k + 1 for k in range(3)]
        assert [m["content"] for m in requests[-1][2::2]] == [c.text for c in completions[:2]]


def test_a_resumed_conversation_goes_on_after_its_answers(server: FakeOpenAIServer) -> None:
    turns: list[tuple[int, Completion]] = []
    conversation = Conversation([{"role": "system", "content": "transcript"}],
                                ["q0", "q1", "q2"], ["stored answer"])
    make_backend(server).generate([conversation], GREEDY,
                                  lambda _, turn, c: turns.append((turn, c)))
    assert [turn for turn, _ in turns] == [1, 2]
    first = server.records[0].messages
    assert [m["content"] for m in first] == ["transcript", "q0", "stored answer", "q1"]


def test_an_answer_with_a_lone_surrogate_is_returned_whole_and_sent_back_as_u_fffd(
        server: FakeOpenAIServer) -> None:
    # a server may write "\\ud800" alone (JSON allows it); UTF-8 requests cannot carry it
    server.script.reply = lambda msgs: f"said\x00 \ud800 to {msgs[-1]['content']}"
    server.script.exact_reply = True
    completions = collect(make_backend(server), [
        Conversation([{"role": "system", "content": "transcript"}], ["q0", "q1"])], GREEDY)[0]
    assert [c.text for c in completions] == ["said\x00 \ud800 to q0", "said\x00 \ud800 to q1"]
    second = server.successful()[1].messages
    assert second[2] == {"role": "assistant", "content": "said\x00 \ufffd to q0"}


def test_generate_works_inside_a_running_event_loop(server: FakeOpenAIServer) -> None:
    backend = make_backend(server)

    async def caller() -> list[Completion]:
        return complete(backend, meeting(2), GREEDY)  # sync call from async code

    assert [c.text for c in asyncio.run(caller())] == ["echo: question 0", "echo: question 1"]


def test_describe_hides_credentials() -> None:
    backend = OpenAIBackend("m", base_url="http://user:secret@gpu-box:8000/v1?token=x")
    info = backend.describe()
    assert info["base_url"] == "http://gpu-box:8000/v1" and "secret" not in str(info)
    assert (info["backend"], info["model"], info["concurrency"]) == ("openai", "m", 8)
    assert public_url("https://api.openai.com/v1") == "https://api.openai.com/v1"
    assert public_url("http://u:p@[::1]:8000/v1") == "http://[::1]:8000/v1"


def test_openai_api_needs_a_key_and_has_no_repetition_penalty(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(UserError, match="OPENAI_API_KEY"):
        OpenAIBackend("gpt-4o")
    backend = OpenAIBackend("gpt-4o", api_key="sk-test")
    assert backend.send_prompt_cache_key  # on by default for the OpenAI API
    with pytest.raises(UserError, match="repetition penalty"):
        complete(backend, meeting(1), DecodingConfig(repetition_penalty=1.1))


@pytest.mark.parametrize(
    "options",
    [
        {"concurrency": 0},
        {"max_retries": -1},
        {"timeout": 0},
        {"base_url": "localhost:8000/v1"},
        {"base_url": "http://localhost:port/v1"},
    ],
)
def test_bad_settings_are_user_errors(options: dict[str, object]) -> None:
    settings: dict[str, object] = {"base_url": "http://localhost:1/v1", **options}
    with pytest.raises(UserError):
        OpenAIBackend("m", **settings)  # type: ignore[arg-type]


def test_a_failing_callback_stops_the_batch(server: FakeOpenAIServer) -> None:
    server.script.latency = 0.05

    def store(index: int, _: int, completion: Completion) -> None:
        if index == 1:
            raise RuntimeError("database is locked")

    backend = make_backend(server, concurrency=2)
    with pytest.raises(RuntimeError, match="database is locked"):
        backend.generate([Conversation.single(c) for c in meeting(20)], GREEDY, store)
    assert len(server.records) < 20  # the rest were cancelled, not sent
    assert collect(backend, [], GREEDY) == []
