"""Masked attention with its log-sum-exp against a float64 softmax computed by hand."""

from __future__ import annotations

import math

import pytest
import torch

from elitr_core.backends.lse_attention import attend_with_lse


def test_a_mask_shared_by_query_blocks_masks_each_block() -> None:
    # Two KV heads, each shared by 3 query heads of 4 tokens: the queries of a KV head are 3
    # blocks of 4 that share one (4 x 6) mask. Row 1's last token sees nothing.
    gen = torch.Generator().manual_seed(1)
    query, keys, values = (torch.randn(2, 2, n, 8, generator=gen) for n in (12, 6, 6))
    allowed = torch.rand(2, 1, 4, 6, generator=gen) > 0.3
    allowed[:, :, :, 0] = True
    allowed[1, :, 3] = False
    out, lse = attend_with_lse(query, keys, values, 0.5, allowed, repeats=3)
    mask = allowed.repeat(1, 1, 3, 1)  # the same mask written out for every block
    scores = (query.double() @ keys.double().transpose(-1, -2)) * 0.5
    scores = scores.masked_fill(~mask, -math.inf)
    expected_lse = torch.logsumexp(scores, -1)
    expected = torch.softmax(scores, -1).nan_to_num(0.0) @ values.double()
    assert torch.allclose(out.double(), expected, atol=1e-5)
    seen = mask.expand_as(scores).any(-1)
    assert torch.allclose(lse.double()[seen], expected_lse[seen], atol=1e-5)
    blind = [(1, head, block * 4 + 3) for head in range(2) for block in range(3)]
    for row, head, at in blind:  # adds nothing when merged
        assert lse[row, head, at] == -math.inf and not out[row, head, at].any()


@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")
def test_flex_attention_path_equals_the_tensor_op_path_on_the_cpu() -> None:
    # The CUDA path's function (flex_with_lse, the call fused_kernel makes) run uncompiled on the
    # CPU, on the folded grouped-query shapes shared_prefix gives it (3 query heads a KV head):
    # only the compilation and the device differ on a GPU. torch.compile cannot build it on the
    # CPU (torch 2.13: "torch.compile on CPU only supports inference and `return_lse` is not
    # supported yet"), which is why fused_kernel returns None there.
    from elitr_core.backends.lse_attention import flex_with_lse

    gen = torch.Generator().manual_seed(2)
    query = torch.randn(2, 2, 3 * 5, 16, generator=gen)
    keys, values = (torch.randn(2, 2, 37, 16, generator=gen) for _ in range(2))
    out, lse = flex_with_lse(query, keys, values, 0.25)
    expected, expected_lse = attend_with_lse(query, keys, values, 0.25)
    assert out.shape == expected.shape and lse.shape == expected_lse.shape
    assert torch.allclose(out, expected, atol=1e-5)
    assert torch.allclose(lse, expected_lse, atol=1e-5)
