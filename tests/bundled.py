"""The bundled release files, each read once per test process.

The archives are ZipCrypto-encrypted, which Python decrypts in pure Python a byte at a time:
reading a responses file out of ``generated-responses.zip`` costs 0.3-0.5 CPU-s (every member
before it in the archive is decrypted too). A test that cuts or mutates a bundled file takes a
fresh parse from here, read by the product's own reader (``iter_archive``) the first time.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from elitr_core.data.benchmark import DATA_DIR, iter_archive


@functools.cache
def _member(archive: str, suffix: str) -> bytes:
    return next(data for name, data in iter_archive(DATA_DIR / archive) if name.endswith(suffix))


def bundled_json(archive: str, suffix: str) -> Any:
    """The first member of the bundled ``archive`` (``generated-responses.zip``, ``data.zip``)
    whose name ends with ``suffix``, parsed anew at each call (the caller may edit it)."""
    return json.loads(_member(archive, suffix))
