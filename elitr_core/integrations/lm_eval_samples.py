"""lm-evaluation-harness output of the ``elitr_bench`` task as a :class:`HarnessRun`.

``lm_eval --log_samples --output_path OUT`` writes, per model, ``results_<time>.json`` (the
model, its arguments, lm_eval's version) and ``samples_<task>_<time>.jsonl``: one JSON object
per question (``doc_id``, ``doc``: the row of ``export benchmark --format jsonl``, ``resps``,
``filtered_resps``, the metrics' values). The answer stored is ``filtered_resps[0]``, the
string lm_eval scored. lm_eval has no reader of these files, and reading them needs no part of
it: each line is plain JSON, so importing them does not need lm_eval installed. Both files are
read by the no-last-wins rules of ``data.strict`` (a JSON key twice, NaN or Infinity, a
question twice under two spellings of its id: refused).

Both files are read by the bounded reader (``data.bounded``: regular files of at most 64 MB,
the results file only from the samples file's own folder, never through a link out of it) and
their JSON's nesting and values are bounded before it is parsed (``validation.refuse_shape``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from elitr_core.data.strict import loads, refuse_duplicates
from elitr_core.errors import DataFileError
from elitr_core.integrations.harness import HarnessAnswer, HarnessRun, add_scores
from elitr_core.integrations.items import parse_item_id

TASK_NAME = "elitr_bench"
_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<time>[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9.-]+)\.jsonl$")
_KEY = ("split", "setting", "mode", "language")


def read_lm_eval_samples(path: Path) -> HarnessRun:
    """The run of one samples file, with the model named by the results file beside it."""
    match = _NAME.match(path.name)
    if match is None or match["task"] != TASK_NAME:
        raise DataFileError(path, f"not an lm-evaluation-harness samples file of {TASK_NAME} "
                            f"(samples_{TASK_NAME}_<time>.jsonl, written by lm_eval "
                            "--log_samples on elitr_core/integrations/lm_eval/elitr_bench.yaml)")
    results = _results(path, match["time"])
    lines = _lines(path)
    first = lines[0]["doc"]
    run = HarnessRun(source=path.name, backend="lm-eval", model=_model_name(path, results),
                     config=_config(path, results), split=str(first.get("split")),
                     setting=str(first.get("setting")), mode=str(first.get("mode")),
                     language=str(first.get("language")))
    seen: list[tuple[tuple[str, int | None], str]] = []
    metrics: dict[str, list[tuple[str, int, Any]]] = {}
    for number, line in enumerate(lines, 1):
        doc = line["doc"]
        parsed = parse_item_id(doc.get("id"))
        if parsed is None or parsed[1] is None:
            raise DataFileError(path, f"line {number}: doc id {doc.get('id')!r} names no "
                                "ELITR-Bench question (MEETING/qN)")
        if any(str(doc.get(k)) != str(first.get(k)) for k in _KEY):
            raise DataFileError(path, f"line {number}: {doc['id']} differs from line 1 in "
                                "split, setting, mode or language")
        seen.append((parsed, f"line {number}"))
        answer = line.get("filtered_resps")
        if not isinstance(answer, list) or not answer or not isinstance(answer[0], str):
            raise DataFileError(path, f"line {number}: filtered_resps is not a list of "
                                "strings: the file is damaged")
        meeting, question = parsed[0], parsed[1]
        run.answers.append(HarnessAnswer(meeting, question, answer[0], str(doc["id"])))
        for metric in line.get("metrics") or []:
            metrics.setdefault(str(metric), []).append((meeting, question, line.get(metric)))
    refuse_duplicates(seen, path=path, describe=lambda key: f"meeting {key[0]} question "
                      f"{key[1]}")
    for metric, values in metrics.items():
        add_scores(run, metric, "metric", values)
    return run


def _lines(path: Path) -> list[dict[str, Any]]:
    from elitr_core.data.validation import json_shape, read_bytes, refuse_shape

    data = read_bytes(path)
    refuse_shape(*json_shape(data), where=path)  # all its lines together
    try:
        content = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataFileError(path, f"is not UTF-8 (byte {exc.start}): lm_eval writes UTF-8; "
                            "the file is damaged") from None
    out = []
    for number, text in enumerate(content.splitlines(), 1):
        if not text.strip():
            continue
        line = loads(text, where=f"{path}: line {number}")
        if not isinstance(line, dict) or not isinstance(line.get("doc"), dict):
            raise DataFileError(path, f"line {number} has no doc: not an lm_eval samples line")
        out.append(line)
    if not out:
        raise DataFileError(path, "holds no sample: nothing to import")
    return out


def _results(path: Path, time: str) -> dict[str, Any]:
    from elitr_core.data.validation import json_shape, read_bytes, refuse_shape

    results = path.with_name(f"results_{time}.json")
    if not results.exists() and not results.is_symlink():
        raise DataFileError(path, f"{results.name}, which names the model, is not beside it: "
                            "import the samples from the folder lm_eval wrote")
    raw = read_bytes(results, within=path.parent)
    refuse_shape(*json_shape(raw), where=results)
    data = loads(raw, where=results)
    if not isinstance(data, dict) or not isinstance(data.get("config"), dict):
        raise DataFileError(path, f"{results.name} is not an lm_eval results file")
    return data


def _model_name(path: Path, results: dict[str, Any]) -> str:
    """The model as lm_eval names it; a local folder (``pretrained=/models/x``) by its name."""
    args = results["config"].get("model_args")
    name = results.get("model_name") or (args.get("pretrained") if isinstance(args, dict)
                                         else None)
    if not isinstance(name, str) or not name.strip():
        raise DataFileError(path, "its results file names no model (model_name)")
    return Path(name).name if name.startswith(("/", ".", "~")) else name


def _config(path: Path, results: dict[str, Any]) -> dict[str, Any]:
    task = (results.get("configs") or {}).get(TASK_NAME) or {}
    config = results["config"]
    return {"source": "lm-evaluation-harness", "file": path.name,
            "lm_eval_version": results.get("lm_eval_version"), "model": config.get("model"),
            "model_args": config.get("model_args"), "gen_kwargs": config.get("gen_kwargs"),
            "generation_kwargs": task.get("generation_kwargs"), "limit": config.get("limit"),
            "chat_template_sha": results.get("chat_template_sha"),
            "system_instruction": results.get("system_instruction"),
            "transformers_version": results.get("transformers_version")}
