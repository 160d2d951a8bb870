"""What the ``hf`` engine relies on in torch and transformers, checked on the installed
versions: a release that changes it fails here, naming the versions, before any answer drifts.

Supported range (requirements.txt): torch >= 2.9 (``flex_attention``'s ``return_aux``) and
transformers >= 5.0 (``AttentionInterface`` functions called with the layer as ``module``,
rotated queries and keys, and ``scaling``); tested on the pinned versions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
import transformers
from transformers import AttentionInterface, AutoModelForCausalLM

from elitr_core.backends.lse_attention import attend_with_lse, flex_with_lse

VERSIONS = f"torch {torch.__version__}, transformers {transformers.__version__}"


@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")
def test_flex_attention_returns_the_log_sum_exp_the_merge_needs() -> None:
    gen = torch.Generator().manual_seed(3)
    query, keys, values = (torch.randn(2, 3, n, 16, generator=gen) for n in (5, 40, 40))
    out, lse = flex_with_lse(query, keys, values, 0.25)
    expected_out, expected_lse = attend_with_lse(query, keys, values, 0.25)
    scores = (query.double() @ keys.double().transpose(-1, -2)) * 0.25
    assert torch.allclose(lse.double(), torch.logsumexp(scores, -1), atol=1e-5), (
        f"{VERSIONS}: flex_attention's log-sum-exp is no longer the natural-log LSE of the "
        "scores; the shared-prefix merge would weigh its two parts wrongly")
    assert torch.allclose(out, expected_out, atol=1e-5) and torch.allclose(lse, expected_lse,
                                                                          atol=1e-5), VERSIONS


def test_attention_functions_get_each_layer_and_its_rotated_keys(tmp_path: Path) -> None:
    from tests.elitr_core.backends.tiny_model import build_tiny_llama

    model: Any = AutoModelForCausalLM.from_pretrained(build_tiny_llama(tmp_path / "tiny"))
    calls: list[tuple[int, tuple[int, ...], tuple[int, ...], float | None]] = []
    sdpa = AttentionInterface()["sdpa"]

    def probe(module: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
              attention_mask: Any, **kwargs: Any) -> Any:
        calls.append((module.layer_idx, tuple(query.shape), tuple(key.shape),
                      kwargs.get("scaling")))
        return sdpa(module, query, key, value, attention_mask, **kwargs)

    AttentionInterface.register("elitr_contract_probe", probe)
    config = model.config
    ids = torch.tensor([[1, 5, 9, 4]])
    with torch.inference_mode():
        expected = model(input_ids=ids, use_cache=False).logits
        model.set_attn_implementation("elitr_contract_probe")
        got = model(input_ids=ids, position_ids=torch.arange(4)[None], use_cache=False).logits
    head_dim = config.hidden_size // config.num_attention_heads
    assert [c[0] for c in calls] == list(range(config.num_hidden_layers)), (
        f"{VERSIONS}: attention functions no longer see each layer (module.layer_idx)")
    shapes = {c[1:3] for c in calls}
    assert shapes == {((1, config.num_attention_heads, 4, head_dim),
                       (1, config.num_key_value_heads, 4, head_dim))}, (
        f"{VERSIONS}: the (batch, heads, tokens, head_dim) layout changed: {shapes}")
    assert all(c[3] == pytest.approx(head_dim ** -0.5) for c in calls), (
        f"{VERSIONS}: attention functions no longer get the scaling")
    assert torch.allclose(got, expected, atol=1e-5), VERSIONS
