"""Attention over a transcript held once: every question row attends its meeting's shared prefix.

The ``hf`` backend decodes the questions of many meetings together. Each meeting's shared
prompt head (instruction + transcript) is prefilled once into a batch-1 KV cache and never
copied; each question row owns only a preallocated buffer for its suffix and answer, written in
place. Attention of a row is split in two parts merged by their log-sum-exp (the same
decomposition as FlashAttention's split-KV / "flash-decoding"):

- the prefix part: the queries of all rows of one meeting (and the query heads sharing a KV
  head) are folded into one long query block, so the meeting's prefix keys and values are read
  once per step for all its rows (PyTorch's fused flash-attention kernel where the device and
  dtype have one, else a math path over the stacked, padded prefixes);
- the suffix part: each row against its own buffer, causal, pads masked.

Written by hand because no kept library offers it for transformers models: the paged cache of
transformers' continuous batching shares prefix blocks in memory but gathers them once per row
at every step, has no repetition penalty and no per-conversation sampling seed, and ran 10x
slower than this on a CPU (``bench/results/generation-cpu-2026-11-23.md``) and over 20x slower
on an H100 (``bench/results/generation-gpu-2026-11-23.md``).

References
----------
Dao et al. (2023), Flash-Decoding for long-context inference (split-KV with log-sum-exp
merge); Juravsky et al. (2024), Hydragen: High-Throughput LLM Inference with Shared Prefixes,
arXiv:2402.05099 (batch folded into the query for the shared prefix).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import torch
from transformers import AttentionInterface

from elitr_core.backends.lse_attention import attend_with_lse, fused_kernel, merge

ATTENTION_NAME = "elitr_shared_prefix"
"""The attention implementation name the model switches to while a :class:`SharedPrefixBatch`
runs (registered in transformers' ``AttentionInterface``)."""

KeyValues = tuple[torch.Tensor, torch.Tensor]

FUSED = False
"""Attend the prefixes with compiled ``flex_attention`` on CUDA (:func:`fused_kernel`, with the
log-sum-exp); False, the default, uses the math path on every device: on an H200 (torch 2.11,
2026-11-28, bench/results/generation-gpu-2026-11-28.md) the kernel was correct but an 8-layer
cut of the gpu-8b work had not finished after 225 s through it, 8.4 s through the math path."""

SCORE_BYTES_PER_CHUNK = 512 * 2**20
"""At most this many bytes of float32 attention scores at once, against the prefixes or the
rows' own suffixes (a decode step of 130 rows over eight 12.5k-token transcripts takes one
chunk; a prefill takes many)."""
CPU_SCORE_BYTES_PER_CHUNK = 4 * 2**20
"""On the CPU, chunks small enough for each pass over the scores to stay in the cache: half
the CPU time of one big chunk for a prefill over 2.6k-token prefixes."""


def score_budget(device: torch.device) -> int:
    """Bytes of float32 scores one chunk may hold on ``device``."""
    if device.type == "cpu":
        return min(SCORE_BYTES_PER_CHUNK, CPU_SCORE_BYTES_PER_CHUNK)
    return SCORE_BYTES_PER_CHUNK


class SharedPrefixBatch:
    """The KV state of rows decoded together: prefixes held once, suffixes per row in place.

    The groups' prefixes are stacked per layer into one ``(groups, kv_heads, longest, d)``
    tensor (the shorter ones padded and masked). The math path then attends every group's
    prefix with a fixed number of kernels whatever the number of groups (on a GPU a decode
    step is bound by kernel launches: a loop over eight meetings in each of 32 layers cost
    more than the model itself); the fused path runs one kernel per group on that group's
    own length (no padding read), so its kernel count grows with the number of groups. With
    one group the prefix tensors are used as they are; with more, they are copied once into
    the stack and the caller should drop the originals (:meth:`prefix_views` gives views of
    the stack to keep instead).

    Parameters
    ----------
    prefixes
        Per group (meeting): per layer ``(keys, values)`` of shape ``(1, kv_heads, P_g, d)``,
        or no layers at all when the group shares no prefix.
    row_groups
        The group of every row.
    capacity
        Suffix + answer tokens each row's buffer holds.
    device
        Where the buffers live.
    """

    def __init__(
        self,
        prefixes: Sequence[Sequence[KeyValues]],
        row_groups: Sequence[int],
        capacity: int,
        device: torch.device,
    ) -> None:
        lengths = [layers[0][0].shape[2] if layers else 0 for layers in prefixes]
        keys, values = _stack_prefixes(prefixes, lengths)
        valid = torch.zeros((len(row_groups), capacity), dtype=torch.bool, device=device)
        self._hold(keys, values, lengths, row_groups, valid, None)

    def _hold(
        self,
        prefix_keys: list[torch.Tensor],
        prefix_values: list[torch.Tensor],
        prefix_lengths: Sequence[int],
        row_groups: Sequence[int],
        valid: torch.Tensor,
        window: tuple[SharedPrefixBatch, slice, slice] | None,
    ) -> None:
        """Start empty: the stacked prefixes, every row's group, the rows' ``valid`` mask (its
        width is the buffers' capacity) and, for a :meth:`window`, whose buffers it views."""
        self.groups = len(prefix_lengths)
        self.capacity = valid.shape[1]
        self.keys: dict[int, torch.Tensor] = {}  # per layer, allocated at its first forward
        self.values: dict[int, torch.Tensor] = {}
        self.valid = valid
        self.length = 0
        self._new_valid: torch.Tensor | None = None
        self._allowed: torch.Tensor | None = None  # the suffix mask of the running forward
        self._window = window
        self.prefix_lengths = list(prefix_lengths)
        self.prefix_keys, self.prefix_values = prefix_keys, prefix_values
        self.prefix_mask: torch.Tensor | None = None  # (groups, 1, 1, longest), False on pads
        longest = max(self.prefix_lengths, default=0)
        if self.prefix_keys and min(self.prefix_lengths) < longest:
            at = torch.arange(longest, device=valid.device)
            lengths = torch.tensor(self.prefix_lengths, device=valid.device)
            self.prefix_mask = (at[None, :] < lengths[:, None])[:, None, None, :]
        self._set_rows(torch.tensor(list(row_groups), dtype=torch.long))

    def window(self, rows: range, positions: range) -> SharedPrefixBatch:
        """The rows ``rows`` alone, over the positions ``positions`` of their buffers.

        A prefill in length buckets: each bucket of rows is one forward of its own window
        (its suffixes right-aligned to the bucket's longest, which ends where the longest of
        all ends), so it computes its own pads only. The window's buffers and ``valid`` mask
        are views of this batch's: what its forward writes lands here. It attends the groups
        its rows belong to (from the first to the last of them: a slice of the stack, never a
        copy; rows must be ordered so that a bucket's groups are few and near). Then
        :meth:`prefilled` makes the positions part of every row's suffix.
        """
        if self.length:
            raise RuntimeError("windows prefill an empty batch")  # a bug, never user input
        groups = self.row_groups[rows.start : rows.stop]
        first, last = int(groups.min()), int(groups.max()) + 1
        lengths = self.prefix_lengths[first:last]
        longest = max(lengths)
        keys = [k[first:last, :, :longest] for k in self.prefix_keys] if longest else []
        values = [v[first:last, :, :longest] for v in self.prefix_values] if longest else []
        own = (slice(rows.start, rows.stop), slice(positions.start, positions.stop))
        view = SharedPrefixBatch.__new__(SharedPrefixBatch)
        view._hold(keys, values, lengths, (groups - first).tolist(), self.valid[own],
                   (self, *own))
        return view

    def prefilled(self, width: int) -> None:
        """Windows (:meth:`window`) filled the first ``width`` positions of every row: they
        are now part of the rows' suffixes (positions no window wrote stay masked)."""
        self.length = width

    def _buffers(self, layer: int, key: torch.Tensor,
                 value: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Layer ``layer``'s key and value buffers (rows, kv_heads, capacity, d), zeroed; a
        window's are views of its batch's."""
        if self._window is None:
            shape = (self.valid.shape[0], key.shape[1], self.capacity, key.shape[3])
            return key.new_zeros(shape), value.new_zeros(shape)
        batch, rows, positions = self._window
        if layer not in batch.keys:
            batch.keys[layer], batch.values[layer] = batch._buffers(layer, key, value)
        return batch.keys[layer][rows, :, positions], batch.values[layer][rows, :, positions]

    def _set_rows(self, row_groups: torch.Tensor) -> None:
        """Place every row in a ``(groups x per_group)`` grid of prefix query slots."""
        self.row_groups = row_groups
        groups = row_groups.tolist()
        counts = [0] * self.groups
        ranks = []
        for group in groups:
            ranks.append(counts[group])
            counts[group] += 1
        self.per_group = max(counts, default=0)
        self.counts = counts
        slots = [g * self.per_group + rank for g, rank in zip(groups, ranks, strict=True)]
        self.slots = torch.tensor(slots, dtype=torch.long, device=self.valid.device)

    def prefix_views(self, group: int) -> list[KeyValues]:
        """Group ``group``'s prefix as per-layer ``(1, kv_heads, P_g, d)`` views of the stack."""
        length = self.prefix_lengths[group]
        if not length:
            return []
        return [
            (keys[group : group + 1, :, :length], values[group : group + 1, :, :length])
            for keys, values in zip(self.prefix_keys, self.prefix_values, strict=True)
        ]

    def kv_bytes(self) -> int:
        """Bytes of keys and values held: the stacked prefixes plus every row's buffer."""
        tensors = [*self.prefix_keys, *self.prefix_values]
        tensors += [*self.keys.values(), *self.values.values()]
        return sum(t.numel() * t.element_size() for t in tensors)

    def begin(self, new_valid: torch.Tensor) -> None:
        """Announce the next forward's tokens: ``new_valid`` (rows x new) is False on pads."""
        if self.length + new_valid.shape[1] > self.valid.shape[1]:
            raise RuntimeError("the suffix buffers are full")  # a bug, never user input
        self._new_valid = new_valid.to(self.valid.device)
        self._allowed = None

    def end(self) -> None:
        """The forward is done: its tokens become part of the rows' suffixes."""
        assert self._new_valid is not None
        width = self._new_valid.shape[1]
        self.valid[:, self.length : self.length + width] = self._new_valid
        self.length += width
        self._new_valid = self._allowed = None

    def select(self, kept: torch.Tensor) -> None:
        """Keep only the rows ``kept`` (finished rows leave; prefixes stay untouched)."""
        self.keys = {layer: k.index_select(0, kept) for layer, k in self.keys.items()}
        self.values = {layer: v.index_select(0, kept) for layer, v in self.values.items()}
        self.valid = self.valid.index_select(0, kept)
        self._set_rows(self.row_groups.index_select(0, kept.cpu()))

    def _suffix_mask(self, width: int) -> torch.Tensor:
        """Which suffix keys each (row, new token) query sees, ``(rows, 1, width, end)``
        (broadcast over KV heads and the query heads sharing one): the same in every layer."""
        if self._allowed is None:
            assert self._new_valid is not None
            start, end = self.length, self.length + width
            valid = self.valid[:, :end].clone()
            valid[:, start:] = self._new_valid
            keys_at = torch.arange(end, device=valid.device)
            news_at = start + torch.arange(width, device=valid.device)
            causal = keys_at[None, :] <= news_at[:, None]
            self._allowed = valid[:, None, None, :] & causal[None, None]
        return self._allowed

    def attend(
        self, layer: int, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, scale: float
    ) -> torch.Tensor:
        """Write the new ``key``/``value`` and return the attention output (rows, q, heads, d)."""
        assert self._new_valid is not None
        rows, heads, width, head_dim = query.shape
        kv_heads = key.shape[1]
        rep = heads // kv_heads
        start, end = self.length, self.length + width
        if layer not in self.keys:
            self.keys[layer], self.values[layer] = self._buffers(layer, key, value)
        self.keys[layer][:, :, start:end] = key
        self.values[layer][:, :, start:end] = value
        # Query heads sharing a KV head are folded together: row r's (head, token) is rep*width.
        grouped = query.reshape(rows, kv_heads, rep * width, head_dim)
        out, lse = self._attend_suffixes(layer, grouped, rep, scale)
        if self.prefix_keys:
            prefix_out, prefix_lse = self._attend_prefixes(layer, grouped, scale)
            out, lse = merge((out, lse), (prefix_out, prefix_lse))
        return out.reshape(rows, heads, width, head_dim).transpose(1, 2)

    def _attend_suffixes(
        self, layer: int, grouped: torch.Tensor, rep: int, scale: float
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Every row against its own buffer, causal, pads masked, a chunk of rows at a time:
        a prefill of long suffixes (judge prompts) keeps its float32 scores within
        :data:`SCORE_BYTES_PER_CHUNK`."""
        rows, kv_heads, block, head_dim = grouped.shape
        end = self.length + block // rep
        allowed = self._suffix_mask(block // rep)
        # The query heads sharing a KV head stay one block against the keys as they are: a
        # matmul broadcasting the keys over those heads copies them (16x slower a decode step).
        keys, values = self.keys[layer][:, :, :end], self.values[layer][:, :, :end]
        chunk = max(1, score_budget(grouped.device) // (kv_heads * block * end * 4))
        parts = [attend_with_lse(grouped[at : at + chunk], keys[at : at + chunk],
                                 values[at : at + chunk], scale, allowed[at : at + chunk], rep)
                 for at in range(0, rows, chunk)]
        out = torch.cat([part[0] for part in parts]) if len(parts) > 1 else parts[0][0]
        lse = torch.cat([part[1] for part in parts]) if len(parts) > 1 else parts[0][1]
        return out, lse

    def _attend_prefixes(
        self, layer: int, grouped: torch.Tensor, scale: float
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Every row against its group's prefix: the rows of a group fold into one query block."""
        rows, kv_heads, block, head_dim = grouped.shape
        slots = self.groups * self.per_group
        folded = grouped.new_zeros((slots, kv_heads, block, head_dim)).index_copy_(
            0, self.slots, grouped
        )
        folded = (
            folded.reshape(self.groups, self.per_group, kv_heads, block, head_dim)
            .transpose(1, 2)
            .reshape(self.groups, kv_heads, self.per_group * block, head_dim)
        )
        keys, values = self.prefix_keys[layer], self.prefix_values[layer]
        kernel = fused_kernel(folded) if FUSED else None
        if kernel is not None:
            # One fused kernel per group over its own prefix length (no padding, no mask):
            # the scores never reach memory, the prefix keys and values are read once.
            parts = []
            for group, length in enumerate(self.prefix_lengths):
                query = folded[group : group + 1]
                if length and self.counts[group]:
                    got = kernel(query, keys[group : group + 1, :, :length],
                                 values[group : group + 1, :, :length], scale)
                    parts.append((got[0], got[1].float()))
                else:  # nothing to attend, or no row asks: adds nothing when merged
                    lse = torch.full(query.shape[:-1], -math.inf, device=query.device)
                    parts.append((torch.zeros_like(query), lse))
        else:
            # The scores of a prefill (every suffix token of every row against ~12k prefix
            # tokens) would not fit at once on a GPU: the query block is cut in chunks.
            per_query = self.groups * kv_heads * keys.shape[2] * 4  # float32 score bytes
            chunk = max(1, score_budget(grouped.device) // per_query)
            parts = [
                attend_with_lse(folded[:, :, at : at + chunk], keys, values, scale,
                                self.prefix_mask)
                for at in range(0, folded.shape[2], chunk)
            ]
        dim = 0 if kernel is not None else 2
        out = torch.cat([part[0] for part in parts], dim=dim)
        lse = torch.cat([part[1] for part in parts], dim=dim)
        out = (
            out.reshape(self.groups, kv_heads, self.per_group, block, head_dim)
            .transpose(1, 2)
            .reshape(slots, kv_heads, block, head_dim)
            .index_select(0, self.slots)
        )
        lse = (
            lse.reshape(self.groups, kv_heads, self.per_group, block)
            .transpose(1, 2)
            .reshape(slots, kv_heads, block)
            .index_select(0, self.slots)
        )
        return out, lse


def _stack_prefixes(
    prefixes: Sequence[Sequence[KeyValues]], lengths: Sequence[int]
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Per layer, every group's prefix keys (and values) in one zero-padded tensor."""
    template = next((layers for layers in prefixes if layers), None)
    if template is None:
        return [], []
    if len(prefixes) == 1:  # nothing to stack: the tensors as they are, never copied
        return [k for k, _ in template], [v for _, v in template]
    longest = max(lengths)
    keys_out, values_out = [], []
    for layer, (key, value) in enumerate(template):
        keys = key.new_zeros((len(prefixes), key.shape[1], longest, key.shape[3]))
        values = value.new_zeros((len(prefixes), value.shape[1], longest, value.shape[3]))
        for group, layers in enumerate(prefixes):
            if layers:
                keys[group, :, : lengths[group]] = layers[layer][0][0]
                values[group, :, : lengths[group]] = layers[layer][1][0]
        keys_out.append(keys)
        values_out.append(values)
    return keys_out, values_out


_ACTIVE: ContextVar[SharedPrefixBatch | None] = ContextVar("shared_prefix_batch", default=None)


@contextmanager
def attending(batch: SharedPrefixBatch) -> Iterator[None]:
    """The model's layers attend through ``batch`` during the block (its forward takes no
    extra argument: the attention function finds the batch here)."""
    token = _ACTIVE.set(batch)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def shared_prefix_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    *,
    scaling: float | None = None,
    **_: Any,
) -> tuple[torch.Tensor, None]:
    """The ``AttentionInterface`` function: hands the layer's attention to the active batch."""
    batch = _ACTIVE.get()
    if batch is None:
        raise RuntimeError(f"{ATTENTION_NAME} attention runs only inside attending(batch)")
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    layer = int(getattr(module, "layer_idx"))  # noqa: B009 - set by every transformers layer
    return batch.attend(layer, query, key, value, scale), None


AttentionInterface.register(ATTENTION_NAME, shared_prefix_attention)
