"""Wave planning of the ``hf`` backend: bytes per token from a model config, waves in budget."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig

from elitr_core.backends.hf_memory import (
    CPU_BUCKETS,
    GPU_BUCKETS,
    PAD_SHARE,
    BucketLimits,
    PlannedRow,
    TokenBytes,
    memory_budget,
    plan_buckets,
    plan_waves,
    wave_bytes,
)

# Llama-3.1-8B's shape (its config.json): 32 layers, 8 KV heads of 128, MLP 14336.
LLAMA_8B = LlamaConfig(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                       num_attention_heads=32, num_key_value_heads=8, vocab_size=128256)


def test_token_bytes_of_llama_8b_in_bf16() -> None:
    token = TokenBytes.of(LLAMA_8B, torch.bfloat16)
    # The figure quoted for Llama-3.1-8B: 128 KiB of KV cache per token in 16-bit.
    assert token.kv == 128 * 1024
    assert token.activations == (3 * 14336 + 4 * 4096) * 2
    assert TokenBytes.of(LLAMA_8B, torch.float32).kv == 2 * token.kv


def test_wave_bytes_counts_each_prefix_stacked_once_and_each_row_its_suffix() -> None:
    token = TokenBytes(kv=10, activations=1)
    rows = [PlannedRow(0, 100, 5), PlannedRow(0, 100, 7), PlannedRow(1, 60, 3)]
    # Stack: 2 groups x longest 100 (+ the 160 prefill tokens it is built from); rows: 3 x (7
    # + 20 new); activations: 3 rows x 7 suffix tokens.
    assert wave_bytes(rows, 20, token) == 10 * (200 + 160 + 3 * 27) + 3 * 7
    assert wave_bytes([], 20, token) == 0


def qa_st_test2_rows() -> list[PlannedRow]:
    """130 questions over 8 meetings of ~12.5k tokens, ~30-token suffixes (QA-st test2)."""
    sizes = [18, 17, 16, 16, 16, 16, 16, 15]
    return [PlannedRow(group, 12_500 + 40 * group, 25 + (index % 9))
            for group, count in enumerate(sizes) for index in range(count)]


def test_the_whole_split_is_one_wave_when_memory_allows() -> None:
    rows = qa_st_test2_rows()
    token = TokenBytes.of(LLAMA_8B, torch.bfloat16)
    needed = wave_bytes(rows, 150, token)
    assert 2e9 < needed < 60e9  # what an H100 with an 8B model loaded has free
    assert plan_waves(rows, 150, token, needed) == [range(0, 130)]


@pytest.mark.parametrize("share", [0.05, 0.2, 0.5])
def test_waves_are_consecutive_cover_every_row_and_fit_the_budget(share: float) -> None:
    rows = qa_st_test2_rows()
    token = TokenBytes.of(LLAMA_8B, torch.bfloat16)
    budget = int(wave_bytes(rows, 150, token) * share)
    waves = plan_waves(rows, 150, token, budget)
    assert len(waves) > 1
    assert [i for wave in waves for i in wave] == list(range(len(rows)))
    for wave in waves:  # (a row that alone is over the budget goes alone)
        assert len(wave) == 1 or wave_bytes(rows[wave.start : wave.stop], 150, token) <= budget
    # Greedy: each wave but the last could not take its next row.
    for wave in waves[:-1]:
        assert wave_bytes(rows[wave.start : wave.stop + 1], 150, token) > budget


def test_a_row_over_budget_gets_a_wave_of_its_own_and_the_limit_caps_waves() -> None:
    token = TokenBytes(kv=1, activations=0)
    rows = [PlannedRow(0, 10, 1), PlannedRow(1, 1000, 1), PlannedRow(2, 10, 1)]
    assert plan_waves(rows, 1, token, budget=100) == [range(0, 1), range(1, 2), range(2, 3)]
    assert plan_waves(rows[:1] * 5, 1, token, 10**9, limit=2) == [range(0, 2), range(2, 4),
                                                                  range(4, 5)]


def test_buckets_bound_the_activations_a_wave_plans_for() -> None:
    token = TokenBytes(kv=0, activations=1)
    rows = [PlannedRow(0, 0, 500)] * 100 + [PlannedRow(0, 0, 9000)]
    assert wave_bytes(rows[:100], 1, token) == 100 * 500  # one forward of every row
    assert wave_bytes(rows[:100], 1, token, bucket_tokens=8192) == 8192
    assert wave_bytes(rows, 1, token, bucket_tokens=8192) == 9000  # a row alone over the cap


def test_bucket_plan_by_hand() -> None:
    limits = BucketLimits(min_tokens=0, max_tokens=1000)
    assert plan_buckets([100, 95, 60, 58, 10], limits) == [range(0, 2), range(2, 4), range(4, 5)]
    # Small buckets take any row; the cap splits rows of one length; a long row goes alone.
    assert plan_buckets([100, 95, 60, 58, 10], BucketLimits(300, 1000)) == [range(0, 3),
                                                                          range(3, 5)]
    assert plan_buckets([400] * 5, limits) == [range(0, 2), range(2, 4), range(4, 5)]
    assert plan_buckets([5000, 10], limits) == [range(0, 1), range(1, 2)]
    assert plan_buckets([], limits) == []
    with pytest.raises(ValueError, match="longest suffix first"):
        plan_buckets([10, 20], limits)


@pytest.mark.parametrize("limits", [CPU_BUCKETS, GPU_BUCKETS, BucketLimits(0, 4000)])
def test_buckets_bound_their_padding_and_size(limits: BucketLimits) -> None:
    # Suffixes like the judge prompts' (276-660 tokens, 390 rows) and QA questions' (3-40).
    gen = torch.Generator().manual_seed(5)
    judge = torch.randint(276 - 166, 660 - 166, (390,), generator=gen).tolist()
    questions = torch.randint(3, 41, (130,), generator=gen).tolist()
    for long, lengths in ((True, sorted(judge, reverse=True)),
                         (False, sorted(questions, reverse=True))):
        buckets = plan_buckets(lengths, limits)
        assert [i for bucket in buckets for i in bucket] == list(range(len(lengths)))
        for bucket in buckets:
            rows = lengths[bucket.start : bucket.stop]
            tokens = len(rows) * rows[0]
            assert len(rows) == 1 or tokens <= limits.max_tokens
            assert min(rows) >= (1 - PAD_SHARE) * rows[0] or tokens <= limits.min_tokens
        padded = sum(len(bucket) * lengths[bucket.start] for bucket in buckets)
        if long or limits.min_tokens == 0:  # few pads, but for the small buckets of short rows
            assert padded <= sum(lengths) / (1 - PAD_SHARE)
        one_forward = len(lengths) * lengths[0]
        assert padded <= one_forward


def test_cpu_budget_is_a_share_of_available_memory() -> None:
    with open("/proc/meminfo") as meminfo:
        available = next(int(line.split()[1]) * 1024 for line in meminfo
                         if line.startswith("MemAvailable:"))
    budget = memory_budget(torch.device("cpu"))
    assert 0.3 * available < budget < 0.7 * available
