"""inspect_ai logs (``.eval`` and ``.json``) of the ELITR-Bench task as :class:`HarnessRun`\\ s.

Read with inspect's own ``read_eval_log`` (never a parser of ours, so every log format inspect
writes is read as inspect reads it). A log is refused, with one line, when it is not a log of
``elitr_bench``, not finished (started, cancelled, errored) or holds an errored sample, unless
``partial``: then its answered samples are read and the others listed in ``skipped``. A sample
id that is not ``MEETING/qN`` or ``MEETING/mt``, or a multi-turn sample with fewer answers
than questions, is refused always.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from elitr_core.errors import DataFileError, UserError
from elitr_core.integrations.harness import HarnessAnswer, HarnessRun, add_scores, require
from elitr_core.integrations.items import parse_item_id

TASK_NAME = "elitr_bench"  # inspect_task.TASK_NAME (that module imports inspect_ai)
_NOT_ELITR = ("not an ELITR-Bench file name (elitr-bench-{qa,conv}_{dev,test2}.json, "
              "elitr-bench-czech-... or elitr-bench-{qa,conv}_{split}_{st,mt}_{eval}.json)")
#: The evaluator kind of the task's own judge scorer; any other scorer is a metric.
JUDGE_SCORER = "elitr_judge"


def is_inspect_log(path: Path) -> bool:
    """Whether the project reads ``path`` as an inspect_ai log (``.eval``; a ``.json`` that is
    not an ELITR-Bench file name is tried as one)."""
    from elitr_core.data.benchmark import classify

    suffix = path.suffix.lower()
    return suffix == ".eval" or (suffix == ".json" and classify(path.name) is None)


def read_inspect_log(path: Path, *, partial: bool = False) -> HarnessRun:
    """The run a log of the ELITR-Bench task holds (see the module's rules)."""
    from elitr_core.data.validation import readable_file

    readable_file(path)
    json_file = path.suffix.lower() == ".json"
    try:
        log_module = require("inspect_ai.log", "inspect_ai", f"{path.name} (an inspect_ai log)")
    except UserError:
        if not json_file:
            raise
        raise DataFileError(path, f"{_NOT_ELITR}; if it is an inspect_ai log, install "
                            "inspect_ai to import it: pip install inspect_ai") from None
    try:
        log = log_module.read_eval_log(str(path))
    except OSError as exc:
        raise DataFileError(path, f"cannot be read ({exc.strerror or exc}): check the file's "
                            "permissions") from None
    except Exception as exc:  # inspect raises pydantic, JSON and ZIP errors alike
        what = _NOT_ELITR + " nor" if json_file else "not"
        raise DataFileError(path, f"{what} an inspect_ai log inspect can read "
                            f"({type(exc).__name__}): check the file") from None
    task = str(log.eval.task_registry_name or log.eval.task)
    if task.rsplit("/", 1)[-1] != TASK_NAME:
        raise DataFileError(path, f"a log of task {task!r}, not of ELITR-Bench's {TASK_NAME} "
                            "(elitr_core/integrations/inspect_task.py): only its logs import")
    run = _run_of(path, log)
    if log.status != "success" and not partial:
        raise DataFileError(path, f"the log's status is {log.status!r}, not 'success': rerun "
                            "it to the end, or pass --partial to import its answered samples")
    for sample in log.samples or []:
        _read_sample(path, run, sample, partial)
    if not run.answers:
        raise DataFileError(path, "holds no answered sample: nothing to import")
    return run


def _run_of(path: Path, log: Any) -> HarnessRun:
    args = dict(log.eval.task_args or {})
    settings = (log.eval.metadata or {}).get(TASK_NAME) or {}

    def setting(name: str, default: str) -> str:
        return str(settings.get(name, args.get(name, default)))

    config = {
        "source": "inspect_ai", "file": path.name,
        "inspect_version": (log.eval.packages or {}).get("inspect_ai"),
        "task": log.eval.task, "task_version": log.eval.task_version,
        # a database URL may hold a password: it is not copied into the run's config
        "task_args": {k: v for k, v in args.items() if k != "db"},
        "model_args": {k: v for k, v in (log.eval.model_args or {}).items()
                       if isinstance(v, str | int | float | bool)},
        "generate_config": log.eval.model_generate_config.model_dump(exclude_none=True),
        "eval_id": log.eval.eval_id, "run_id": log.eval.run_id, "status": log.status,
    }
    return HarnessRun(source=path.name, backend="inspect", model=str(log.eval.model),
                      split=setting("split", "test2"), setting=setting("setting", "qa"),
                      mode=setting("mode", "st"), language=setting("language", "en"),
                      config=config)


def _read_sample(path: Path, run: HarnessRun, sample: Any, partial: bool) -> None:
    parsed = parse_item_id(sample.id)
    if parsed is None:
        raise DataFileError(path, f"sample {str(sample.id)!r} names no ELITR-Bench question "
                            "(ids are MEETING/qN or MEETING/mt): a log of another dataset?")
    if sample.epoch != 1:
        raise DataFileError(path, f"sample {sample.id} has epoch {sample.epoch}: a run holds "
                            "one answer per question; rerun with --epochs 1")
    meeting, number = parsed
    numbers = [number] if number is not None else _numbers(path, sample)
    texts = [m.text for m in sample.messages if m.role == "assistant"]
    if sample.error is not None or len(texts) < len(numbers):
        if not partial:
            raise DataFileError(path, f"sample {sample.id} failed ({_why(sample)}): rerun "
                                "it, or pass --partial to import the answered samples")
        run.skipped.append(f"{path.name}: sample {sample.id} not imported ({_why(sample)})")
        return
    run.answers += [HarnessAnswer(meeting, n, text, str(sample.id))
                    for n, text in zip(numbers, texts, strict=False)]
    for name, score in (sample.scores or {}).items():
        _read_score(run, name, score, meeting, numbers)


def _numbers(path: Path, sample: Any) -> list[int]:
    numbers = (sample.metadata or {}).get("questions")
    if not isinstance(numbers, list) or not numbers or not all(
            isinstance(n, int) and not isinstance(n, bool) for n in numbers):
        raise DataFileError(path, f"multi-turn sample {sample.id} lists no question numbers "
                            "in its metadata 'questions'")
    return numbers


def _why(sample: Any) -> str:
    if sample.error is not None:
        return str(sample.error.message).splitlines()[0][:200] if sample.error.message \
            else "an error"
    return "not answered"


def _read_score(run: HarnessRun, name: str, score: Any, meeting: str,
                numbers: list[int]) -> None:
    """A scorer's score: per question from the task judge's ``metadata["scores"]``, else the
    sample's value for its one question (``harness.add_scores`` checks them)."""
    per_question = (score.metadata or {}).get("scores")
    if isinstance(per_question, dict):
        values = [(meeting, int(k), v) for k, v in per_question.items()
                  if str(k).isdigit() and int(k) in numbers]
    elif len(numbers) == 1:
        values = [(meeting, numbers[0], score.value)]
    else:
        values = []
    add_scores(run, name, "llm" if name == JUDGE_SCORER else "metric", values)
