"""What a pass records about itself: failures (one line, capped), usage totals, the metadata
stored with an answer, versions and the process."""

from __future__ import annotations

import json
import os
import platform
import re
import socket
from datetime import UTC, datetime, timedelta
from importlib import metadata

from elitr_core.backends.base import Completion
from elitr_core.passes.records import (
    MAX_FAILURES,
    TRACKED_PACKAGES,
    completion_meta,
    installed_versions,
    library_versions,
    now_iso,
    process_info,
    usage_totals,
    with_failure,
)


def test_with_failure_keeps_one_line_per_error_and_caps_the_list() -> None:
    first = with_failure(None, RuntimeError("server said 500\nTraceback: ..."))
    assert [(f["error"], f["type"]) for f in first] == [("server said 500", "RuntimeError")]
    assert [f["type"] for f in with_failure(first, TimeoutError())] == ["RuntimeError",
                                                                       "TimeoutError"]
    assert with_failure(None, TimeoutError())[0]["error"] == "TimeoutError"  # no message
    stop = with_failure(None, KeyboardInterrupt())[0]["error"]
    assert stop.startswith("interrupted") and "rerun the same command to resume" in stop
    assert len(with_failure(None, ValueError("x" * 2000))[0]["error"]) == 500
    many: list[dict[str, object]] = []
    for n in range(MAX_FAILURES + 5):
        many = with_failure(many, ValueError(f"error {n}"))
    assert len(many) == MAX_FAILURES
    assert many[0]["error"] == "error 5" and many[-1]["error"] == f"error {MAX_FAILURES + 4}"


def test_usage_totals() -> None:
    metas = [{"prompt_tokens": 100, "completion_tokens": 20, "cached_tokens": 64},
             {"prompt_tokens": 5, "completion_tokens": None}, {"prompt_tokens": "7"}, {}]
    assert usage_totals(metas) == {"prompt_tokens": 105, "completion_tokens": 20,
                                   "cached_tokens": 64}
    assert usage_totals([]) == {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0}


def test_completion_meta_keeps_json_scalars_only() -> None:
    completion = Completion(text="Paris", prompt_tokens=12, completion_tokens=3,
                            finish_reason="stop",
                            metadata={"model": "m-1", "latency": 0.5, "retries": 0,
                                      "cached": False, "logprobs": [0.1], "raw": {"a": 1}})
    meta = completion_meta(completion, attempt=2)
    assert {k: v for k, v in meta.items() if k != "at"} == {
        "prompt_tokens": 12, "completion_tokens": 3, "cached_tokens": None,
        "finish_reason": "stop", "model": "m-1", "latency": 0.5, "retries": 0,
        "cached": False, "attempt": 2}
    assert json.loads(json.dumps(meta)) == meta
    stamp = datetime.fromisoformat(meta["at"])
    assert abs(stamp - datetime.now(UTC)) < timedelta(minutes=1)


def test_now_iso_is_utc_to_the_second() -> None:
    stamp = now_iso()
    parsed = datetime.fromisoformat(stamp)
    assert parsed.utcoffset() == timedelta(0) and parsed.microsecond == 0
    assert stamp.endswith("+00:00")


def test_versions_and_process() -> None:
    versions = library_versions()
    assert versions["python"] == platform.python_version()
    assert "elitr_core" in versions
    for package in TRACKED_PACKAGES:
        try:
            installed = metadata.version(package)
        except metadata.PackageNotFoundError:
            assert package not in versions
        else:
            assert versions[package] == installed
    assert process_info() == {"pid": os.getpid(), "host": socket.gethostname()}


def test_installed_versions_agree_with_importlib_metadata() -> None:
    # The folder-name reading against the reference: every distribution importlib finds.
    found = installed_versions()
    expected = {
        re.sub(r"[-_.]+", "-", dist.metadata["Name"]).lower(): dist.version
        for dist in reversed(list(metadata.distributions()))  # the first on sys.path wins
    }
    assert len(expected) > 50  # the project's own requirements are installed
    assert {name: found.get(name) for name in expected} == expected
