"""The bundled release files, each read once per test process.

The archives are ZipCrypto-encrypted, which Python decrypts in pure Python a byte at a time
(about 2 CPU-s for all of them). The product's own reader (``iter_archive``) reads each archive
once per process, and replays it afterwards (:func:`read_bundled_archives_once`, installed by the
conftest); a test that cuts or mutates a bundled file takes a fresh parse from here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from elitr_core.data import benchmark
from elitr_core.data.benchmark import DATA_DIR


def _member(archive: str, suffix: str) -> bytes:
    # the whole archive, so that the reader keeps it for every later read in this process
    members = list(benchmark.iter_archive(DATA_DIR / archive))
    return next(data for name, data in members if name.endswith(suffix))


def bundled_json(archive: str, suffix: str) -> Any:
    """The first member of the bundled ``archive`` (``generated-responses.zip``, ``data.zip``)
    whose name ends with ``suffix``, parsed anew at each call (the caller may edit it)."""
    return json.loads(_member(archive, suffix))


def read_bundled_archives_once() -> None:
    """Make the product's archive reader (``benchmark.iter_archive``, behind ``bundled_files``,
    ``init`` and every import of the bundled data) decrypt each bundled archive once per test
    process and replay its members afterwards: a quick-tier worker read them 29-43 times
    (5-11 CPU-s of pure-Python ZipCrypto), for the database templates, the test databases that
    import the bundled data in process, and the frames of the statistics tests.

    Only the archives of ``DATA_DIR`` as they are on disk are replayed (the key holds their
    size and modification time); any other archive, and a bundled one a test has changed, is
    read by the real reader, and the reader's checks on hostile archives are tested on such
    files (tests/elitr_core/data/test_validation.py). A read that stops early or fails stores
    nothing."""
    real = benchmark.iter_archive
    if getattr(real, "replays_bundled", False):
        return
    bundled = DATA_DIR.resolve()
    read: dict[tuple[str, int, int, bytes], tuple[tuple[str, bytes], ...]] = {}

    def replaying(path: Path, password: bytes = benchmark.ARCHIVE_PASSWORD
                  ) -> Iterator[tuple[str, bytes]]:
        resolved = Path(path).resolve()
        if resolved.parent != bundled:
            yield from real(path, password)
            return
        stat = resolved.stat()
        key = (str(resolved), stat.st_mtime_ns, stat.st_size, password)
        if key in read:
            yield from read[key]
            return
        members = []
        for member in real(path, password):
            members.append(member)
            yield member
        read[key] = tuple(members)  # reached only when the whole archive was read

    replaying.replays_bundled = True  # type: ignore[attr-defined]
    benchmark.iter_archive = replaying  # type: ignore[assignment]
