"""The ``hf`` engine's prefill in length buckets against one forward of all rows padded to the
longest, and against the plain model on each whole sequence (tiny random Llama, float32)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from elitr_core.backends import hf_waves
from elitr_core.backends.hf_engine import HFEngine
from elitr_core.backends.hf_memory import BucketLimits, plan_buckets
from elitr_core.backends.hf_waves import prefill, shared_attention, shared_forward
from elitr_core.backends.shared_prefix import SharedPrefixBatch
from tests.elitr_core.backends.tiny_model import build_tiny_llama

ONE_BUCKET = BucketLimits(min_tokens=10**9, max_tokens=10**9)
SMALL_BUCKETS = BucketLimits(min_tokens=0, max_tokens=10**9)
PREFIXES = (60, 23, 0)  # three groups (meetings); the last shares no prefix
SUFFIXES = (300, 290, 150, 140, 41, 40, 7, 3)  # longest first, as the waves order them
GROUPS = (0, 1, 1, 0, 1, 1, 2, 2)  # the 41 and 40 rows: group 1 alone


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HFEngine]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # two shared cores
    yield HFEngine(str(build_tiny_llama(Path(tmp_path_factory.mktemp("tiny-llama")))),
                    device="cpu")
    torch.set_num_threads(threads)


def tokens(count: int, seed: int) -> list[int]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(5, 400, (count,), generator=gen).tolist()


def run(backend: HFEngine, limits: BucketLimits,
        monkeypatch: pytest.MonkeyPatch) -> tuple[torch.Tensor, torch.Tensor, SharedPrefixBatch]:
    """Prefill every row with ``limits``, then one decode step: (first logits, next logits,
    the batch)."""
    monkeypatch.setattr(hf_waves, "bucket_limits", lambda device: limits)
    prefixes = []
    for group, length in enumerate(PREFIXES):
        cache, _ = backend.prefix_cache(tokens(length, seed=group), None)
        prefixes.append([(k, v) for k, v, *_ in cache] if cache is not None else [])
    suffixes = [tokens(n, seed=10 + row) for row, n in enumerate(SUFFIXES)]
    starts = [PREFIXES[group] for group in GROUPS]
    batch = SharedPrefixBatch(prefixes, GROUPS, max(SUFFIXES) + 1, backend.device)
    with torch.inference_mode(), shared_attention(backend):
        first = prefill(backend, batch, suffixes, starts)
        feed = first.argmax(-1)[:, None]
        positions = torch.tensor([[s + len(x)] for s, x in zip(starts, suffixes, strict=True)])
        after = shared_forward(backend, batch, feed, positions)
    return first, after, batch


def test_bucketed_prefill_computes_what_one_forward_computes(
        backend: HFEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(plan_buckets(SUFFIXES, ONE_BUCKET)) == 1
    assert len(plan_buckets(SUFFIXES, SMALL_BUCKETS)) == 5  # group 1 alone, then group 2 alone
    one_first, one_after, one = run(backend, ONE_BUCKET, monkeypatch)
    first, after, bucketed = run(backend, SMALL_BUCKETS, monkeypatch)
    # The same pads, keys and values where they count, the same first-token logits, and a
    # decode step over the buffers the buckets filled gives the same logits.
    assert torch.equal(bucketed.valid, one.valid) and bucketed.length == one.length
    for layer in one.keys:
        kept = one.valid[:, : one.length]
        assert torch.allclose(bucketed.keys[layer][:, :, : one.length].transpose(1, 2)[kept],
                              one.keys[layer][:, :, : one.length].transpose(1, 2)[kept],
                              atol=1e-5), layer
    assert torch.allclose(first, one_first, atol=1e-5)
    assert torch.allclose(after, one_after, atol=1e-5)
    # And the plain model on each row's whole sequence (prefix + suffix), unpadded.
    for row, group in enumerate(GROUPS):
        ids = torch.tensor([tokens(PREFIXES[group], seed=group) + tokens(SUFFIXES[row],
                                                                         seed=10 + row)])
        with torch.inference_mode():
            plain = backend.model(input_ids=ids).logits[0, -1]
        assert torch.allclose(first[row], plain, atol=1e-4), row
