"""The ``hf`` backend's engine: transformers + torch in-process, each transcript's KV cache
held once (its options and building it: :mod:`elitr_core.backends.hf`).

Single-turn: the questions of one meeting share a long prompt head (instruction + transcript).
Its longest common *token* prefix is prefilled once into a batch-1 ``DynamicCache`` and never
copied; the questions of all meetings are then decoded together (as many rows at a time as
free memory holds, or ``batch_size``), each row holding only its suffix and answer, and
attending its meeting's prefix through :mod:`~elitr_core.backends.shared_prefix`. Multi-turn:
each conversation's cache of ``history + answer`` is carried to the next turn, only the tokens
the chat template adds are prefilled, and the current turns of all meetings' conversations
are decoded together. Both give, in float32, the greedy output of plain per-conversation
``model.generate``.

This module imports torch and transformers at the top: nothing else in ``elitr_core`` may
import it at import time (:class:`~elitr_core.backends.hf.HFBackend` loads it by name when a
backend is built).
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jinja2
import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache

from elitr_core.backends.base import (
    Completion,
    Conversation,
    DecodingConfig,
    Message,
    ResultCallback,
    turn_by_turn,
)
from elitr_core.backends.hf import TRUNCATION_POLICIES, HFBackend
from elitr_core.backends.hf_cache import (
    DecodingRow,
    check_decoding,
    common_token_prefix,
    crop_cache,
    decode_rows,
    eos_token_ids,
    full_attention_only,
    make_generator,
    pad_token_id,
    resolve_attention,
    resolve_device,
    resolve_dtype,
    truncate_tokens,
)
from elitr_core.backends.hf_memory import (
    PlannedRow,
    TokenBytes,
    bucket_limits,
    memory_budget,
    plan_waves,
)
from elitr_core.backends.hf_waves import TurnState, decode_conversations, decode_groups
from elitr_core.errors import UserError


class HFEngine(HFBackend):
    """A causal LM loaded with transformers, answering with prefix KV-cache reuse.

    Parameters
    ----------
    model_path_or_name
        A local model directory (works offline) or a hub name (needs the hub or ``HF_HOME``).
    revision
        Hub revision (branch, tag or commit) to pin.
    device
        ``"cuda"``, ``"cuda:1"``, ``"cpu"``; default CUDA when available.
    dtype
        Default bfloat16 on CUDA, float32 on CPU.
    attn_implementation
        ``"sdpa"`` (default), ``"eager"``, ``"flash_attention_2"`` or ``"auto"``; FlashAttention
        is used only when the ``flash_attn`` package is importable, otherwise SDPA.
    batch_size
        Questions decoded together, across meetings. Default ``None``: as many as the
        device's free memory holds (:mod:`~elitr_core.backends.hf_memory`), so a split's
        questions usually go in one wave. Each row holds only its question and answer tokens;
        every meeting's transcript is held once.
    use_chat_template
        Render conversations with the tokenizer's chat template (when it has one). Without
        one, the prompt is the messages' contents joined with newlines (system, user and
        assistant texts alike, so multi-turn answers stay in the history), with the
        tokenizer's own special tokens (BOS).
    max_context
        Context length; default ``config.max_position_embeddings``.
    truncation
        ``None`` (too long a prompt is an error), ``"middle"`` or ``"left"``
        (see :func:`~elitr_core.backends.hf_cache.truncate_tokens`).
    """

    def __init__(
        self,
        model_path_or_name: str,
        *,
        revision: str | None = None,
        device: str | None = None,
        dtype: str | torch.dtype | None = None,
        attn_implementation: str = "sdpa",
        batch_size: int | None = None,
        use_chat_template: bool = True,
        max_context: int | None = None,
        truncation: str | None = None,
    ) -> None:
        if batch_size is not None and batch_size < 1:
            raise UserError(f"batch_size must be at least 1, got {batch_size}.")
        if truncation is not None and truncation not in TRUNCATION_POLICIES:
            raise UserError(
                f"Unknown truncation {truncation!r}: use None, {' or '.join(TRUNCATION_POLICIES)}."
            )
        if max_context is not None and max_context < 2:
            raise UserError(f"max_context must be at least 2 tokens, got {max_context}.")
        self.model_name = str(model_path_or_name)
        self.revision = revision
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.attn_implementation = resolve_attention(attn_implementation, self.device)
        self.batch_size = batch_size
        self.use_chat_template = use_chat_template
        self.truncation = truncation
        self.tokenizer, self.model = self._load()
        config_context = getattr(self.model.config, "max_position_embeddings", None)
        self.max_context: int | None = max_context or config_context
        self.eos_ids = eos_token_ids(self.model, self.tokenizer)
        self.pad_id = pad_token_id(self.tokenizer)
        self._reuse_ok = full_attention_only(self.model.config)
        self._token_bytes = TokenBytes.of(self.model.config, self.dtype)
        self._stored: tuple[str, list[int], DynamicCache] | None = None
        self.truncated_prompts = 0
        self.peak_kv_bytes = 0  # largest KV cache one batch of rows held (benchmarks read it)

    # ----------------------------------------------------------------- loading and setup
    def _load(self) -> tuple[Any, Any]:
        # A path-like name that is no directory would otherwise be tried on the hub, which
        # retries for about a minute when offline before failing.
        path = Path(self.model_name).expanduser()
        path_like = self.model_name.startswith(("/", ".", "~")) or self.model_name.count("/") > 1
        if path_like and not path.is_dir():
            raise UserError(
                f"The model {self.model_name!r} could not be loaded: there is no directory "
                f"{path}. Pass the path of a local model directory (with config.json), or a "
                "hub name such as 'org/model' with HF_HOME set to a cache that holds it."
            )
        try:
            tokenizer = AutoTokenizer.from_pretrained(self.model_name, revision=self.revision)
            model: Any = AutoModelForCausalLM.from_pretrained(
                self.model_name,
                revision=self.revision,
                dtype=self.dtype,
                attn_implementation=self.attn_implementation,
            )
        except (OSError, ValueError) as error:
            raise UserError(
                f"The model {self.model_name!r} could not be loaded ({error}). Pass the path of "
                "a local model directory, or set HF_HOME to a cache that holds it, or check the "
                "network access to the Hugging Face hub."
            ) from error
        model.to(self.device)
        model.eval()
        return tokenizer, model

    def describe(self) -> dict[str, Any]:
        """Model, revision, dtype, device, attention, context policy and library versions."""
        return {
            "backend": self.name,
            "model": self.model_name,
            "revision": self.revision,
            "commit_hash": getattr(self.model.config, "_commit_hash", None),
            "dtype": str(self.dtype).removeprefix("torch."),
            "device": str(self.device),
            "attn_implementation": self.attn_implementation,
            "batch_size": self.batch_size if self.batch_size is not None else "memory",
            "chat_template": self._templated,
            "max_context": self.max_context,
            "truncation": self.truncation,
            "prefix_cache_reuse": self._reuse_ok,
            "torch": torch.__version__,
            "transformers": transformers.__version__,
        }

    def close(self) -> None:
        """Drop the stored prefix cache and the model, and free cached GPU memory."""
        self._stored = None
        del self.model
        if self.device.type == "cuda":
            torch.cuda.empty_cache()

    # ----------------------------------------------------------------- prompts
    @property
    def _templated(self) -> bool:
        return self.use_chat_template and getattr(self.tokenizer, "chat_template", None) is not None

    def encode(self, messages: Sequence[Message]) -> list[int]:
        """Token ids of ``messages`` ready for the model to answer (no context check).

        With the chat template: ``apply_chat_template(..., add_generation_prompt=True)``
        rendered to text, then tokenized without adding special tokens again (the template
        writes them), as transformers does itself. Without: contents joined with newlines.
        """
        if not self._templated:
            text = "\n".join(message["content"] for message in messages)
            return list(self.tokenizer(text).input_ids)
        try:
            text = self.tokenizer.apply_chat_template(
                list(messages), tokenize=False, add_generation_prompt=True
            )
        except jinja2.TemplateError as error:
            raise UserError(
                f"The chat template of {self.model_name!r} rejects this conversation ({error}). "
                "Put the prompt in the user turn instead of a system message, or run with "
                "use_chat_template=False."
            ) from error
        return list(self.tokenizer(text, add_special_tokens=False).input_ids)

    def context_tokens(self) -> int | None:
        """The context the prompts are checked against (``max_context``)."""
        return self.max_context

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` by the model's tokenizer (``token_unit``)."""
        return len(self.tokenizer(text, add_special_tokens=False).input_ids)

    def prompt_ids(self, messages: Sequence[Message], decoding: DecodingConfig) -> list[int]:
        """Encode, then check the prompt fits the context next to ``max_new_tokens``."""
        ids = self.encode(messages)
        if self.max_context is None:
            return ids
        limit = self.max_context - decoding.max_new_tokens
        if limit < 2:
            raise UserError(
                f"max_new_tokens={decoding.max_new_tokens} leaves no room for the prompt in the "
                f"{self.max_context}-token context of {self.model_name!r}: lower it."
            )
        if len(ids) <= limit:
            return ids
        if self.truncation is None:
            raise UserError(
                f"The prompt has {len(ids)} tokens but {self.model_name!r} takes "
                f"{self.max_context} tokens, {decoding.max_new_tokens} of which are kept for the "
                f"answer, so at most {limit} for the prompt. Choose truncation='middle' (keeps "
                "the head and tail of the prompt) or truncation='left' (keeps its end), use a "
                "longer-context model or max_context if the model supports it, or lower "
                "max_new_tokens."
            )
        self.truncated_prompts += 1
        return truncate_tokens(ids, limit, self.truncation)

    # ----------------------------------------------------------------- model calls
    def _forward(self, input_ids: torch.Tensor, cache: DynamicCache,
                 attention_mask: torch.Tensor, position_ids: torch.Tensor) -> torch.Tensor:
        """Run the model on new tokens after ``cache``; return last-position logits (rows x V)."""
        output = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        return output.logits[:, -1, :]

    def _prefill(self, ids: Sequence[int], cache: DynamicCache, start: int) -> torch.Tensor:
        """Append ``ids[start:]`` of one sequence to ``cache``, which holds ``ids[:start]``."""
        new = torch.tensor([list(ids[start:])], dtype=torch.long, device=self.device)
        mask = torch.ones((1, len(ids)), dtype=torch.long, device=self.device)
        positions = torch.arange(start, len(ids), device=self.device).unsqueeze(0)
        return self._forward(new, cache, mask, positions)

    def prefix_cache(
        self, prefix: list[int], cache_key: str | None
    ) -> tuple[DynamicCache | None, int]:
        """The cache of ``prefix``, reusing the one kept from the last call with ``cache_key``.

        Returns the cache and how many of its tokens came from that earlier call.
        """
        if not prefix:
            return None, 0
        reused, cache = 0, None
        if cache_key is not None and self._stored is not None and self._stored[0] == cache_key:
            _, stored_ids, stored_cache = self._stored
            reused = common_token_prefix([stored_ids, prefix])
            if reused > 0:
                cache = stored_cache
                crop_cache(cache, reused)
        if cache is None:
            reused, cache = 0, DynamicCache(config=self.model.config)
        if reused < len(prefix):
            self._prefill(prefix, cache, reused)
        self._stored = (cache_key, list(prefix), cache) if cache_key is not None else None
        return cache, reused

    def completion(self, row: DecodingRow) -> Completion:
        """The answer of a finished row: its text (the stop token left out) and usage."""
        answer = row.generated[:-1] if row.finish_reason == "stop" else row.generated
        text = self.tokenizer.decode(answer, skip_special_tokens=True).strip()
        return Completion(text=text, prompt_tokens=len(row.prompt),
                          completion_tokens=len(row.generated), cached_tokens=row.cached_tokens,
                          finish_reason=row.finish_reason)

    # ----------------------------------------------------------------- the protocol
    def generate(self, conversations: Sequence[Conversation], decoding: DecodingConfig,
                 on_result: ResultCallback) -> None:
        """Answer every conversation, the rows of as many as memory holds decoded together.

        Conversations with one turn left (single-turn questions) are grouped by ``cache_key``
        (conversations without one form one group): each group's common token prefix is
        prefilled once and held once, and ``cached_tokens`` of each completion is that prefix
        length. Conversations with several turns left carry their own KV cache from turn to
        turn (:func:`~elitr_core.backends.hf_waves.decode_conversations`). Sampling uses one
        generator per row seeded from ``(decoding.seed, position)``, so answers do not depend
        on ``batch_size``. Models with sliding-window layers (where a shared cache is not
        exact) answer one turn at a time.
        """
        check_decoding(decoding)
        asking = [i for i, c in enumerate(conversations) if c.remaining()]
        with torch.inference_mode():
            if not self._reuse_ok:
                rows = itertools.count()

                def alone(messages: list[Message], _: str | None) -> Completion:
                    row = self.row(next(rows), self.prompt_ids(messages, decoding), decoding, 0)
                    self._answer_alone(row, decoding)
                    return self.completion(row)

                turn_by_turn(conversations, on_result, alone)
                return
            single = [i for i in asking if len(conversations[i].remaining()) == 1]
            multi = [i for i in asking if len(conversations[i].remaining()) > 1]
            if single:
                self._single_turns(conversations, single, decoding, on_result)
            if multi:
                turns = [TurnState(i, conversations[i].messages(), conversations[i].turns,
                                   len(conversations[i].answered),
                                   inserted=conversations[i].inserted) for i in multi]
                decode_conversations(self, turns, decoding, on_result)

    def _single_turns(self, conversations: Sequence[Conversation], asking: list[int],
                      decoding: DecodingConfig, on_result: ResultCallback) -> None:
        """One turn of each conversation in ``asking``, grouped by ``cache_key``."""
        members: dict[str | None, list[int]] = {}
        for index in asking:
            members.setdefault(conversations[index].cache_key, []).append(index)
        groups = list(members.values())
        turn = {i: conversations[i].remaining()[0] for i in asking}
        prompts = [[self.prompt_ids(conversations[i].prompt(turn[i]), decoding) for i in group]
                   for group in groups]
        rows: list[DecodingRow] = []
        for number, group_prompts in enumerate(prompts):
            for position, prompt in enumerate(group_prompts):
                rows.append(self.row(len(rows), prompt, decoding, 0))
                rows[-1].group, rows[-1].position = number, position

        def finish(row: DecodingRow) -> None:
            index = groups[row.group][row.position]
            on_result(index, turn[index], self.completion(row))

        decode_groups(self, list(members), prompts, rows, decoding, finish)

    def waves(self, rows: Sequence[PlannedRow], max_new_tokens: int) -> list[range]:
        """The rows decoded together: ``batch_size`` at a time, or as many as memory holds."""
        budget = sys.maxsize if self.batch_size is not None else memory_budget(self.device)
        return plan_waves(rows, max_new_tokens, self._token_bytes, budget, self.batch_size,
                          bucket_limits(self.device).max_tokens)

    def row(self, index: int, prompt: list[int], decoding: DecodingConfig,
            cached: int) -> DecodingRow:
        """A row to decode: ``prompt``, ``cached`` of its tokens already in a cache, and its
        sampling generator seeded from ``(decoding.seed, index)``."""
        generator = make_generator(decoding.seed, index, self.device)
        return DecodingRow(index, prompt, len(prompt), generator, cached)

    def _answer_alone(self, row: DecodingRow, decoding: DecodingConfig) -> None:
        """Prefill the row's whole prompt into a fresh cache and decode it alone."""
        cache = DynamicCache(config=self.model.config)
        logits = self._prefill(row.prompt, cache, 0)

        def step(feed: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
            mask = torch.ones((1, cache.get_seq_length() + 1), dtype=torch.long, device=self.device)
            return self._forward(feed, cache, mask, positions)

        decode_rows(step, lambda _: None, [row], logits, decoding, self.eos_ids, lambda _: None)
