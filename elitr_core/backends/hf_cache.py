"""Helpers of the ``hf`` backend: settings, token prefixes, truncation, KV caches, decoding.

Imported only by the ``hf`` backend's modules (:mod:`~elitr_core.backends.hf`,
:mod:`~elitr_core.backends.hf_waves`), so torch/transformers load only when that backend runs.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers import (
    DynamicCache,
    PretrainedConfig,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopPLogitsWarper,
)

from elitr_core.backends.base import DecodingConfig
from elitr_core.backends.hf import TRUNCATION_POLICIES
from elitr_core.errors import UserError

_DTYPES = {
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
    "float32": torch.float32,
    "fp32": torch.float32,
}
_ATTENTION = ("sdpa", "eager", "flash_attention_2", "auto")


def resolve_device(device: str | None) -> torch.device:
    """The torch device to use: CUDA when available unless ``device`` says otherwise."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    resolved = torch.device(device)
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise UserError(f"Device {device!r} was asked for but torch sees no CUDA GPU: use 'cpu'.")
    return resolved


def resolve_dtype(dtype: str | torch.dtype | None, device: torch.device) -> torch.dtype:
    """bfloat16 on CUDA and float32 on CPU unless ``dtype`` (a name or a dtype) says otherwise."""
    if dtype is None:
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in _DTYPES:
        raise UserError(f"Unknown dtype {dtype!r}: use one of {', '.join(_DTYPES)}.")
    return _DTYPES[dtype]


def resolve_attention(requested: str, device: torch.device) -> str:
    """FlashAttention 2 only when ``flash_attn`` is installed and a GPU is used, else SDPA."""
    if requested not in _ATTENTION:
        raise UserError(
            f"Unknown attn_implementation {requested!r}: use one of {', '.join(_ATTENTION)}."
        )
    flash_ok = device.type == "cuda" and importlib.util.find_spec("flash_attn") is not None
    if requested in ("flash_attention_2", "auto"):
        return "flash_attention_2" if flash_ok else "sdpa"
    return requested


# Spreads (seed, index) pairs far apart so that seeds 2023 and 2024 never share a stream.
_SEED_STRIDE = 1_000_003


def eos_token_ids(model: Any, tokenizer: Any) -> set[int]:
    """End-of-answer ids: the generation config's (one or several) and the tokenizer's."""
    ids: set[int] = set()
    configured = getattr(model.generation_config, "eos_token_id", None)
    if isinstance(configured, int):
        ids.add(configured)
    elif configured is not None:
        ids.update(int(token) for token in configured)
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    return ids


def pad_token_id(tokenizer: Any) -> int:
    """The id written in padded positions."""
    # Pads are always masked out, so any valid id will do when the model has no pad token.
    for candidate in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if candidate is not None:
            return int(candidate)
    return 0


def full_attention_only(config: PretrainedConfig) -> bool:
    """Whether every layer attends to the full past (sharing and cropping a cache is exact)."""
    text_config = config.get_text_config(decoder=True)
    layer_types = getattr(text_config, "layer_types", None) or []
    sliding = getattr(text_config, "sliding_window", None) and getattr(
        text_config, "use_sliding_window", True
    )
    return not sliding and all(kind == "full_attention" for kind in layer_types)


def common_token_prefix(sequences: Sequence[Sequence[int]]) -> int:
    """Length of the longest common prefix of token-id sequences.

    Token prefixes, not string prefixes: a BPE merge or a chat template can tokenize the
    same leading text differently when what follows differs, so only tokens that are equal
    in every sequence may share one KV cache.

    Parameters
    ----------
    sequences
        Token-id sequences; an empty collection has a common prefix of 0.

    Returns
    -------
    int
        The number of leading positions at which all sequences hold the same token.

    Examples
    --------
    >>> common_token_prefix([[1, 5, 7, 9], [1, 5, 8], [1, 5, 7]])
    2
    """
    if not sequences:
        return 0
    first = sequences[0]
    length = min(len(seq) for seq in sequences)
    for position in range(length):
        token = first[position]
        if any(seq[position] != token for seq in sequences[1:]):
            return position
    return length


def truncate_tokens(ids: Sequence[int], limit: int, policy: str) -> list[int]:
    """Cut ``ids`` to ``limit`` tokens.

    Parameters
    ----------
    ids
        The prompt's token ids.
    limit
        How many tokens may remain (at least 2).
    policy
        ``"middle"`` keeps the first ``limit // 2`` and the last ``limit - limit // 2`` tokens
        (the instruction head and the question tail survive, the transcript middle goes);
        ``"left"`` keeps the last ``limit`` tokens.

    Returns
    -------
    list[int]
        ``ids`` unchanged when it already fits.
    """
    if policy not in TRUNCATION_POLICIES:
        raise UserError(
            f"Unknown truncation policy {policy!r}: use one of {', '.join(TRUNCATION_POLICIES)}."
        )
    if len(ids) <= limit:
        return list(ids)
    if policy == "left":
        return list(ids[len(ids) - limit :])
    head = limit // 2
    return list(ids[:head]) + list(ids[len(ids) - (limit - head) :])


def crop_cache(cache: DynamicCache, length: int) -> None:
    """Keep the first ``length`` cached positions (a negative crop works in every version)."""
    excess = cache.get_seq_length() - length
    if excess > 0:
        cache.crop(-excess)


@dataclass
class DecodingRow:
    """One conversation being decoded: its prompt, its answer so far and its RNG stream."""

    index: int
    prompt: list[int]
    next_position: int
    generator: torch.Generator | None = None
    cached_tokens: int = 0
    generated: list[int] = field(default_factory=list)
    finish_reason: str | None = None
    group: int = 0  # which group (meeting, cache key) of a generate call
    position: int = 0  # its place in that group


def make_generator(seed: int | None, index: int, device: torch.device) -> torch.Generator | None:
    """A sampling RNG for conversation ``index``, seeded from ``(seed, index)``.

    One stream per conversation makes sampled answers independent of ``batch_size`` and of
    which conversations share a batch. ``seed=None`` samples from torch's global RNG.
    """
    if seed is None:
        return None
    generator = torch.Generator(device=device)
    generator.manual_seed((seed * _SEED_STRIDE + index) % (2**63))
    return generator


def next_tokens(
    logits: torch.Tensor, rows: Sequence[DecodingRow], decoding: DecodingConfig
) -> torch.Tensor:
    """Pick the next token of every row from its last-position ``logits`` (rows x vocab).

    The repetition penalty is transformers' ``RepetitionPenaltyLogitsProcessor`` applied to
    each row's own prompt + answer (so pad tokens are never penalised), then greedy argmax or
    temperature + top-p sampling with each row's generator, as in ``model.generate``.

    References
    ----------
    Keskar et al. (2019), CTRL, arXiv:1909.05858 (repetition penalty); Holtzman et al. (2020),
    The Curious Case of Neural Text Degeneration, ICLR (nucleus sampling).
    """
    scores = logits.float()
    if decoding.repetition_penalty != 1.0:
        penalty = RepetitionPenaltyLogitsProcessor(penalty=decoding.repetition_penalty)
        for i, row in enumerate(rows):
            seen = torch.tensor([row.prompt + row.generated], device=scores.device)
            scores[i : i + 1] = penalty(seen, scores[i : i + 1])
    if decoding.greedy:
        return scores.argmax(dim=-1)
    no_ids = torch.empty((len(rows), 0), dtype=torch.long, device=scores.device)
    scores = TemperatureLogitsWarper(decoding.temperature)(no_ids, scores)
    if decoding.top_p < 1.0:
        scores = TopPLogitsWarper(top_p=decoding.top_p)(no_ids, scores)
    probs = torch.softmax(scores, dim=-1)
    picks = [
        torch.multinomial(probs[i], num_samples=1, generator=row.generator)
        for i, row in enumerate(rows)
    ]
    return torch.cat(picks)


Step = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""``step(input_ids, position_ids)`` -> last-position logits, each ``rows x 1`` (one new token
per row), appending to whatever cache the caller holds."""


def decode_rows(
    step: Step,
    select: Callable[[torch.Tensor], None],
    rows: list[DecodingRow],
    logits: torch.Tensor,
    decoding: DecodingConfig,
    eos_ids: set[int],
    finish: Callable[[DecodingRow], None],
) -> None:
    """Decode all ``rows`` together from their first-token ``logits``; ``finish(row)`` each.

    A row stops at an end-of-sequence id (``finish_reason="stop"``) or after
    ``max_new_tokens`` (``"length"``) and leaves the batch at once: ``select(kept)`` gets
    the indices of the rows that go on, for the caller's cache to drop the others. The last
    answer token of a row is never fed back (so a carried cache holds all but that one).
    """
    active = rows
    device = logits.device
    while True:
        picked = next_tokens(logits, active, decoding).tolist()
        keep: list[int] = []
        for i, (row, token) in enumerate(zip(active, picked, strict=True)):
            row.generated.append(int(token))
            if token in eos_ids:
                row.finish_reason = "stop"
            elif len(row.generated) >= decoding.max_new_tokens:
                row.finish_reason = "length"
            if row.finish_reason is None:
                keep.append(i)
            else:
                finish(row)
        if not keep:
            return
        if len(keep) < len(active):
            select(torch.tensor(keep, dtype=torch.long, device=device))
            active = [active[i] for i in keep]
        feed = torch.tensor([[row.generated[-1]] for row in active], device=device)
        positions = torch.tensor([[row.next_position] for row in active], device=device)
        for row in active:
            row.next_position += 1
        logits = step(feed, positions)


def right_aligned_suffixes(
    suffixes: Sequence[Sequence[int]], starts: Sequence[int], pad_id: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Batch suffixes of different lengths, each after its own cached prefix.

    Each suffix is right-aligned (so every row's last position is a real token whose logits
    give the first answer token); pads are marked invalid, and position ids continue from the
    row's prefix length ``starts[i]`` as if the pads were not there, which reproduces the
    unpadded computation.

    Returns
    -------
    tuple of torch.Tensor
        ``input_ids`` (rows x longest), ``valid`` (rows x longest, False on pads) and
        ``position_ids`` (rows x longest).
    """
    longest = max(len(suffix) for suffix in suffixes)
    rows = len(suffixes)
    input_ids = torch.full((rows, longest), pad_id, dtype=torch.long)
    valid = torch.zeros((rows, longest), dtype=torch.bool)
    positions = torch.zeros((rows, longest), dtype=torch.long)
    for i, (suffix, start) in enumerate(zip(suffixes, starts, strict=True)):
        pads = longest - len(suffix)
        input_ids[i, pads:] = torch.tensor(list(suffix), dtype=torch.long)
        valid[i, pads:] = True
        positions[i, :] = start
        positions[i, pads:] = torch.arange(start, start + len(suffix))
    return input_ids.to(device), valid.to(device), positions.to(device)


def check_decoding(decoding: DecodingConfig) -> None:
    """Raise :class:`UserError` for decoding settings no model can run."""
    if decoding.max_new_tokens < 1:
        raise UserError(f"max_new_tokens must be at least 1, got {decoding.max_new_tokens}.")
    if decoding.temperature < 0:
        raise UserError(f"temperature must be 0 (greedy) or more, got {decoding.temperature}.")
    if not 0.0 < decoding.top_p <= 1.0:
        raise UserError(f"top_p must be in (0, 1], got {decoding.top_p}.")
    if decoding.repetition_penalty <= 0:
        raise UserError(f"repetition_penalty must be positive, got {decoding.repetition_penalty}.")
