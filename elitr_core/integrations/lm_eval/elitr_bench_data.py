"""The dataset of the ``elitr_bench`` lm-evaluation-harness task: the JSONL that
``python -m elitr_core export benchmark --format jsonl`` writes, named by
``--metadata '{"jsonl": "PATH"}'``. lm_eval imports this file by its path (``!function``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def load(jsonl: str | None = None, **_: Any) -> Any:
    """``{"test": Dataset}`` of the exported questions (lm_eval passes ``--metadata``)."""
    import datasets

    if not jsonl:
        raise ValueError("elitr_bench needs the exported questions: write them with `python -m "
                         "elitr_core export benchmark --format jsonl --out FILE` and pass "
                         "--metadata '{\"jsonl\": \"FILE\"}'")
    if not Path(jsonl).is_file():
        raise ValueError(f"elitr_bench: {jsonl} is not a file (--metadata's jsonl)")
    return datasets.DatasetDict({"test": datasets.Dataset.from_json(str(jsonl))})
