"""The ``hf`` backend against plain ``model.generate`` on a tiny random Llama (float32, CPU).

The reference ("naive") path re-encodes every conversation with the tokenizer's chat template
and calls ``model.generate`` on it alone, with no cache sharing and no padding. Greedy answers
of the backend must equal it token for token.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from elitr_core.backends import lse_attention, shared_prefix
from elitr_core.backends.base import (
    Completion,
    Conversation,
    DecodingConfig,
    Message,
    collect,
    complete,
)
from elitr_core.backends.hf_cache import common_token_prefix, truncate_tokens
from elitr_core.backends.hf_engine import HFEngine
from elitr_core.backends.hf_memory import wave_bytes
from elitr_core.errors import UserError
from tests.elitr_core.backends.tiny_model import WORDS, build_tiny_llama, synthetic_transcript

# The CPU has no compiled flex_attention: "fused" runs the same public op eagerly.
pytestmark = pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")

PROMPT = (
    "The following is the transcript of a meeting with multiple participants, where utterances "
    "start with the speaker's anonymized name (for instance (PERSON4)) and may span over "
    "several lines.\n\n{transcript}\n\nAs a professional conversational assistant, your task is "
    "to answer questions about the meeting by making inferences from the provided transcript."
    "\n\n"
)
QUESTIONS = [
    "Who talked about the budget?",
    "When?",
    "What did (PERSON4) say about the server pipeline release next week and the demo?",
    "How many slides?",
    "Who will review the paper for [ORGANIZATION2] tomorrow?",
]
GREEDY = DecodingConfig(max_new_tokens=24)


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    # Two shared cores: one torch thread avoids oversubscription (40x faster per step here).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def backend(model_dir: Path) -> HFEngine:
    return HFEngine(str(model_dir), device="cpu")


@pytest.fixture(scope="module")
def transcript() -> str:
    return synthetic_transcript(25, seed=7)


def st_conversations(transcript: str, questions: list[str]) -> list[list[Message]]:
    prefix = PROMPT.format(transcript=transcript)
    return [[{"role": "user", "content": prefix + question}] for question in questions]


def reference_ids(backend: HFEngine, messages: list[Message]) -> list[int]:
    """Chat-template token ids computed directly with the tokenizer (not ``backend.encode``)."""
    text = backend.tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True
    )
    return list(backend.tokenizer(text, add_special_tokens=False).input_ids)


def naive_generate(backend: HFEngine, ids: list[int], decoding: DecodingConfig) -> tuple[str, int]:
    """Greedy ``model.generate`` on one unpadded prompt: (answer text, generated token count)."""
    inputs = torch.tensor([ids])
    with torch.inference_mode():
        output = backend.model.generate(
            inputs,
            attention_mask=torch.ones_like(inputs),
            do_sample=False,
            max_new_tokens=decoding.max_new_tokens,
            repetition_penalty=decoding.repetition_penalty,
            pad_token_id=backend.tokenizer.pad_token_id,
        )
    new = output[0, len(ids) :].tolist()
    return backend.tokenizer.decode(new, skip_special_tokens=True).strip(), len(new)


def multi_turn(backend: HFEngine, turns: list[str], answered: list[str] | None = None,
               decoding: DecodingConfig = GREEDY) -> list[Completion]:
    """One multi-turn conversation's completions of its remaining turns."""
    return collect(backend, [Conversation([], turns, answered or [])], decoding)[0]


def meetings(groups: list[tuple[str, list[list[Message]]]]) -> list[Conversation]:
    """Single-turn conversations of several meetings, each meeting's under its cache key."""
    return [Conversation.single(c, key) for key, conversations in groups for c in conversations]


def assert_same_as_naive(completion: Completion, naive: tuple[str, int]) -> None:
    assert (completion.text, completion.completion_tokens) == naive


# ----------------------------------------------------------------------------- helpers
def test_common_token_prefix_by_hand() -> None:
    assert common_token_prefix([[1, 5, 7, 9], [1, 5, 8], [1, 5, 7]]) == 2
    assert common_token_prefix([[3, 4], [3, 4, 5]]) == 2
    assert common_token_prefix([[3], [4]]) == 0
    assert common_token_prefix([]) == 0


def test_truncate_tokens_by_hand() -> None:
    ids = list(range(10))
    assert truncate_tokens(ids, 5, "middle") == [0, 1, 7, 8, 9]
    assert truncate_tokens(ids, 4, "left") == [6, 7, 8, 9]
    assert truncate_tokens(ids, 12, "middle") == ids
    with pytest.raises(UserError, match="truncation policy"):
        truncate_tokens(ids, 4, "right")


# ----------------------------------------------------------------------------- single-turn
@pytest.mark.parametrize(("batch_size", "penalty"), [(1, 1.0), (3, 1.0), (8, 1.0), (3, 1.1)])
def test_prefix_reuse_equals_naive_generate(
    backend: HFEngine, transcript: str, batch_size: int, penalty: float
) -> None:
    backend.batch_size = batch_size
    decoding = DecodingConfig(max_new_tokens=24, repetition_penalty=penalty)
    conversations = st_conversations(transcript, QUESTIONS)
    seen: dict[int, Completion] = {}
    backend.generate([Conversation.single(c) for c in conversations], decoding,
                     lambda i, turn, c: seen.setdefault(i, c))
    completions = [seen[i] for i in sorted(seen)]
    prompts = [reference_ids(backend, conversation) for conversation in conversations]
    shared = common_token_prefix(prompts)
    assert len({len(prompt) for prompt in prompts}) == len(prompts)  # suffixes really differ
    for prompt, completion in zip(prompts, completions, strict=True):
        assert_same_as_naive(completion, naive_generate(backend, prompt, decoding))
        assert completion.prompt_tokens == len(prompt)
        assert completion.cached_tokens == shared > 100
    # Some rows stop at EOS while others run on, so rows leave the batch mid-way.
    assert {c.finish_reason for c in completions} == {"stop", "length"}
    assert sorted(seen) == list(range(len(QUESTIONS)))


def test_token_prefix_differs_from_string_prefix(backend: HFEngine, transcript: str) -> None:
    # Find a word BPE merged into one token whose truncated spelling tokenizes differently.
    tokenizer = backend.tokenizer
    base = PROMPT.format(transcript=transcript) + "Tell me about the"
    word = next(
        w
        for w in WORDS
        if len(w) > 4 and len(tokenizer(f" {w}", add_special_tokens=False).input_ids) == 1
    )
    questions = [f"Tell me about the {word}", f"Tell me about the {word[:-1]}Q"]
    conversations = st_conversations(transcript, questions)
    prompts = [reference_ids(backend, conversation) for conversation in conversations]
    string_prefix = os.path.commonprefix([c[0]["content"] for c in conversations])
    assert string_prefix == base + f" {word[:-1]}"
    prefix_ids = reference_ids(backend, [{"role": "user", "content": string_prefix}])
    prefix_ids = prefix_ids[: len(prefix_ids) - 2]  # drop the template's "\n<|assistant|>\n" part
    # Tokenizing the common *string* prefix gives ids that are not a prefix of the first prompt.
    assert prompts[0][: len(prefix_ids)] != prefix_ids
    shared = common_token_prefix(prompts)
    assert shared < len(prefix_ids)
    completions = complete(backend, conversations, GREEDY)
    for prompt, completion in zip(prompts, completions, strict=True):
        assert completion.cached_tokens == shared
        assert_same_as_naive(completion, naive_generate(backend, prompt, GREEDY))


def test_cache_key_reuses_prefix_across_calls(backend: HFEngine, transcript: str) -> None:
    backend.batch_size = 2
    conversations = st_conversations(transcript, QUESTIONS[:2])
    first = complete(backend, conversations[:1], GREEDY, cache_key="meeting_en_dev_001")
    second = complete(backend, conversations[1:], GREEDY, cache_key="meeting_en_dev_001")
    prompts = [reference_ids(backend, conversation) for conversation in conversations]
    assert first[0].cached_tokens == 0
    assert second[0].cached_tokens == common_token_prefix(prompts)
    for prompt, completion in zip(prompts, first + second, strict=True):
        assert_same_as_naive(completion, naive_generate(backend, prompt, GREEDY))


@pytest.mark.parametrize("path", ["fused", "math", "math in chunks"])
def test_meetings_decode_together_and_match_naive(
    backend: HFEngine, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # batch_size 3 over 2 x 4 questions: the second batch holds rows of both meetings, whose
    # prefixes differ in length (stacked, the shorter one padded). The prefix attention runs
    # through the per-group kernel (flex_attention), or the math path (padding masked), whole
    # or (with a 4 KiB score budget, suffixes too) chunk by chunk.
    monkeypatch.setattr(shared_prefix, "FUSED", path == "fused")
    if path == "fused":  # the public flex_attention, eager here (compiled on CUDA)
        monkeypatch.setattr(shared_prefix, "fused_kernel", lambda q: lse_attention.flex_with_lse)
    if path == "math in chunks":
        monkeypatch.setattr(shared_prefix, "SCORE_BYTES_PER_CHUNK", 4096)
    backend.batch_size = 3
    groups = [(f"m{seed}",
               st_conversations(synthetic_transcript(lines, seed=seed), QUESTIONS[:4]))
              for seed, lines in ((7, 25), (8, 31))]
    seen: list[tuple[int, int]] = []
    results: dict[int, Completion] = {}

    def on_result(index: int, turn: int, completion: Completion) -> None:
        seen.append((index, turn))
        results[index] = completion

    backend.generate(meetings(groups), GREEDY, on_result)
    assert sorted(seen) == [(i, 0) for i in range(8)]
    for number, (_, conversations) in enumerate(groups):
        prompts = [reference_ids(backend, c) for c in conversations]
        shared = common_token_prefix(prompts)
        for position, prompt in enumerate(prompts):
            completion = results[4 * number + position]
            assert_same_as_naive(completion, naive_generate(backend, prompt, GREEDY))
            assert completion.cached_tokens == shared > 100


def test_default_waves_hold_what_free_memory_allows(
    backend: HFEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No batch_size: with plenty of free memory both meetings' 8 questions go in one wave;
    # with room for about three rows, in several waves. Answers are the same either way.
    import elitr_core.backends.hf_engine as hf

    backend.batch_size = None
    groups = [(f"w{seed}",
               st_conversations(synthetic_transcript(lines, seed=seed), QUESTIONS[:4]))
              for seed, lines in ((11, 22), (12, 28))]
    planned: list[list[range]] = []
    plan = backend.waves

    def waves(rows: Any, max_new_tokens: int) -> list[range]:
        planned.append(plan(rows, max_new_tokens))
        if len(planned) == 1:  # the three-row budget of the second call
            budget.append(wave_bytes(rows[:3], max_new_tokens, backend._token_bytes))
        return planned[-1]

    budget: list[int] = [1 << 60]
    monkeypatch.setattr(backend, "waves", waves)
    monkeypatch.setattr(hf, "memory_budget", lambda device: budget[-1])
    together = collect(backend, meetings(groups), GREEDY)
    apart = collect(backend, meetings(groups), GREEDY)
    assert planned[0] == [range(0, 8)]
    assert len(planned[1]) >= 3 and max(map(len, planned[1])) <= 3
    assert [[c.text for c in g] for g in apart] == [[c.text for c in g] for g in together]
    conversations = [c for _, group in groups for c in group]
    for conversation, (completion,) in zip(conversations, apart, strict=True):
        prompt = reference_ids(backend, conversation)
        assert_same_as_naive(completion, naive_generate(backend, prompt, GREEDY))


def test_transcript_cache_is_held_once_not_per_row(backend: HFEngine, transcript: str) -> None:
    backend.batch_size, backend.peak_kv_bytes = 8, 0
    conversations = st_conversations(transcript, QUESTIONS)
    complete(backend, conversations, GREEDY)
    prompts = [reference_ids(backend, c) for c in conversations]
    shared = common_token_prefix(prompts)
    longest_suffix = max(len(p) - shared for p in prompts)
    config = backend.model.config
    head_dim = config.hidden_size // config.num_attention_heads
    # keys + values, every layer, float32: bytes one cached token costs.
    per_token = 2 * config.num_hidden_layers * config.num_key_value_heads * head_dim * 4
    rows = len(QUESTIONS)
    expected = per_token * (shared + rows * (longest_suffix + GREEDY.max_new_tokens))
    assert backend.peak_kv_bytes == expected
    assert backend.peak_kv_bytes < 2 * per_token * len(prompts[0])  # not rows x transcript


def test_without_prefix_reuse_each_conversation_is_answered_alone(
    backend: HFEngine, transcript: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a sliding-window model gets: no shared cache, every prompt prefilled in full.
    monkeypatch.setattr(backend, "_reuse_ok", False)
    conversations = st_conversations(transcript, QUESTIONS[:3])
    completions = complete(backend, conversations, GREEDY)
    for conversation, completion in zip(conversations, completions, strict=True):
        prompt = reference_ids(backend, conversation)
        assert_same_as_naive(completion, naive_generate(backend, prompt, GREEDY))
        assert completion.cached_tokens == 0
    turns = mt_turns(transcript)[:3]
    completions = multi_turn(backend, turns)
    for completion, expected in zip(
        completions, naive_multi_turn(backend, "", turns, GREEDY), strict=True
    ):
        assert_same_as_naive(completion, expected)
        assert completion.cached_tokens == 0


# ----------------------------------------------------------------------------- multi-turn
def naive_multi_turn(
    backend: HFEngine, first: str, turns: list[str], decoding: DecodingConfig
) -> list[tuple[str, int]]:
    messages: list[Message] = []
    answers = []
    for index, turn in enumerate(turns):
        messages.append({"role": "user", "content": first + turn if index == 0 else turn})
        answer = naive_generate(backend, reference_ids(backend, messages), decoding)
        messages.append({"role": "assistant", "content": answer[0]})
        answers.append(answer)
    return answers


def mt_turns(transcript: str) -> list[str]:
    return [PROMPT.format(transcript=transcript) + QUESTIONS[0], *QUESTIONS[1:4]]


def test_carried_cache_multi_turn_equals_naive(backend: HFEngine, transcript: str) -> None:
    turns = mt_turns(transcript)
    completions = multi_turn(backend, turns)
    naive = naive_multi_turn(backend, "", turns, GREEDY)
    for completion, expected in zip(completions, naive, strict=True):
        assert_same_as_naive(completion, expected)
    assert completions[0].cached_tokens == 0
    for previous, completion in zip(completions, completions[1:], strict=False):
        # The whole previous prompt (transcript included) came from the carried cache.
        assert completion.cached_tokens is not None and previous.prompt_tokens is not None
        assert completion.cached_tokens >= previous.prompt_tokens


@pytest.mark.parametrize("batch_size", [8, None])
def test_many_conversations_decode_together_and_match_naive(
    backend: HFEngine, batch_size: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # None: waves planned from free memory, here made so small that each conversation's turn
    # goes alone (its carried cache is still reused).
    import elitr_core.backends.hf_engine as hf

    monkeypatch.setattr(hf, "memory_budget", lambda device: 1)
    backend.batch_size = batch_size
    first = mt_turns(synthetic_transcript(25, seed=7))
    second = [PROMPT.format(transcript=synthetic_transcript(20, seed=9)) + QUESTIONS[2],
              *QUESTIONS[3:5], QUESTIONS[0]]
    alone = multi_turn(backend, second)
    plans = [Conversation([], first), Conversation([], second, [alone[0].text])]
    seen: list[tuple[int, int]] = []
    results: list[list[Completion]] = [[], []]

    def on_result(index: int, turn: int, completion: Completion) -> None:
        seen.append((index, turn))
        results[index].append(completion)

    backend.generate(plans, GREEDY, on_result)
    assert sorted(seen) == [(0, t) for t in range(4)] + [(1, t) for t in range(1, 4)]
    for completion, expected in zip(results[0], naive_multi_turn(backend, "", first, GREEDY),
                                    strict=True):
        assert_same_as_naive(completion, expected)
    # The resumed conversation continues exactly as the one-at-a-time path did.
    assert [c.text for c in results[1]] == [c.text for c in alone[1:]]
    for previous, completion in zip(results[0], results[0][1:], strict=False):
        assert completion.cached_tokens is not None and previous.prompt_tokens is not None
        assert completion.cached_tokens >= previous.prompt_tokens  # the carried cache


def test_resume_with_previous_answers_equals_tail(backend: HFEngine, transcript: str) -> None:
    turns = mt_turns(transcript)
    full = multi_turn(backend, turns)
    seen: list[int] = []
    resumed: list[Completion] = []
    conversation = Conversation([], turns, [c.text for c in full[:2]])
    backend.generate([conversation], GREEDY,
                     lambda _, turn, c: (seen.append(turn), resumed.append(c)))
    assert seen == [2, 3]
    assert [c.text for c in resumed] == [c.text for c in full[2:]]
    with pytest.raises(UserError, match="previous answers"):
        multi_turn(backend, turns[:1], ["a", "b"])


def test_template_that_rerenders_history_falls_back(
    backend: HFEngine, transcript: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The last user turn is rendered differently, so last turn's cached tokens stop matching.
    template = (
        "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>\n"
        "{% if loop.last %}NOW: {% endif %}{{ m['content'] }}"
        "{% if m['role'] == 'assistant' %}{{ eos_token }}{% endif %}\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
    )
    monkeypatch.setattr(backend.tokenizer, "chat_template", template)
    turns = mt_turns(transcript)[:3]
    completions = multi_turn(backend, turns)
    naive = naive_multi_turn(backend, "", turns, GREEDY)
    for completion, expected in zip(completions, naive, strict=True):
        assert_same_as_naive(completion, expected)
    for previous, completion in zip(completions, completions[1:], strict=False):
        assert completion.cached_tokens is not None and previous.prompt_tokens is not None
        assert 0 < completion.cached_tokens < previous.prompt_tokens


# ----------------------------------------------------------------------------- context
def test_context_overflow_is_a_user_error(model_dir: Path, transcript: str) -> None:
    small = HFEngine(str(model_dir), device="cpu", max_context=300)
    (conversation,) = st_conversations(transcript, QUESTIONS[:1])
    length = len(reference_ids(small, conversation))
    assert length > 280
    with pytest.raises(UserError) as caught:
        complete(small, [conversation], DecodingConfig(max_new_tokens=20))
    message = str(caught.value)
    for part in (f"{length} tokens", "300", "at most 280", "truncation='middle'", "'left'"):
        assert part in message


@pytest.mark.parametrize("policy", ["middle", "left"])
def test_truncation_policy_is_applied_and_recorded(
    model_dir: Path, transcript: str, policy: str
) -> None:
    small = HFEngine(str(model_dir), device="cpu", max_context=300, truncation=policy)
    assert small.describe()["truncation"] == policy
    conversations = st_conversations(transcript, QUESTIONS[:2])
    decoding = DecodingConfig(max_new_tokens=20)
    completions = complete(small, conversations, decoding)
    for conversation, completion in zip(conversations, completions, strict=True):
        ids = reference_ids(small, conversation)
        # Hand-built expectation: 140 head + 140 tail tokens, or the last 280.
        kept = ids[:140] + ids[-140:] if policy == "middle" else ids[-280:]
        assert completion.prompt_tokens == 280
        assert_same_as_naive(completion, naive_generate(small, kept, decoding))
    assert small.truncated_prompts == 2


# ----------------------------------------------------------------------------- sampling
def test_sampling_is_reproducible_and_batch_independent(
    backend: HFEngine, transcript: str
) -> None:
    conversations = st_conversations(transcript, QUESTIONS)
    sampling = DecodingConfig(temperature=0.6, top_p=0.9, max_new_tokens=16, seed=2023)

    def texts(decoding: DecodingConfig, batch_size: int) -> list[str]:
        backend.batch_size = batch_size
        return [c.text for c in complete(backend, conversations, decoding)]

    first = texts(sampling, 3)
    assert texts(sampling, 3) == first
    assert texts(sampling, 1) == first
    other_seed = DecodingConfig(temperature=0.6, top_p=0.9, max_new_tokens=16, seed=2024)
    assert texts(other_seed, 3) != first
    # A nucleus so small that only the top token survives must give the greedy answers.
    tiny_nucleus = DecodingConfig(temperature=0.6, top_p=1e-6, max_new_tokens=16, seed=1)
    assert texts(tiny_nucleus, 3) == texts(DecodingConfig(max_new_tokens=16), 3)


# ----------------------------------------------------------------------------- loading
def test_missing_model_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="could not be loaded.*no directory.*local model directory"):
        HFEngine(str(tmp_path / "no-such-model"), device="cpu")
    # A directory without a model fails inside from_pretrained: also a UserError, with the cause.
    with pytest.raises(UserError, match="(?s)could not be loaded.*local model directory") as caught:
        HFEngine(str(tmp_path), device="cpu")
    assert isinstance(caught.value.__cause__, OSError | ValueError)


def test_bad_settings_are_user_errors(model_dir: Path, backend: HFEngine) -> None:
    with pytest.raises(UserError, match="truncation"):
        HFEngine(str(model_dir), truncation="right")
    with pytest.raises(UserError, match="batch_size"):
        HFEngine(str(model_dir), batch_size=0)
    with pytest.raises(UserError, match="top_p"):
        complete(backend, [[{"role": "user", "content": "hi"}]], DecodingConfig(top_p=0.0))


def test_describe_records_model_and_versions(backend: HFEngine, model_dir: Path) -> None:
    info: dict[str, Any] = backend.describe()
    assert info["model"] == str(model_dir)
    assert (info["dtype"], info["device"], info["attn_implementation"]) == (
        "float32",
        "cpu",
        "sdpa",
    )
    assert info["torch"] == torch.__version__
    assert info["prefix_cache_reuse"] is True and info["max_context"] == 2048


def test_the_identity_holds_the_model_folder_dtype_and_context_as_resolved(
        model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's identity (``Backend.answer_options``) holds what shapes answers, as the
    engine resolved it: the folder by its full path, the dtype a device chose by default,
    the model's own context; the device and the batch size are not in it."""
    from elitr_core.backends.registry import get_backend

    monkeypatch.chdir(model_dir.parent)
    built = get_backend("hf", model="m", model_path=model_dir.name, device="cpu", batch_size=2)
    assert built.answer_options() == {
        "model_path": str(model_dir.resolve()), "revision": None, "dtype": "float32",
        "use_chat_template": True, "truncation": None,
        "max_context": built.model.config.max_position_embeddings}
    same = get_backend("hf", model_path=str(model_dir), dtype="fp32", device="cpu")
    assert same.answer_options() == built.answer_options()  # fp32 is float32
    other = get_backend("hf", model_path=str(model_dir), dtype="bf16", max_context=64,
                        device="cpu")
    assert {k: v for k, v in other.answer_options().items()
            if v != built.answer_options()[k]} == {"dtype": "bfloat16", "max_context": 64}
