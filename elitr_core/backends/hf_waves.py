"""The ``hf`` backend's single-turn engine: rows of many meetings decoded in waves.

Each group's (meeting's) shared token prefix is prefilled once into a batch-1 cache (reused
from the backend's last call with the same ``cache_key``); a
:class:`~elitr_core.backends.shared_prefix.SharedPrefixBatch` stacks the prefixes of a wave's
groups, and the caches then keep views of that stack (so each prefix is held once). Rows are
taken in input order, across meetings, in waves of ``batch_size`` rows or (by default) as many
as free memory holds (:mod:`~elitr_core.backends.hf_memory`); a prefix is dropped once no later
row needs it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

import torch
from transformers import DynamicCache

from elitr_core.backends.base import Completion, DecodingConfig, ResultCallback
from elitr_core.backends.hf_cache import (
    DecodingRow,
    common_token_prefix,
    decode_rows,
    right_aligned_suffixes,
)
from elitr_core.backends.hf_memory import PlannedRow, bucket_limits, plan_buckets
from elitr_core.backends.shared_prefix import (
    ATTENTION_NAME,
    KeyValues,
    SharedPrefixBatch,
    attending,
)


class Engine(Protocol):
    """What the waves need of the model's owner
    (:class:`~elitr_core.backends.hf_engine.HFEngine`); a protocol, so this module never
    imports the engine that imports it."""

    model: Any
    device: torch.device
    attn_implementation: str
    pad_id: int
    eos_ids: set[int]
    peak_kv_bytes: int

    def waves(self, rows: Sequence[PlannedRow], max_new_tokens: int) -> list[range]:
        """The spans of rows decoded together."""

    def prefix_cache(self, prefix: list[int],
                     cache_key: str | None) -> tuple[DynamicCache | None, int]:
        """The cache of ``prefix`` and how many of its tokens were reused."""

    def prompt_ids(self, messages: Sequence[dict[str, str]],
                   decoding: DecodingConfig) -> list[int]:
        """The prompt's token ids, checked against the context."""

    def row(self, index: int, prompt: list[int], decoding: DecodingConfig,
            cached: int) -> DecodingRow:
        """A row to decode."""

    def completion(self, row: DecodingRow) -> Completion:
        """A finished row's answer."""


def decode_groups(
    backend: Engine,
    cache_keys: Sequence[str | None],
    prompts: list[list[list[int]]],
    rows: list[DecodingRow],
    decoding: DecodingConfig,
    finish: Callable[[DecodingRow], None],
) -> None:
    """Prefill each group's shared prefix once, then decode the rows wave by wave."""
    # At least one token per conversation stays out of the prefix: its logits start decoding.
    shared = [min(common_token_prefix(p), min(map(len, p)) - 1) if p else 0 for p in prompts]
    prefixes: dict[int, tuple[list[KeyValues], int]] = {}
    caches: dict[int, DynamicCache] = {}
    planned = [PlannedRow(row.group, shared[row.group], len(row.prompt) - shared[row.group])
               for row in rows]
    for span in backend.waves(planned, decoding.max_new_tokens):
        wave = rows[span.start : span.stop]
        for group in sorted({row.group for row in wave} - prefixes.keys()):
            prefix_ids = prompts[group][0][: shared[group]]
            cache, reused = backend.prefix_cache(prefix_ids, cache_keys[group])
            layers = [(k, v) for k, v, *_ in cache] if cache is not None else []
            if cache is not None:
                caches[group] = cache
            cached = shared[group] if len(prompts[group]) > 1 else reused
            prefixes[group] = (layers, cached)
        for row in wave:
            row.cached_tokens = prefixes[row.group][1]
        decode_wave(backend, wave, prefixes, caches, shared, decoding, finish)
        later = {row.group for row in rows[span.stop :]}
        for group in list(prefixes.keys() - later):
            del prefixes[group]
            caches.pop(group, None)


def keep_views(cache: DynamicCache, views: list[KeyValues]) -> None:
    """Point a prefix cache's layers at ``views`` of a stack (its own tensors are then freed).

    The backend keeps its last prefix cache for the next call with the same ``cache_key``; a
    transformers cache layer's ``keys``/``values`` may be any tensors of the right shape.
    """
    layers: list[Any] = list(cache.layers)  # full-attention layers (the backend checked)
    for layer, (keys, values) in zip(layers, views, strict=True):
        layer.keys, layer.values = keys, values


@contextmanager
def shared_attention(backend: Engine) -> Iterator[None]:
    """The model attends through the shared-prefix batch while the block runs."""
    backend.model.set_attn_implementation(ATTENTION_NAME)
    try:
        yield
    finally:
        backend.model.set_attn_implementation(backend.attn_implementation)


def decode_wave(
    backend: Engine,
    wave: list[DecodingRow],
    prefixes: dict[int, tuple[list[KeyValues], int]],
    caches: dict[int, DynamicCache],
    shared: list[int],
    decoding: DecodingConfig,
    finish: Callable[[DecodingRow], None],
) -> None:
    """Prefill the rows' suffixes (in length buckets, right-aligned, pads masked), then decode
    them together."""
    # Longest suffix first, for the buckets; groups in the order their rows come, so that a
    # bucket's groups are near each other in the stack.
    wave = sorted(wave, key=lambda row: shared[row.group] - len(row.prompt))
    groups = list(dict.fromkeys(row.group for row in wave))
    slot = {group: i for i, group in enumerate(groups)}
    suffixes = [row.prompt[shared[row.group] :] for row in wave]
    capacity = max(map(len, suffixes)) + decoding.max_new_tokens
    batch = SharedPrefixBatch(
        [prefixes[group][0] for group in groups],
        [slot[row.group] for row in wave],
        capacity,
        backend.device,
    )
    for group in groups:  # the stack holds each prefix now: the caches keep views of it
        views = batch.prefix_views(slot[group])
        prefixes[group] = (views, prefixes[group][1])
        if group in caches and views:
            keep_views(caches[group], views)
    with shared_attention(backend):
        logits = prefill(backend, batch, suffixes, [shared[row.group] for row in wave])
        backend.peak_kv_bytes = max(backend.peak_kv_bytes, batch.kv_bytes())
        step = partial(shared_forward, backend, batch)
        decode_rows(step, batch.select, wave, logits, decoding, backend.eos_ids, finish)


def prefill(backend: Engine, batch: SharedPrefixBatch, suffixes: Sequence[Sequence[int]],
            starts: Sequence[int]) -> torch.Tensor:
    """Prefill the rows' suffixes (longest first), each after its prefix of ``starts[i]``
    tokens; every row's first-token logits.

    All suffixes are right-aligned to the longest, as one forward would take them, but the
    rows run in buckets of similar lengths (:func:`~elitr_core.backends.hf_memory.plan_buckets`),
    each a forward of its :meth:`~SharedPrefixBatch.window` over its own longest suffix: the
    same keys, values and logits as one forward of all rows (within float rounding), with the
    pads of a bucket instead of the pads of the wave.
    """
    lengths = [len(suffix) for suffix in suffixes]
    longest = lengths[0]
    logits = []
    for rows in plan_buckets(lengths, bucket_limits(backend.device)):
        width = lengths[rows.start]
        ids, valid, positions = right_aligned_suffixes(
            suffixes[rows.start : rows.stop], starts[rows.start : rows.stop], backend.pad_id,
            backend.device)
        window = batch.window(rows, range(longest - width, longest))
        logits.append(shared_forward(backend, window, ids, positions, valid))
    batch.prefilled(longest)
    return torch.cat(logits) if len(logits) > 1 else logits[0]


def shared_forward(
    backend: Engine,
    batch: SharedPrefixBatch,
    input_ids: torch.Tensor,
    position_ids: torch.Tensor,
    valid: torch.Tensor | None = None,
) -> torch.Tensor:
    """One forward of the rows in ``batch`` on new tokens (``valid``: False on pads; None: no
    pads, as in a decode step); last-position logits.

    Runs inside :func:`shared_attention` (switching the attention per forward cost about
    1 ms a step for 32 layers).
    """
    batch.begin(valid if valid is not None else torch.ones_like(input_ids, dtype=torch.bool))
    with attending(batch):
        output = backend.model(
            input_ids=input_ids, position_ids=position_ids, use_cache=False, logits_to_keep=1)
    batch.end()
    return output.logits[:, -1, :]


@dataclass
class TurnState:
    """One multi-turn conversation of :func:`decode_conversations`: its state between turns."""

    plan: int
    messages: list[dict[str, str]]
    turns: Sequence[str]
    next_turn: int
    layers: list[KeyValues] = field(default_factory=list)  # its KV cache, batch 1
    #: fixed messages said before a turn (``Conversation.inserted``)
    inserted: Mapping[int, Sequence[dict[str, str]]] = field(default_factory=dict)
    cached_ids: list[int] = field(default_factory=list)  # the tokens that cache holds


def decode_conversations(
    backend: Engine,
    conversations: list[TurnState],
    decoding: DecodingConfig,
    on_result: ResultCallback,
) -> None:
    """Run many multi-turn conversations turn by turn, their current turns decoded together.

    Each conversation keeps its own KV cache (prompt + answers so far) from turn to turn; in
    a round, every conversation's new tokens are prefilled after its cache and the answers
    decoded together (in waves, as in :func:`decode_groups`). A finished row's new keys and
    values are appended to its conversation's cache.
    """
    while active := [c for c in conversations if c.next_turn < len(c.turns)]:
        rows = [_next_turn(backend, conversation, decoding) for conversation in active]
        planned = [PlannedRow(i, row.cached_tokens, len(row.prompt) - row.cached_tokens)
                   for i, row in enumerate(rows)]
        for span in backend.waves(planned, decoding.max_new_tokens):
            _one_round(backend, active[span.start : span.stop], rows[span.start : span.stop],
                       decoding, on_result)


def _next_turn(backend: Engine, conversation: TurnState,
               decoding: DecodingConfig) -> DecodingRow:
    """Add the conversation's next question; its cache is cut to what the new prompt reuses."""
    conversation.messages += [
        *conversation.inserted.get(conversation.next_turn, ()),
        {"role": "user", "content": conversation.turns[conversation.next_turn]},
    ]
    prompt = backend.prompt_ids(conversation.messages, decoding)
    reused = min(common_token_prefix([conversation.cached_ids, prompt]), len(prompt) - 1)
    conversation.layers = [(k[:, :, :reused], v[:, :, :reused]) for k, v in conversation.layers]
    if reused == 0:
        conversation.layers = []
    return backend.row(conversation.next_turn, prompt, decoding, reused)


def _one_round(
    backend: Engine,
    wave: list[TurnState],
    rows: list[DecodingRow],
    decoding: DecodingConfig,
    on_result: ResultCallback,
) -> None:
    # Longest suffix first, for the prefill's buckets (each conversation is its own group).
    order = sorted(range(len(rows)), key=lambda i: rows[i].cached_tokens - len(rows[i].prompt))
    wave, rows = [wave[i] for i in order], [rows[i] for i in order]
    for slot, row in enumerate(rows):
        row.group, row.position = slot, slot
    suffixes = [r.prompt[r.cached_tokens :] for r in rows]
    batch = SharedPrefixBatch(
        [c.layers for c in wave],
        list(range(len(wave))),
        len(suffixes[0]) + decoding.max_new_tokens,
        backend.device,
    )
    for slot, conversation in enumerate(wave):  # held once, in the stack
        conversation.layers = batch.prefix_views(slot)
    current = list(rows)

    def finish(row: DecodingRow) -> None:
        conversation = wave[row.group]
        at = current.index(row)
        kept = batch.valid[at, : batch.length]
        added = [
            (
                batch.keys[layer][at, :, : batch.length][:, kept].unsqueeze(0),
                batch.values[layer][at, :, : batch.length][:, kept].unsqueeze(0),
            )
            for layer in sorted(batch.keys)
        ]
        if conversation.layers:
            added = [
                (torch.cat([k, ak], dim=2), torch.cat([v, av], dim=2))
                for (k, v), (ak, av) in zip(conversation.layers, added, strict=True)
            ]
        conversation.layers = added
        # The last answer token was never fed to the model, so it is not in the cache.
        conversation.cached_ids = row.prompt + row.generated[:-1]
        completion = backend.completion(row)
        conversation.messages.append({"role": "assistant", "content": completion.text})
        on_result(conversation.plan, conversation.next_turn, completion)
        conversation.next_turn += 1

    def select(kept: torch.Tensor) -> None:
        batch.select(kept)
        current[:] = [current[i] for i in kept.tolist()]

    with shared_attention(backend):
        logits = prefill(backend, batch, suffixes, [r.cached_tokens for r in rows])
        step = partial(shared_forward, backend, batch)
        decode_rows(step, select, rows, logits, decoding, backend.eos_ids, finish)
