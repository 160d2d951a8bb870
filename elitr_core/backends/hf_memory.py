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


def wave_bytes(rows: Sequence[PlannedRow], max_new_tokens: int, token: TokenBytes) -> int:
    """Estimated peak bytes of decoding ``rows`` together."""
    if not rows:
        return 0
    prefixes = {row.group: row.prefix for row in rows}
    longest_suffix = max(row.suffix for row in rows)
    stacked = len(prefixes) * max(prefixes.values()) + sum(prefixes.values())
    own = len(rows) * (longest_suffix + max_new_tokens)
    return token.kv * (stacked + own) + token.activations * len(rows) * longest_suffix


def plan_waves(
    rows: Sequence[PlannedRow],
    max_new_tokens: int,
    token: TokenBytes,
    budget: int,
    limit: int | None = None,
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
        if size > 1 and (too_many or wave_bytes(rows[start:end], max_new_tokens, token) > budget):
            waves.append(range(start, end - 1))
            start = end - 1
    if start < len(rows):
        waves.append(range(start, len(rows)))
    return waves


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
