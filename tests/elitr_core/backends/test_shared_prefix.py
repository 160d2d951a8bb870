"""The shared-prefix attention against plain attention over each row's whole key sequence."""

from __future__ import annotations

import pytest
import torch

from elitr_core.backends import lse_attention, shared_prefix
from elitr_core.backends.shared_prefix import SharedPrefixBatch

# The CPU has no compiled flex_attention: "fused" runs the same public op eagerly.
pytestmark = pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="the CUDA kernel needs a GPU (run on the GPU machine)"))]


def reference(query: torch.Tensor, keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """Float64 softmax attention of one row over all its keys (GQA by repeating KV heads)."""
    rep = query.shape[0] // keys.shape[0]
    keys = keys.repeat_interleave(rep, 0).double()
    values = values.repeat_interleave(rep, 0).double()
    scores = query.double() @ keys.transpose(-1, -2) / query.shape[-1] ** 0.5
    return torch.softmax(scores, dim=-1) @ values


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("device", DEVICES)
def test_decode_step_equals_attention_over_prefix_and_suffix(
    device: str, fused: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Three groups with prefixes of different lengths (one empty), five rows, two prior tokens
    # in every row's suffix, then one decode step: each row's output must equal attention over
    # its group's prefix followed by its own suffix.
    monkeypatch.setattr(shared_prefix, "FUSED", fused)
    monkeypatch.setattr(lse_attention, "_FLEX", None)  # compiled afresh, its failure seen here
    if fused and device == "cpu":  # no compiled kernel on the CPU: the same public op, eager
        monkeypatch.setattr(shared_prefix, "fused_kernel", lambda q: lse_attention.flex_with_lse)
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    gen = torch.Generator().manual_seed(0)
    kv_heads, heads, dim, lengths = 2, 4, 64, (37, 0, 20)

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen).to(device=device, dtype=dtype)

    prefixes = [[(rand(1, kv_heads, n, dim), rand(1, kv_heads, n, dim))] if n else []
                for n in lengths]
    groups = [0, 2, 0, 1, 2]
    batch = SharedPrefixBatch(prefixes, groups, capacity=4, device=torch.device(device))
    suffix_keys, suffix_values = [], []
    for _ in range(3):  # two suffix tokens, then the step whose output is checked
        query = rand(5, heads, 1, dim)
        key, value = rand(5, kv_heads, 1, dim), rand(5, kv_heads, 1, dim)
        suffix_keys.append(key)
        suffix_values.append(value)
        batch.begin(torch.ones((5, 1), dtype=torch.bool))
        out = batch.attend(0, query, key, value, dim**-0.5)
        batch.end()
    assert out.shape == (5, 1, heads, dim)
    if fused and device == "cuda":  # the compiled kernel ran: no silent fall-back to the math
        assert lse_attention._FLEX not in (None, False)
    tolerance = 2e-2 if dtype == torch.bfloat16 else 1e-5
    for row, group in enumerate(groups):
        own_keys = torch.cat([k[row] for k in suffix_keys], dim=1)
        own_values = torch.cat([v[row] for v in suffix_values], dim=1)
        if prefixes[group]:
            own_keys = torch.cat([prefixes[group][0][0][0], own_keys], dim=1)
            own_values = torch.cat([prefixes[group][0][1][0], own_values], dim=1)
        expected = reference(query[row], own_keys, own_values)  # (heads, 1, dim)
        got = out[row].transpose(0, 1).double()
        assert torch.allclose(got, expected, atol=tolerance, rtol=tolerance), (row, group)
