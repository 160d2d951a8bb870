"""How many questions the ``hf`` backend decodes together: as many as free memory holds.

Without ``--batch-size``, the rows of a call (questions of every meeting, or the current turns
of every conversation) are cut into waves in input order, each wave as large as its estimated
memory allows: a wave holds its meetings' prefixes (stacked, padded to the longest; the prefill
caches exist beside the stack while it is built), every row's suffix and answer keys/values,
and the activations of one layer's forward over the rows' suffixes. The estimate is checked
against the device's free memory (CUDA: what the allocator can still get; CPU: the system's
available memory) times a share that leaves room for the allocator's fragmentation, kernels'
workspaces and the logits.

Waves never change answers: greedy rows are exact in any batch and each sampled row draws
from its own seeded stream (:func:`~elitr_core.backends.hf_cache.make_generator`).

Within a wave, the rows' suffixes are prefilled in buckets of similar lengths
(:func:`plan_buckets`): a forward over rows padded to the longest of the wave would spend most
of its work on pads when suffixes differ as much as judge prompts do (276 to 660 tokens).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from transformers import PretrainedConfig

#: Share of the free memory a wave may plan for.
CUDA_SHARE = 0.8
CPU_SHARE = 0.5
#: CPU budget when the system does not say how much memory is available.
CPU_FALLBACK_BYTES = 4 * 2**30


@dataclass(frozen=True)
class TokenBytes:
    """Bytes the engine holds per token: keys and values of all layers, and the largest
    activations of one layer's forward (the MLP's up and gate projections and its input)."""

    kv: int
    activations: int

    @classmethod
    def of(cls, config: PretrainedConfig, dtype: torch.dtype) -> TokenBytes:
        """From a transformers model config (its text decoder's part) and the weights' dtype."""
        text = config.get_text_config(decoder=True)
        heads = text.num_attention_heads
        kv_heads = getattr(text, "num_key_value_heads", None) or heads
        head_dim = getattr(text, "head_dim", None) or text.hidden_size // heads
        size = torch.finfo(dtype).bits // 8
        kv = 2 * text.num_hidden_layers * kv_heads * head_dim * size
        intermediate = getattr(text, "intermediate_size", None) or 4 * text.hidden_size
        activations = (3 * intermediate + 4 * text.hidden_size) * size
        return cls(kv=kv, activations=activations)


@dataclass(frozen=True)
class PlannedRow:
    """What the planner needs of a row: its group (meeting or conversation), the length of
    that group's shared prefix, and the row's own new tokens (its suffix)."""

    group: int
    prefix: int
    suffix: int


def wave_bytes(rows: Sequence[PlannedRow], max_new_tokens: int, token: TokenBytes,
               bucket_tokens: int | None = None) -> int:
    """Estimated peak bytes of decoding ``rows`` together, their suffixes prefilled in buckets
    of at most ``bucket_tokens`` tokens (None: all rows in one forward)."""
    if not rows:
        return 0
    prefixes = {row.group: row.prefix for row in rows}
    longest_suffix = max(row.suffix for row in rows)
    stacked = len(prefixes) * max(prefixes.values()) + sum(prefixes.values())
    own = len(rows) * (longest_suffix + max_new_tokens)
    forward = len(rows) * longest_suffix
    if bucket_tokens is not None:  # a bucket of one row may exceed the cap
        forward = min(forward, max(bucket_tokens, longest_suffix))
    return token.kv * (stacked + own) + token.activations * forward


def plan_waves(
    rows: Sequence[PlannedRow],
    max_new_tokens: int,
    token: TokenBytes,
    budget: int,
    limit: int | None = None,
    bucket_tokens: int | None = None,
) -> list[range]:
    """Consecutive waves of ``rows`` (in order), each within ``budget`` bytes and ``limit`` rows.

    A row that alone exceeds the budget still gets a wave of its own (the device then says
    whether it fits).
    """
    waves: list[range] = []
    start = 0
    for end in range(1, len(rows) + 1):
        size = end - start
        too_many = limit is not None and size > limit
        estimate = wave_bytes(rows[start:end], max_new_tokens, token, bucket_tokens)
        if size > 1 and (too_many or estimate > budget):
            waves.append(range(start, end - 1))
            start = end - 1
    if start < len(rows):
        waves.append(range(start, len(rows)))
    return waves


PAD_SHARE = 0.1
"""A prefill bucket's rows are padded by at most this share of its longest suffix (unless the
bucket is small: :attr:`BucketLimits.min_tokens`)."""


@dataclass(frozen=True)
class BucketLimits:
    """The size of a prefill bucket, in rows x its longest suffix (tokens of one forward)."""

    min_tokens: int
    """Up to this size a bucket takes the next row whatever its padding: one more forward
    would cost more than the pads (a forward has a fixed cost: on a GPU reading the weights and
    launching its kernels is worth thousands of tokens of an 8B model)."""
    max_tokens: int
    """No bucket of several rows is larger: bounds one forward's activations."""


CPU_BUCKETS = BucketLimits(min_tokens=1024, max_tokens=8192)
GPU_BUCKETS = BucketLimits(min_tokens=4096, max_tokens=32768)


def bucket_limits(device: torch.device) -> BucketLimits:
    """Prefill bucket sizes for ``device``."""
    return CPU_BUCKETS if device.type == "cpu" else GPU_BUCKETS


def plan_buckets(lengths: Sequence[int], limits: BucketLimits,
                 pad_share: float = PAD_SHARE) -> list[range]:
    """Cut rows, longest suffix first, into consecutive prefill buckets.

    A bucket's rows are right-aligned to its first (longest) row and run as one forward. A row
    joins the current bucket if the bucket stays within ``limits.max_tokens`` and either the
    row's pads are at most ``pad_share`` of the bucket's longest or the bucket stays within
    ``limits.min_tokens``. So every bucket of several rows holds at most ``max_tokens``
    tokens, and it either pads each row by at most ``pad_share`` of its longest or holds at
    most ``min_tokens`` tokens (rows come longest first: once a row far from the longest has
    joined, every later one is as far).

    Parameters
    ----------
    lengths
        The rows' suffix lengths, non-increasing.
    limits
        Bucket sizes (:func:`bucket_limits`).
    pad_share
        The padding a row may get, as a share of its bucket's longest suffix.

    Returns
    -------
    list[range]
        The buckets' rows, in order, covering every row once.

    Examples
    --------
    >>> plan_buckets([100, 95, 60, 58, 10], BucketLimits(min_tokens=0, max_tokens=1000))
    [range(0, 2), range(2, 4), range(4, 5)]
    """
    if any(later > earlier for earlier, later in zip(lengths, lengths[1:], strict=False)):
        raise ValueError("plan_buckets takes the rows longest suffix first")
    buckets: list[range] = []
    start = 0
    for row in range(1, len(lengths)):
        longest = lengths[start]
        tokens = (row - start + 1) * longest
        close = lengths[row] >= (1 - pad_share) * longest
        if tokens > limits.max_tokens or not (close or tokens <= limits.min_tokens):
            buckets.append(range(start, row))
            start = row
    if lengths:
        buckets.append(range(start, len(lengths)))
    return buckets


def memory_budget(device: torch.device) -> int:
    """Bytes a wave may use on ``device`` now."""
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(free * CUDA_SHARE)
    return int(_available_system_bytes() * CPU_SHARE)


def _available_system_bytes() -> int:
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return CPU_FALLBACK_BYTES
