"""Credentials never kept: the one rule for every config the project stores or exports.

A harness log's ``model_args`` (``api_key``, ``token=hf_...``, a database URL with its
password), a backend's description or a judge's pass record may hold a secret. Stored configs
pass :func:`without_credentials` when they are written (generation runs, harness runs, judge
passes), and exports pass it again, so rows stored before this rule are redacted on the way
out. Written here rather than taken from a library: the rule is small and ours (which key
names count), and no well-kept package does exactly this to JSON values.
"""

from __future__ import annotations

import re
from typing import Any

#: What a removed secret inside a text becomes (a DSN's password, a token in ``k=v,...``).
REDACTED = "[redacted]"

# a key naming a secret: api_key, apiKey, hf_token, auth_token, password, secret, ... as a
# whole word of the key (max_tokens, tokenizer and api_key_env, a variable's name, are not)
_SECRET_WORDS = ("api_key", "apikey", "access_key", "secret_key", "private_key", "token",
                 "auth_token", "password", "passwd", "pwd", "secret", "credentials",
                 "credential", "authorization", "cookie", "bearer")
_SECRET_KEY = re.compile(r"(?:^|_)(?:" + "|".join(_SECRET_WORDS) + r")$")
# scheme://user:password@host: the password goes, the rest (where it ran) stays
_DSN_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^:/@\s]*):[^@/\s]*@")
# a bare key or token whatever its name: OpenAI (sk-...), Hugging Face (hf_...), GitHub
_SECRET_VALUE = re.compile(r"\b(?:sk-[A-Za-z0-9_\-]{16,}|hf_[A-Za-z0-9]{16,}|"
                           r"gh[pousr]_[A-Za-z0-9]{20,})\b")
# lm-eval's model_args as one text: "pretrained=x,token=hf_...,dtype=bfloat16"
_PAIR = re.compile(r"^\s*([A-Za-z_][\w.\-]*)\s*=(.*)$", re.S)


def is_secret_key(key: object) -> bool:
    """Whether a config key names a credential (``api_key``, ``hfToken``, ``password``)."""
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", str(key)).lower().replace("-", "_")
    return bool(_SECRET_KEY.search(name))


def without_credentials(value: Any) -> Any:
    """``value`` (a JSON value) with every credential-like key left out, a DSN's password and
    any bare API key or token inside a text replaced by :data:`REDACTED`, recursively."""
    if isinstance(value, dict):
        return {key: without_credentials(item) for key, item in value.items()
                if not is_secret_key(key)}
    if isinstance(value, list | tuple):
        return [without_credentials(item) for item in value]
    if isinstance(value, str):
        return _text_without_credentials(value)
    return value


def _text_without_credentials(text: str) -> str:
    parts = text.split(",")
    pairs = [_PAIR.match(part) for part in parts]
    if all(pairs):  # k=v,k=v: leave out the pairs naming a secret
        text = ",".join(part for part, pair in zip(parts, pairs, strict=True)
                        if pair is not None and not is_secret_key(pair.group(1)))
    text = _DSN_PASSWORD.sub(lambda m: f"{m['head']}:{REDACTED}@", text)
    return _SECRET_VALUE.sub(REDACTED, text)
