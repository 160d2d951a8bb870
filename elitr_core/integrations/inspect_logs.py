"""inspect_ai logs (``.eval`` and ``.json``) of the ELITR-Bench task as :class:`HarnessRun`\\ s.

Read with inspect's own ``read_eval_log`` (never a parser of ours, so every log format inspect
writes is read as inspect reads it). A log is refused, with one line, when it is not a log of
``elitr_bench``, not finished (started, cancelled, errored) or holds an errored sample, unless
``partial``: then its answered samples are read and the others listed in ``skipped``. A sample
id that is not ``MEETING/qN`` or ``MEETING/mt``, or a multi-turn sample with fewer answers
than questions, is refused always; so is anything given twice (no last-wins, the rules of
``data.strict``): a ZIP member or a JSON key of the file, a sample id, a question in a
multi-turn sample's list, a score key of the judge, written in other than ASCII digits.

inspect reads a whole log into memory (every sample as pydantic objects, about three times
its JSON), so a log is bounded before inspect sees it (:func:`_bounded_log`): the file, and
every member of an ``.eval`` archive streamed as it expands (never held whole), at most
:data:`MAX_LOG_BYTES` together, and :data:`~elitr_core.data.validation.MAX_JSON_ELEMENTS`
values in all; inspect then reads the very file that was checked.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import IO, Any

from elitr_core.data.strict import id_number, loads, refuse_duplicates
from elitr_core.errors import DataFileError, UserError
from elitr_core.integrations.harness import HarnessAnswer, HarnessRun, add_scores, require
from elitr_core.integrations.items import parse_item_id

TASK_NAME = "elitr_bench"  # inspect_task.TASK_NAME (that module imports inspect_ai)
_NOT_ELITR = ("not an ELITR-Bench file name (elitr-bench-{qa,conv}_{dev,test2}.json, "
              "elitr-bench-czech-... or elitr-bench-{qa,conv}_{split}_{st,mt}_{eval}.json)")
#: The evaluator kind of the task's own judge scorer; any other scorer is a metric.
JUDGE_SCORER = "elitr_judge"
#: Most bytes a log may expand to, all its members together (the test logs of 28 questions
#: are 0.4 MB): inspect holds about 3x a log's JSON while it reads, and the rules of
#: ``data.strict`` parse it once more before, so a log of 15 MB imports at a peak of about
#: 210 MB (bench/results/bounded-readers-2026-11-28.md).
MAX_LOG_BYTES = 16 * 1024 * 1024
_ZSTD = 93  # the ZIP method of inspect's .eval members, readable once inspect_ai is imported


def is_inspect_log(path: Path) -> bool:
    """Whether the project reads ``path`` as an inspect_ai log (``.eval``; a ``.json`` that is
    not an ELITR-Bench file name is tried as one)."""
    from elitr_core.data.benchmark import classify

    suffix = path.suffix.lower()
    return suffix == ".eval" or (suffix == ".json" and classify(path.name) is None)


def read_inspect_log(path: Path, *, partial: bool = False) -> HarnessRun:
    """The run a log of the ELITR-Bench task holds (see the module's rules)."""
    json_file = path.suffix.lower() == ".json"
    try:
        log_module = require("inspect_ai.log", "inspect_ai", f"{path.name} (an inspect_ai log)")
    except UserError:
        if not json_file:
            raise
        raise DataFileError(path, f"{_NOT_ELITR}; if it is an inspect_ai log, install "
                            "inspect_ai to import it: pip install inspect_ai") from None
    try:
        with _bounded_log(path, json_file) as handle:
            _refuse_twice_in_file(path)  # parses the members again, now within the bounds
            log = log_module.read_eval_log(handle, format="json" if json_file else "eval")
    except OSError as exc:
        raise DataFileError(path, f"cannot be read ({exc.strerror or exc}): check the file's "
                            "permissions") from None
    except DataFileError:
        raise
    except Exception as exc:  # inspect raises pydantic, JSON and ZIP errors alike
        what = _NOT_ELITR + " nor" if json_file else "not"
        raise DataFileError(path, f"{what} an inspect_ai log inspect can read "
                            f"({type(exc).__name__}): check the file") from None
    task = str(log.eval.task_registry_name or log.eval.task)
    if task.rsplit("/", 1)[-1] != TASK_NAME:
        raise DataFileError(path, f"a log of task {task!r}, not of ELITR-Bench's {TASK_NAME} "
                            "(elitr_core/integrations/inspect_task.py): only its logs import")
    run = _run_of(path, log)
    refuse_duplicates(((str(sample.id), f"sample {n}") for n, sample in
                       enumerate(log.samples or [], 1)), path=path,
                      describe=lambda sample_id: f"sample id {sample_id}")
    if log.status != "success" and not partial:
        raise DataFileError(path, f"the log's status is {log.status!r}, not 'success': rerun "
                            "it to the end, or pass --partial to import its answered samples")
    graders = _graders(path, log)
    for sample in log.samples or []:
        _read_sample(path, run, sample, partial, graders)
    if not run.answers:
        raise DataFileError(path, "holds no answered sample: nothing to import")
    return run


def _refuse_twice_in_file(path: Path) -> None:
    """A ZIP member given twice in an ``.eval``, or a key given twice in one JSON object of
    the log or its members: inspect's own reader would keep one of them silently. (inspect
    writes NaN for an unscored value, so the JSON constants are read here. Its members are
    zstd-compressed: readable once ``inspect_ai.log`` is imported, which patches zipfile.)"""
    import zipfile

    from elitr_core.data.validation import MAX_FILE_BYTES, open_archive, read_bytes

    if path.suffix.lower() == ".json":
        loads(read_bytes(path), where=path, constants=True)
        return
    try:
        archive = open_archive(path)
    except DataFileError:
        return  # not a ZIP: inspect's reader says what it is in its own refusal
    with archive:
        members = [info for info in archive.infolist() if not info.is_dir()]
        refuse_duplicates(((info.filename, f"entry {n}") for n, info in enumerate(members, 1)),
                          path=path, describe=lambda name: f"ZIP member {name!r}")
        for info in members:
            if not info.filename.endswith(".json"):
                continue
            try:
                with archive.open(info) as handle:
                    data = handle.read(MAX_FILE_BYTES + 1)
            except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as exc:
                raise DataFileError(path, f"damaged log member {info.filename}: {exc}"
                                    ) from None
            if len(data) > MAX_FILE_BYTES:
                raise DataFileError(path, f"log member {info.filename} expands beyond "
                                    f"{MAX_FILE_BYTES:,} bytes: not a log this reads")
            loads(data, where=f"{path}:{info.filename}", constants=True)


def _bounded_log(path: Path, json_file: bool) -> IO[bytes]:
    """The log file opened (a regular file, never a FIFO or device) once its size, its
    members' expanded sizes and its JSON's nesting and values are within bounds."""
    from elitr_core.data import validation

    if json_file:
        if path.is_file() and path.stat().st_size > MAX_LOG_BYTES:
            _refuse_size(path, path.stat().st_size, expanded=False)
        data = validation.read_bytes(path, max_bytes=MAX_LOG_BYTES)
        validation.refuse_shape(*validation.json_shape(data), where=path)
        return io.BytesIO(data)
    import zipfile

    handle = validation.open_regular(path, max_bytes=validation.MAX_ARCHIVE_BYTES)
    try:
        archive = zipfile.ZipFile(handle)  # leaves the handle open: inspect reads it next
        declared = sum(info.file_size for info in archive.infolist())
        if declared > MAX_LOG_BYTES:  # (a member whose header lies: member_chunks refuses it)
            _refuse_size(path, declared, expanded=True)
        budget, elements = [MAX_LOG_BYTES], 0
        for info in archive.infolist():
            depth, count = validation.scan_shape(validation.member_chunks(
                archive, info, where=path, budget=budget, methods=frozenset({_ZSTD}),
                max_bytes=MAX_LOG_BYTES))
            elements += count
            validation.refuse_shape(depth, elements, where=f"{path}: {info.filename}")
    except Exception as exc:
        handle.close()
        if isinstance(exc, DataFileError):
            raise
        raise DataFileError(path, f"not an inspect_ai log inspect can read ({type(exc).__name__}"
                                  "): check the file") from None
    handle.seek(0)
    return handle


def _refuse_size(path: Path, size: int, *, expanded: bool) -> None:
    """Refuse a log past :data:`MAX_LOG_BYTES` (an ``.eval``'s members ``expanded``), saying
    how to import it: the generic "split it into smaller files" cannot be done to a log."""
    from elitr_core.data.bounded import mb

    what = "that expands to" if expanded else "of"
    raise DataFileError(path, f"an inspect_ai log {what} {mb(size)}, more than the "
                        f"{mb(MAX_LOG_BYTES)} read at most: import the eval in parts, logs of "
                        "fewer samples each (inspect eval --limit or --sample-id)")


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


#: Keys of a model's arguments that hold a credential: never part of a stored identity.
_SECRET_WORDS = ("key", "token", "password", "secret", "credential")


def _settings(config: Any, args: dict[str, Any] | None) -> dict[str, Any]:
    """A model's generate config and arguments as stored in an identity (scalars only, no
    credential)."""
    dumped = config.model_dump(exclude_none=True) if config is not None else {}
    return {"config": dumped, "args": {
        k: v for k, v in (args or {}).items() if isinstance(v, str | int | float | bool)
        and not any(word in k.lower() for word in _SECRET_WORDS)}}


def _graders(path: Path, log: Any) -> dict[str, dict[str, Any]]:
    """The identity of each kind of scorer: ``judge`` (the task's judge: inspect's ``grader``
    role, else the evaluated model grading itself, with its settings and the judge style) and
    ``other`` (any other scorer: the grader role when the log has one, else none)."""
    roles = log.eval.model_roles or {}
    role = roles.get("grader")
    if isinstance(role, list):
        raise DataFileError(path, "the log names several grader models: a score has one "
                            "grader; run one grader a log")
    style = (log.eval.task_args or {}).get("judge")
    if role is not None:
        grader = {"grader": str(role.model), **_settings(role.config, role.args)}
        return {"judge": {**grader, "style": style}, "other": grader}
    itself = {"grader": str(log.eval.model),
              **_settings(log.eval.model_generate_config, log.eval.model_args)}
    return {"judge": {**itself, "style": style}, "other": {}}


def _read_sample(path: Path, run: HarnessRun, sample: Any, partial: bool,
                 graders: dict[str, dict[str, Any]]) -> None:
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
        _read_score(run, name, score, meeting, numbers, sample.id,
                    graders["judge" if name == JUDGE_SCORER else "other"])


def _numbers(path: Path, sample: Any) -> list[int]:
    listed = (sample.metadata or {}).get("questions")
    numbers = [id_number(n) for n in listed] if isinstance(listed, list) else []
    if not numbers or None in numbers:
        raise DataFileError(path, f"multi-turn sample {sample.id} lists no question numbers "
                            "in its metadata 'questions'")
    refuse_duplicates(((n, f"turn {i}") for i, n in enumerate(numbers, 1)), path=path,
                      describe=lambda n: f"multi-turn sample {sample.id}: question {n}")
    return [n for n in numbers if n is not None]


def _why(sample: Any) -> str:
    if sample.error is not None:
        return str(sample.error.message).splitlines()[0][:200] if sample.error.message \
            else "an error"
    return "not answered"


def _read_score(run: HarnessRun, name: str, score: Any, meeting: str,
                numbers: list[int], sample_id: object, identity: dict[str, Any]) -> None:
    """A scorer's score: per question from the task judge's ``metadata["scores"]`` (keys: the
    numbers of the sample's questions in ASCII digits), else the sample's value for its one
    question (``harness.add_scores`` checks them)."""
    per_question = (score.metadata or {}).get("scores")
    if isinstance(per_question, dict):
        values = []
        for key, value in per_question.items():
            number = id_number(key)
            if number is None or number not in numbers:
                raise DataFileError(run.source, f"sample {sample_id}: scorer {name} scores "
                                    f"question {key!r}, which is not one of the sample's "
                                    "questions (numbers in ASCII digits): the log is damaged")
            values.append((meeting, number, value))
    elif len(numbers) == 1:
        values = [(meeting, numbers[0], score.value)]
    else:
        values = []
    add_scores(run, name, "llm" if name == JUDGE_SCORER else "metric", values, identity)
