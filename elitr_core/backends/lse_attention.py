"""Softmax attention that also returns its log-sum-exp, and the merge of two such parts.

The shared-prefix batch (:mod:`~elitr_core.backends.shared_prefix`) attends a row's prefix and
its own suffix apart and merges the two by their log-sum-exp; ``scaled_dot_product_attention``
does not return it, so the parts come from :func:`attend_with_lse` (tensor ops, any device) or
compiled ``flex_attention`` (:func:`fused_kernel`, CUDA).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import torch

logger = logging.getLogger(__name__)

LseKernel = Callable[
    [torch.Tensor, torch.Tensor, torch.Tensor, float], tuple[torch.Tensor, torch.Tensor]
]


def fused_kernel(query: torch.Tensor) -> LseKernel | None:
    """A fused attention kernel that also returns the log-sum-exp, where one exists.

    ``scaled_dot_product_attention`` does not return the log-sum-exp the merge needs; PyTorch's
    public ``flex_attention`` does (``return_aux=AuxRequest(lse=True)``, torch >= 2.9), and
    compiled it is one fused kernel on CUDA that never writes the scores to memory. Inputs are
    ``(batch, heads, length, d)``; returns the output and the natural-log LSE
    ``(batch, heads, length)``. ``None`` on the CPU (uncompiled, ``flex_attention`` is the same
    math as :func:`attend_with_lse`) and once a compiled call has failed: the caller then uses
    :func:`attend_with_lse`.
    """
    global _FLEX
    if query.device.type != "cuda" or _FLEX is False:
        return None
    if _FLEX is None:
        from torch.nn.attention.flex_attention import flex_attention

        _FLEX = torch.compile(flex_attention, dynamic=True)
    compiled = _FLEX

    def flex(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> Any:
        global _FLEX
        try:
            return flex_with_lse(q, k, v, scale, compiled)
        except Exception as error:  # a compiler or triton missing: the math path still works
            logger.warning("flex_attention failed (%s); using the math path from now on", error)
            _FLEX = False
            return attend_with_lse(q, k, v, scale)

    return flex


_FLEX: Any = None
"""``torch.compile(flex_attention)`` once built, False after it failed, None before."""


def flex_with_lse(query: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, scale: float,
                  kernel: Callable[..., Any] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``flex_attention`` (``kernel``: a compiled one) with its natural-log log-sum-exp, in
    float32 like :func:`attend_with_lse`."""
    from torch.nn.attention.flex_attention import AuxRequest, flex_attention

    out, aux = (kernel or flex_attention)(query, keys, values, scale=scale,
                                          return_aux=AuxRequest(lse=True))
    if aux.lse is None:
        raise RuntimeError(f"torch {torch.__version__}: flex_attention returned no log-sum-exp")
    return out, aux.lse.float()


def attend_with_lse(
    query: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    scale: float,
    allowed: torch.Tensor | None = None,
    repeats: int = 1,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Softmax attention that also returns each query's log-sum-exp of scores.

    Parameters
    ----------
    query
        ``(..., q, d)``.
    keys, values
        ``(..., k, d)``, broadcastable against ``query``'s leading dimensions.
    scale
        Multiplies the scores (``1 / sqrt(d)`` for most models).
    allowed
        Boolean ``(..., q / repeats, k)``; False positions are left out. A query with nothing
        allowed gets a zero output and a log-sum-exp of ``-inf`` (it then adds nothing when
        merged).
    repeats
        The queries are this many consecutive blocks that share ``allowed`` (the query heads
        sharing one KV head), so the mask is not copied for each.

    Returns
    -------
    tuple of torch.Tensor
        The output ``(..., q, d)`` in ``values``' dtype and the log-sum-exp ``(..., q)`` in
        float32 (scores and softmax are computed in float32, as SDPA does).
    """
    # Few passes over the (large) scores, in place, one exp each: the scale goes on the (small)
    # query, and the division on the (small) output.
    scores = torch.matmul(query * scale, keys.transpose(-1, -2)).float()
    if allowed is not None:
        blocks = scores.unflatten(-2, (repeats, -1)) if repeats > 1 else scores  # a view
        blocks.masked_fill_(~(allowed.unsqueeze(-3) if repeats > 1 else allowed), -math.inf)
    peak = scores.amax(dim=-1, keepdim=True).clamp_min(torch.finfo(torch.float32).min)
    weights = scores.sub_(peak).exp_()
    total = weights.sum(dim=-1, keepdim=True)
    out = torch.matmul(weights.to(values.dtype), values) / total.clamp_min(1e-30).to(values.dtype)
    return out, (peak + torch.log(total)).squeeze(-1)


def merge(
    first: tuple[torch.Tensor, torch.Tensor], second: tuple[torch.Tensor, torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Combine two attention parts over disjoint keys into the attention over all of them.

    Each part is ``(output, lse)``; the result weighs each output by ``exp(lse - lse_all)``.
    """
    (out_a, lse_a), (out_b, lse_b) = first, second
    lse = torch.logaddexp(lse_a, lse_b)
    weight_a = torch.exp(lse_a - lse).nan_to_num(0.0).unsqueeze(-1).to(out_a.dtype)
    weight_b = torch.exp(lse_b - lse).nan_to_num(0.0).unsqueeze(-1).to(out_b.dtype)
    return out_a * weight_a + out_b * weight_b, lse
