"""The one rule for credentials in stored and exported configs: a table of tricky cases."""

from __future__ import annotations

from typing import Any

import pytest

from elitr_core.data.credentials import is_secret_key, without_credentials


@pytest.mark.parametrize("key", ["api_key", "apiKey", "API-KEY", "openai_api_key", "hf_token",
                                 "token", "use_auth_token", "password", "db_password",
                                 "secret", "client_secret", "aws_secret_key", "access_key",
                                 "Authorization", "cookie", "credentials"])
def test_keys_naming_a_secret(key: str) -> None:
    assert is_secret_key(key)


@pytest.mark.parametrize("key", ["max_tokens", "max_new_tokens", "prompt_tokens",
                                 "tokenizer", "api_key_env", "prompt_cache_key", "tokens",
                                 "pretrained", "base_url", "model", "keyword"])
def test_keys_that_are_not(key: str) -> None:
    assert not is_secret_key(key)


CASES: list[tuple[Any, Any]] = [
    ({"api_key": "sk-x", "model": "m"}, {"model": "m"}),
    ({"outer": {"inner": [{"token": "t", "n": 1}]}}, {"outer": {"inner": [{"n": 1}]}}),
    ("pretrained=/m,token=hf_abc,dtype=bfloat16", "pretrained=/m,dtype=bfloat16"),
    ("pretrained=/m,api_key=x", "pretrained=/m"),
    ("postgresql://me:secret@db:5432/x", "postgresql://me:[redacted]@db:5432/x"),
    ("postgresql://me@db/x", "postgresql://me@db/x"),  # no password: kept as it is
    ("http://host:8000/v1", "http://host:8000/v1"),
    ("key sk-" + "a" * 24 + " here", "key [redacted] here"),
    ("hf_" + "Z" * 30, "[redacted]"),
    ("a=1,b", "a=1,b"),  # not a k=v list: only the value rules apply
    (["x", 3, None, 2.5, True], ["x", 3, None, 2.5, True]),
]


@pytest.mark.parametrize(("given", "kept"), CASES)
def test_what_is_kept(given: Any, kept: Any) -> None:
    assert without_credentials(given) == kept
    assert without_credentials(kept) == kept  # idempotent
