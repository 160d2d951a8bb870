"""Provenance corpus (issue 39): every way a score or an answer comes in, tried as a researcher
would, each case on SQLite and PostgreSQL.

Each case is one command of ``python -m elitr_core`` (after the ``setup`` commands it needs) on a
fresh copy of the bundled data, and is either **refused** in one line (exit 2) with the
database unchanged, or **stored** under the evaluators the case names, each of the kind and
source it names. In every case, refused or stored:

- no score lands under an evaluator of another kind or source: every evaluator that existed
  before keeps its source, its kind and exactly its scores (but those a case names in
  ``grows``, its own source's, which only gain scores), and every new evaluator is one the
  case expects, of the kind and source it expects;
- the tables that read the release's evaluators (calibration, PPI, agreement as ICC) are
  unchanged: computed after every stored case and compared with the bundled data's; a refused
  case leaves every row of every table as it was (compared whole), so every table computed
  from them too (the tables are computed after the refused cases of a few kinds as well, as
  a check of that argument: :data:`TABLES_AFTER`).

The inputs are made as a researcher makes them: inspect_ai logs by the real ``inspect_ai.eval``
of the shipped task (mockllm; a grader role for the separate-grader log), edited with inspect's
own ``read_eval_log``/``write_eval_log``; lm-evaluation-harness output in the format its
``--log_samples`` writes (``results_<time>.json`` beside ``samples_elitr_bench_<time>.jsonl``,
as tests/elitr_core/integrations/test_lm_eval.py reads from a real run); scores CSVs in the
``scores`` export's columns; ELITR-Bench responses files cut from the bundled archive; judge
passes with the fake backend; studies and metrics by their commands.

To add a case: one :class:`Case` in :data:`CASES` (its ``make`` writes its input under the
test's folder and returns the command's arguments, without ``--db``).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from elitr_core.cli.main import main
from tests.bundled import bundled_json
from tests.dbstate import snapshot
from tests.elitr_core.run_helpers import MEETINGS, rows

pytest.importorskip("inspect_ai")

JUDGE_MODEL = "mockllm/model"
GRADER = "mockllm/grader"
SELF_GRADED = f"inspect:elitr_judge:{JUDGE_MODEL}"
GRADED = f"inspect:elitr_judge:{GRADER}"
RELEASE = ("gpt-4", "prometheus", "gold-human", "silver-human")
#: The tables that read the release's evaluators, on the part that human scores cover.
TABLES = (["calibration", "--judge", "gpt-4", "--human", "gold-human"],
          ["ppi", "--judge", "gpt-4", "--human", "gold-human"],
          ["icc", *(x for slug in RELEASE for x in ("--evaluator", slug))])
HUMAN_PART = ["--split", "test2", "--setting", "qa", "--mode", "st"]
M1 = MEETINGS[0]
LM_TIME = "2026-11-27T10-00-00.000001"


@dataclass
class Inputs:
    """What the cases start from: the inspect logs of the real task (``st``, ``mt``: graded
    by the evaluated model; ``graded``: single-turn, graded by ``GRADER``) and a folder for
    the case's own files."""

    logs: dict[str, Path]
    folder: Path


@dataclass(frozen=True)
class Case:
    """One provenance case: ``make(inputs)`` writes its input and returns the command (no
    ``--db``); ``setup(inputs)`` the commands run first. ``refused``: a part of the one-line
    refusal; else the case stores and ``evaluators`` are the new evaluators (slug -> kind,
    source), ``grows`` the existing ones it may add scores to (its own source's), ``unscored``
    the new ones that hold no score yet (a study's, before anyone answers)."""

    name: str
    make: Callable[[Inputs], list[str]]
    refused: str | None = None
    evaluators: dict[str, tuple[str, str]] = field(default_factory=dict)
    grows: tuple[str, ...] = ()
    unscored: tuple[str, ...] = ()
    setup: Callable[[Inputs], list[list[str]]] = lambda inputs: []


# ---------------------------------------------------------------------------------------------
# inputs


def _rewrite(inputs: Inputs, mode: str, name: str, edit: Callable[[Any], Any]) -> Path:
    """The ``mode`` log edited by ``edit`` (inspect's own reader and writer)."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(inputs.logs[mode]))
    edit(log)
    target = inputs.folder / name
    write_eval_log(log, str(target))
    return target


def _inspect(mode: str, edit: Callable[[Any], Any], *, suffix: str = ".eval",
             extra: tuple[str, ...] = ()) -> Callable[[Inputs], list[str]]:
    def make(inputs: Inputs) -> list[str]:
        return ["import", *extra, str(_rewrite(inputs, mode, f"case{suffix}", edit))]
    return make


def _log(mode: str, *extra: str) -> Callable[[Inputs], list[str]]:
    return lambda inputs: ["import", *extra, str(inputs.logs[mode])]


def _rename_scorer(name: str) -> Callable[[Any], None]:
    def edit(log: Any) -> None:
        for sample in log.samples:
            sample.scores = {name: next(iter(sample.scores.values()))}
        log.results = None  # the log's summary names the scorer too; the import reads samples
    return edit


def _score_keys(rename: dict[str, str]) -> Callable[[Any], None]:
    def edit(log: Any) -> None:
        scores = log.samples[0].scores["elitr_judge"].metadata["scores"]
        for old, new in rename.items():
            scores[new] = scores.pop(old)
    return edit


def _set(path: str, value: Any) -> Callable[[Any], None]:
    """Set the attribute at a dotted ``path`` of the log (``samples.1.id``)."""
    def edit(log: Any) -> None:
        *parents, last = path.split(".")
        obj = log
        for part in parents:
            obj = obj[int(part)] if part.isdecimal() else obj[part] if isinstance(
                obj, dict) else getattr(obj, part)
        if last.isdecimal():
            obj[int(last)] = value
        else:
            setattr(obj, last, value)
    return edit


def _metadata(**values: Any) -> Callable[[Any], None]:
    return lambda log: log.eval.metadata["elitr_bench"].update(values)


def _twice_a_member(inputs: Inputs) -> list[str]:
    """The single-turn log with one sample's member written twice into its ZIP, the second
    holding another answer (zipfile warns of the duplicate name and writes it)."""
    import warnings

    source = inputs.logs["st"]
    target = inputs.folder / "twice.eval"
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w",
                                                         zipfile.ZIP_DEFLATED) as new:
        names = old.namelist()
        for name in names:
            new.writestr(name, old.read(name))
        sample = next(n for n in names if n.startswith("samples/"))
        data = json.loads(old.read(sample))
        data["output"]["completion"] = "another answer"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            new.writestr(sample, json.dumps(data))
    return ["import", str(target)]


def _member_key_twice(inputs: Inputs) -> list[str]:
    """The single-turn log with a sample's member holding its id twice (another first)."""
    source = inputs.logs["st"]
    target = inputs.folder / "member-key.eval"
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w",
                                                         zipfile.ZIP_DEFLATED) as new:
        for name in old.namelist():
            data = old.read(name)
            if name.startswith("samples/") and name.endswith("/q1_epoch_1.json"):
                data = data.replace(b'"id":', f'"id": "{M1}/q2", "id":'.encode(), 1)
            new.writestr(name, data)
    return ["import", str(target)]


def _archive_member_twice(inputs: Inputs) -> list[str]:
    """A ZIP of release files holding one responses file twice, the second with other scores."""
    import warnings

    name = "elitr-bench-qa_test2_st_corpus.json"
    first = Path(_release_file(name)(inputs)[1]).read_bytes()
    second = Path(_release_file(name, lambda data: _response(data).update(
        {"gpt-4-eval_score": 1}))(inputs)[1]).read_bytes()
    target = inputs.folder / "twice.zip"
    with zipfile.ZipFile(target, "w") as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        archive.writestr(f"corpus/{name}", first)
        archive.writestr(f"corpus/{name}", second)
    return ["import", str(target)]


def _json_key_twice(inputs: Inputs) -> list[str]:
    """The single-turn log as inspect's JSON, a sample's id given twice in its object."""
    path = _rewrite(inputs, "st", "twice.json", lambda log: None)
    text = path.read_text(encoding="utf-8")
    first = re.search(r'"id": "(meeting_[^"]+/q1)"', text)
    assert first is not None
    text = text[:first.start()] + f'"id": "{M1}/q2", ' + text[first.start():]
    path.write_text(text, encoding="utf-8")
    return ["import", str(path)]


def _lm_eval(inputs: Inputs, *, metrics: dict[str, list[Any]] | None = None,
             ids: tuple[str, ...] = ("q1", "q2", "q3"), setting: str = "qa", mode: str = "st",
             line_text: Callable[[str, int], str] = lambda text, i: text,
             results: Callable[[str], str] = lambda text: text) -> list[str]:
    """An lm-evaluation-harness output folder as ``lm_eval --log_samples`` writes it: the
    results file (model, its arguments, versions) and one samples line a question."""
    folder = inputs.folder / "lm-eval"
    folder.mkdir()
    metrics = metrics if metrics is not None else {"exact_match": [0.0] * len(ids)}
    lines = []
    for i, suffix in enumerate(ids):
        doc = {"id": f"{M1}/{suffix}", "meeting": M1, "question": i + 1, "split": "test2",
               "setting": setting, "mode": mode, "language": "en", "system": "",
               "prompt": "Answer the question.", "reference": "a reference"}
        line = {"doc_id": i, "doc": doc, "target": doc["reference"], "arguments": [],
                "resps": [[f"answer {i}"]], "filtered_resps": [f"answer {i}"],
                "filter": "none", "metrics": list(metrics),
                **{name: values[i] for name, values in metrics.items()}}
        lines.append(line_text(json.dumps(line), i))
    (folder / f"samples_elitr_bench_{LM_TIME}.jsonl").write_text(
        "".join(line + "\n" for line in lines), encoding="utf-8")
    (folder / f"results_{LM_TIME}.json").write_text(results(json.dumps({
        "results": {"elitr_bench": {}}, "configs": {"elitr_bench": {
            "generation_kwargs": {"until": [], "max_gen_toks": 4}}},
        "config": {"model": "hf", "model_args": {"pretrained": "SmolLM2-135M-Instruct",
                                                 "dtype": "float32"},
                   "gen_kwargs": {"max_gen_toks": 4}, "limit": 3},
        "model_name": "SmolLM2-135M-Instruct", "lm_eval_version": "0.4.13"})),
        encoding="utf-8")
    return ["import", str(folder / f"samples_elitr_bench_{LM_TIME}.jsonl")]


def _lm(**options: Any) -> Callable[[Inputs], list[str]]:
    return lambda inputs: _lm_eval(inputs, **options)


CSV_HEADER = "meeting,question_id,split,setting,mode,seed,model,evaluator,annotator,sample,score\n"


def _csv(*lines: str) -> Callable[[Inputs], list[str]]:
    """A scores CSV (the ``scores`` export's columns) of ``lines``; ``{m}`` is a test2
    meeting with responses of GPT-4 in QA-st."""
    def make(inputs: Inputs) -> list[str]:
        path = inputs.folder / "scores.csv"
        path.write_text(CSV_HEADER + "".join(line.format(m=M1) + "\n" for line in lines),
                        encoding="utf-8")
        return ["import", str(path)]
    return make


def _row(evaluator: str, score: str = "7", question: str = "1", model: str = "GPT-4") -> str:
    return f"{{m}},{question},test2,qa,st,,{model},{evaluator},,0,{score}"


def _release_file(name: str, edit: Callable[[dict[str, Any]], Any] = lambda data: None,
                  text: Callable[[str], str] = lambda text: text,
                  ) -> Callable[[Inputs], list[str]]:
    """A responses file of the ELITR-Bench release, cut to one question of one meeting and a
    new model, edited by ``edit`` (the JSON) and ``text`` (its text), saved as ``name``."""
    def make(inputs: Inputs) -> list[str]:
        data = bundled_json("generated-responses.zip", "elitr-bench-qa_test2_st_gpt-4-eval.json")
        meeting = data["meetings"][0]
        question = meeting["questions"][0]
        response = dict(question["generated-responses"][0], model="corpus-model")
        question["generated-responses"] = [response]
        meeting["questions"] = [question]
        data["meetings"] = [meeting]
        edit(data)
        path = inputs.folder / name
        path.write_text(text(json.dumps(data)), encoding="utf-8")
        return ["import", str(path)]
    return make


def _response(data: dict[str, Any]) -> dict[str, Any]:
    return data["meetings"][0]["questions"][0]["generated-responses"][0]


def _judge(evaluator: str) -> Callable[[Inputs], list[str]]:
    return lambda inputs: ["judge", "--judge-model", "demo", "--backend", "fake", "--style",
                           "gpt4", "--evaluator", evaluator, "--model", "GPT-4", *HUMAN_PART]


STUDY = ["study", "create", "--name", "s1", "--pool", "gold", "--per-item", "1", "--model",
         "GPT-4", *HUMAN_PART]
METRIC = ["metrics", "--metric", "rouge-l", "--model", "GPT-4", *HUMAN_PART]


# ---------------------------------------------------------------------------------------------
# the cases

CASES: list[Case] = [
    # inspect_ai logs: scorers in inspect's namespace, the grader in the evaluator's identity
    Case("inspect single-turn log, self-graded", _log("st"),
         evaluators={SELF_GRADED: ("llm", "inspect")}),
    Case("inspect multi-turn log into the same judge", _log("mt"), grows=(SELF_GRADED,),
         setup=lambda inputs: [["import", str(inputs.logs["st"])]]),
    Case("inspect log graded by a separate grader", _log("graded"),
         evaluators={GRADED: ("llm", "inspect")}),
    Case("self-graded and separately graded logs: two judges",
         lambda inputs: ["import", str(inputs.logs["st"]), str(inputs.logs["graded"])],
         evaluators={SELF_GRADED: ("llm", "inspect"), GRADED: ("llm", "inspect")}),
    *(Case(f"inspect scorer named {slug}", _inspect("st", _rename_scorer(slug)),
           evaluators={f"inspect:{slug}": ("metric", "inspect")}) for slug in RELEASE),
    Case("inspect scorer named like a study", _inspect("st", _rename_scorer("gold-human:s1")),
         evaluators={"inspect:gold-human:s1": ("metric", "inspect")}),
    Case("inspect scorer named like an lm-eval metric",
         _inspect("st", _rename_scorer("lm-eval:acc")),
         evaluators={"inspect:lm-eval:acc": ("metric", "inspect")}),
    Case("inspect grader with other settings than the stored one",
         _inspect("graded", _set("eval.model_roles.grader.config.temperature", 0.7)),
         refused=f"evaluator '{GRADED}' was made by another setup (config differ",
         setup=lambda inputs: [["import", str(inputs.logs["graded"])]]),
    Case("inspect grader with other settings, as a variant",
         _inspect("graded", _set("eval.model_roles.grader.config.temperature", 0.7),
                  extra=("--variant", "warm")),
         evaluators={f"{GRADED}~warm": ("llm", "inspect")},
         setup=lambda inputs: [["import", str(inputs.logs["graded"])]]),
    # (in inspect's JSON format: its .eval names a sample's ZIP member by the id, so one id
    # twice is one member twice, the case below)
    Case("inspect self-graded judge of another setup, as a variant",
         _inspect("st", _set("eval.model_generate_config.temperature", 0.7),
                  extra=("--variant", "warm")),
         evaluators={f"{SELF_GRADED}~warm": ("llm", "inspect")},
         setup=lambda inputs: [["import", str(inputs.logs["st"])]]),
    Case("inspect sample id twice", _inspect("st", lambda log: _set(
        "samples.1.id", log.samples[0].id)(log), suffix=".json"),
        refused="appears twice (sample 1 and sample 2)"),
    Case("inspect sample id with a full-width digit", _inspect("st", _set(
        "samples.0.id", f"{M1}/q\uff11")), refused="names no ELITR-Bench question"),
    Case("inspect sample id with an Arabic-Indic digit", _inspect("st", _set(
        "samples.0.id", f"{M1}/q\u0661")), refused="names no ELITR-Bench question"),
    Case("inspect sample id with a leading zero", _inspect("st", _set(
        "samples.0.id", f"{M1}/q01")), refused="names no ELITR-Bench question"),
    Case("inspect score key in Arabic-Indic digits", _inspect("mt", _score_keys({"1": "\u0661"})),
         refused="scores question '\u0661', which is not one of the sample's questions"),
    Case("inspect score key in full-width digits", _inspect("mt", _score_keys({"2": "\uff12"})),
         refused="scores question '\uff12'"),
    Case("inspect multi-turn sample listing one question twelve times",
         _inspect("mt", lambda log: log.samples[0].metadata.update(questions=[1] * 12)),
         refused="question 1 appears twice (turn 1 and turn 2)"),
    Case("inspect ZIP member twice", _twice_a_member, refused="appears twice (entry "),
    Case("inspect .eval member with a key twice", _member_key_twice,
         refused="key 'id' appears twice in one JSON object"),
    Case("inspect JSON log with a key twice", _json_key_twice,
         refused="key 'id' appears twice in one JSON object"),
    Case("inspect log with a NaN in its generate config",
         _inspect("st", _set("eval.model_generate_config.temperature", float("nan"))),
         refused="is nan, not a finite number"),
    Case("inspect log of conv questions asked single-turn",
         _inspect("st", _metadata(setting="conv")), refused="a conv-st run: conv questions "),
    # lm-evaluation-harness: metrics in lm-eval's namespace
    Case("lm-eval metric named gold-human", _lm(metrics={"gold-human": [7, 8, 9]}),
         evaluators={"lm-eval:gold-human": ("metric", "lm-eval")}),
    Case("lm-eval metric named gpt-4", _lm(metrics={"gpt-4": [2, 3, 4]}),
         evaluators={"lm-eval:gpt-4": ("metric", "lm-eval")}),
    Case("lm-eval bookkeeping metric only", _lm(), evaluators={}),
    Case("lm-eval question twice", _lm(ids=("q1", "q2", "q1")),
         refused="meeting meeting_en_test2_001 question 1 appears twice (line 1 and line 3)"),
    Case("lm-eval id with a full-width digit", _lm(ids=("q1", "q2", "q\uff13")),
         refused="names no ELITR-Bench question"),
    Case("lm-eval id with a leading zero", _lm(ids=("q1", "q2", "q03")),
         refused="names no ELITR-Bench question"),
    Case("lm-eval line with a key twice", _lm(line_text=lambda text, i: text.replace(
        '"filter": "none"', '"filter": "none", "filter": "other"') if i == 1 else text),
        refused="key 'filter' appears twice in one JSON object"),
    Case("lm-eval metric value NaN", _lm(metrics={"gold-human": [7, float("nan"), 9]}),
         refused="line 2: malformed JSON: NaN is not valid JSON"),
    Case("lm-eval results with Infinity", _lm(results=lambda text: text.replace(
        '"limit": 3', '"limit": Infinity')), refused="Infinity is not valid JSON"),
    Case("lm-eval conv questions asked single-turn", _lm(setting="conv"),
         refused="a conv-st run: conv questions"),
    # scores CSV: a new evaluator of its own; never one of another source
    Case("CSV into the release's gold-human", _csv(_row("gold-human")),
         refused="evaluator 'gold-human' holds the ELITR-Bench release's human scores"),
    Case("CSV into the release's gpt-4", _csv(_row("gpt-4")),
         refused="evaluator 'gpt-4' holds the ELITR-Bench release's llm scores"),
    Case("CSV into inspect's namespace", _csv(_row(SELF_GRADED)),
         refused="is in the inspect: namespace"),
    Case("CSV into lm-eval's namespace", _csv(_row("lm-eval:gold-human")),
         refused="is in the lm-eval: namespace"),
    Case("CSV into an imported inspect judge", _csv(_row(SELF_GRADED)),
         refused="is in the inspect: namespace",
         setup=lambda inputs: [["import", str(inputs.logs["st"])]]),
    Case("CSV of a new judge", _csv(_row("csv-judge"), _row("csv-judge", "6", "2")),
         evaluators={"csv-judge": ("llm", "csv")}),
    Case("CSV of a new human panel", _csv(_row("panel-human")),
         evaluators={"panel-human": ("human", "csv")}),
    Case("CSV question id in full-width digits", _csv(_row("csv-judge", question="\uff11")),
         refused="question_id '\uff11' is not a whole number"),
    Case("CSV score NaN", _csv(_row("csv-judge", score="nan")), refused="is not a number"),
    Case("CSV score Infinity", _csv(_row("csv-judge", score="Infinity")),
         refused="is not a number"),
    Case("CSV score of conv questions asked single-turn",
         _csv("{m},1,test2,conv,st,,GPT-4,csv-judge,,0,5"), refused="a conv-st score"),
    Case("CSV score twice", _csv(_row("csv-judge"), _row("csv-judge", "3")),
         refused="appears twice (line 2 and line 3)"),
    Case("CSV into a study's evaluator", _csv(_row("gold-human:s1")),
         refused="evaluator 'gold-human:s1' holds a human study's human scores",
         setup=lambda inputs: [STUDY]),
    Case("CSV into a metric", _csv(_row("rouge-l")),
         refused="evaluator 'rouge-l' holds an n-gram metric's metric scores",
         setup=lambda inputs: [METRIC]),
    # ELITR-Bench responses files
    Case("release file of conv questions asked single-turn",
         _release_file("elitr-bench-conv_test2_st_corpus.json"),
         refused="a conv-st responses file"),
    Case("release file with a score key twice", _release_file(
        "elitr-bench-qa_test2_st_corpus.json", text=lambda text: text.replace(
            '"gpt-4-eval_score": ', '"gpt-4-eval_score": 2, "gpt-4-eval_score": ', 1)),
        refused="key 'gpt-4-eval_score' appears twice in one JSON object"),
    Case("release archive with one file twice", _archive_member_twice,
         refused="archive file 'elitr-bench-qa_test2_st_corpus.json' appears twice"),
    Case("release file with a NaN score", _release_file(
        "elitr-bench-qa_test2_st_corpus.json",
        lambda data: _response(data).update({"gpt-4-eval_score": float("nan")})),
        refused="NaN is not valid JSON"),
    Case("release file with a question id in full-width digits", _release_file(
        "elitr-bench-qa_test2_st_corpus.json",
        lambda data: data["meetings"][0]["questions"][0].update(id="\uff11")),
        refused="is not a whole number"),
    # judges, metrics and studies
    Case("judge into the release's gold-human", _judge("gold-human"),
         refused="evaluator 'gold-human' holds the ELITR-Bench release's human scores"),
    Case("judge into the release's gpt-4", _judge("gpt-4"),
         refused="evaluator 'gpt-4' holds the ELITR-Bench release's llm scores"),
    # (a judge's name is letters, digits, '-', '_' and '.': no namespace, no study's name)
    Case("judge into inspect's namespace", _judge(SELF_GRADED),
         refused=f"evaluator slug '{SELF_GRADED}': use 1-64 letters"),
    Case("judge into a study's evaluator", _judge("gold-human:s1"),
         refused="evaluator slug 'gold-human:s1': use 1-64 letters",
         setup=lambda inputs: [STUDY]),
    Case("judge into the release's silver-human", _judge("silver-human"),
         refused="evaluator 'silver-human' holds the ELITR-Bench release's human scores"),
    Case("judge into a metric", _judge("rouge-l"),
         refused="evaluator 'rouge-l' holds an n-gram metric's metric scores",
         setup=lambda inputs: [METRIC]),
    Case("judge of its own", _judge("corpus-judge"),
         evaluators={"corpus-judge": ("llm", "judge")}),
    Case("metric of its own", lambda inputs: METRIC,
         evaluators={"rouge-l": ("metric", "metric")}),
    Case("study on the gold pool", lambda inputs: STUDY,
         evaluators={"gold-human:s1": ("human", "study")}, unscored=("gold-human:s1",)),
]


# ---------------------------------------------------------------------------------------------
# run identity, options and what leaves (issue 39 items 2, 4, 5; resumes of generated runs, the
# personal links and the dataset's keys and pseudonyms are tested where they need a
# transcript, a browser entry or the exported files: tests/elitr_core/generation/
# test_run_config.py, passes/test_backends.py, annotation/test_name_lookup.py,
# export/test_dataset_keys.py, export/test_runs.py)


def _in(inputs: Inputs, name: str) -> Inputs:
    """``inputs`` with a folder of its own (a case writing two lm-eval outputs)."""
    folder = inputs.folder / name
    folder.mkdir(exist_ok=True)
    return Inputs(inputs.logs, folder)


SECRET_ARGS = {"api_key": "sk-" + "k" * 30, "token": "hf_" + "t" * 24,
               "base_url": "http://me:pw@127.0.0.1:9/v1", "temperature": 0.0}
GENERATE = ["generate", "--backend", "fake", "--model", "m", "--setting", "qa", "--mode", "st",
            "--split", "test2"]
CASES += [
    Case("inspect second log of a run with other task arguments",
         _inspect("st", lambda log: log.eval.task_args.update(length_instruction=True)),
         refused="is stored with another setup (task_args",
         setup=lambda inputs: [["import", str(inputs.logs["st"])]]),
    Case("inspect second log of a run with other model arguments",
         _inspect("st", _set("eval.model_args", {"temperature": 0.9})),
         refused="is stored with another setup (model_args {} -> {'temperature': 0.9})",
         setup=lambda inputs: [["import", str(inputs.logs["st"])]]),
    Case("inspect second log of a run with another task version",
         _inspect("st", _set("eval.task_version", 7)),
         refused="is stored with another setup (task_version 0 -> 7)",
         setup=lambda inputs: [["import", str(inputs.logs["st"])]]),
    Case("inspect log with credentials in its model arguments",
         _inspect("st", _set("eval.model_args", SECRET_ARGS)),
         evaluators={SELF_GRADED: ("llm", "inspect")}),
    Case("lm-eval second log of a run with other model arguments",
         lambda inputs: _lm_eval(_in(inputs, "second"), results=lambda text: text.replace(
             '"dtype": "float32"', '"dtype": "bfloat16"')),
         refused="is stored with another setup (model_args",
         setup=lambda inputs: [_lm_eval(_in(inputs, "first"))]),
    Case("lm-eval second log of a run with other generation settings",
         lambda inputs: _lm_eval(_in(inputs, "second"), results=lambda text: text.replace(
             '"gen_kwargs": {"max_gen_toks": 4}', '"gen_kwargs": {"max_gen_toks": 64}')),
         refused="is stored with another setup (gen_kwargs",
         setup=lambda inputs: [_lm_eval(_in(inputs, "first"))]),
    Case("lm-eval log with a token and a DSN's password in its model arguments",
         _lm(results=lambda text: text.replace(
             '"dtype": "float32"', '"dtype": "float32", "token": "hf_' + "t" * 24
             + '", "db": "postgresql://me:pw@db/x"')), evaluators={}),
    Case("generate with an option its backend does not take",
         lambda inputs: [*GENERATE, "--model-path", "/nonexistent"],
         refused="--model-path: the fake backend does not take it"),
    Case("generate with options of two other backends",
         lambda inputs: [*GENERATE, "--dtype", "float16", "--concurrency", "4"],
         refused="--dtype, --concurrency: the fake backend does not take them"),
    Case("judge with an option its backend does not take",
         lambda inputs: ["judge", "--backend", "fake", "--judge-model", "j", "--style",
                         "gpt4", "--evaluator", "corpus-judge", "--base-url", "http://x:1/v1"],
         refused="--base-url: the fake backend does not take it"),
    Case("export dataset, the corpus's minutes left out",
         lambda inputs: ["export", "dataset", str(inputs.folder / "dataset")]),
    Case("export dataset with the corpus's minutes",
         lambda inputs: ["export", "dataset", str(inputs.folder / "dataset"),
                         "--include-minutes"]),
    Case("export runs after an inspect log with credentials",
         lambda inputs: ["export", "runs", "--format", "json", "--out",
                         str(inputs.folder / "runs.json")],
         setup=lambda inputs: [["import", str(_rewrite(
             inputs, "st", "secret.eval", _set("eval.model_args", SECRET_ARGS)))]]),
]


# ---------------------------------------------------------------------------------------------
# the test


@pytest.fixture(scope="module")
def logs(bundled_sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory
         ) -> dict[str, Path]:
    """Real inspect logs of the shipped task: single- and multi-turn graded by the evaluated
    model, single-turn graded by a separate grader model."""
    from db.engine import dispose_engines
    from tests.elitr_core.integrations.inspect_helpers import run_task
    from tests.elitr_core.run_helpers import set_transcripts

    folder = tmp_path_factory.mktemp("corpus-logs")
    shutil.copy(bundled_sqlite_template, folder / "source.db")
    url = f"sqlite:///{folder / 'source.db'}"
    set_transcripts(url)
    made = {mode: run_task(url, folder / mode, mode=mode) for mode in ("st", "mt")}
    made["graded"] = run_task(url, folder / "graded", mode="st", grader=GRADER)
    dispose_engines()
    return made


def _run(argv: list[str], url: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main([*argv, "--db", url])
    return code, capsys.readouterr().err


def _tables(url: str) -> list[list[str]]:
    """Each table's CSV lines about the release's evaluators (a calibration table also lists
    every other judge against gold-human: those lines are left out)."""
    others = set(_evaluators(url)) - set(RELEASE)
    out = []
    for table in TABLES:
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            assert main(["export", *table, *HUMAN_PART, "--db", url]) == 0, table
        out.append([line for line in buffer.getvalue().splitlines()
                    if not others & set(line.split(","))])
    return out


def _evaluators(url: str) -> dict[str, tuple[str, str]]:
    return {slug: (kind, source) for slug, kind, source in rows(
        url, "SELECT slug, kind, source FROM evaluator")}


def _scores(url: str) -> dict[str, set[tuple[Any, ...]]]:
    out: dict[str, set[tuple[Any, ...]]] = {}
    for slug, *score in rows(url, "SELECT e.slug, s.response_id, s.annotator_key, s.sample, "
                             "s.value, s.status FROM score s JOIN evaluator e ON "
                             "e.id = s.evaluator_id"):
        out.setdefault(slug, set()).add(tuple(score))
    return out


#: every row of every table, the evaluators (slug -> kind, source), their scores
State = tuple[dict[str, list[tuple[Any, ...]]], dict[str, tuple[str, str]],
              dict[str, set[tuple[Any, ...]]]]


def _state(url: str) -> State:
    """Every row of every table, the evaluators and their scores."""
    return snapshot(url), _evaluators(url), _scores(url)


_BASELINE: dict[str, list[list[str]]] = {}
#: The state of a fresh copy of the bundled data, read once per database kind (``make`` writes
#: files only: a case without setup starts from it).
_PRISTINE: dict[str, State] = {}
#: Refused cases after which the tables are computed too (one of each way in).
TABLES_AFTER = {"inspect score key in Arabic-Indic digits", "lm-eval question twice",
                "CSV into the release's gold-human", "release file with a NaN score",
                "judge into the release's gold-human"}


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_each_case_is_refused_or_stored_under_its_own_identity(
        case: Case, logs: dict[str, Path], bundled_db: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    url = bundled_db
    inputs = Inputs(logs, tmp_path)
    backend = url.split(":", 1)[0]
    if backend not in _BASELINE:  # the bundled data's tables, once per database kind
        _BASELINE[backend] = _tables(url)
    setup = case.setup(inputs)
    for command in setup:
        code, err = _run(command, url, capsys)
        assert code == 0, (command, err)
    argv = case.make(inputs)
    if setup:
        before, evaluators, scores = _state(url)
    else:  # a fresh copy of the bundled data, as every case without setup starts from
        if backend not in _PRISTINE:
            _PRISTINE[backend] = _state(url)
        before, evaluators, scores = _PRISTINE[backend]

    code, err = _run(argv, url, capsys)

    if case.refused is not None:
        assert code == 2, (case.name, err)
        assert case.refused in err, (case.name, err)
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert snapshot(url) == before, case.name
    else:
        assert code == 0, (case.name, err)
        after = _evaluators(url)
        new = {slug: after[slug] for slug in set(after) - set(evaluators)}
        assert new == case.evaluators, case.name
        stored = _scores(url)
        for slug in new:
            assert bool(stored.get(slug)) != (slug in case.unscored), (case.name, slug)
        for slug, (kind, source) in evaluators.items():
            assert after[slug] == (kind, source), f"{case.name}: {slug} changed hands"
            if slug in case.grows:
                assert scores.get(slug, set()) < stored[slug], case.name
            else:
                assert stored.get(slug, set()) == scores.get(slug, set()), \
                    f"{case.name}: scores landed under {slug} ({source})"
    if case.refused is None or case.name in TABLES_AFTER:
        assert _tables(url) == _BASELINE[backend], case.name


def test_the_corpus_holds_at_least_forty_cases_of_each_way_in() -> None:
    names = [case.name for case in CASES]
    refused = {case.name for case in CASES if case.refused is not None}
    assert TABLES_AFTER <= refused
    assert len(names) == len(set(names)) >= 40
    for way in ("inspect", "lm-eval", "CSV", "release file", "judge", "study"):
        assert any(name.startswith(way) or f" {way}" in name for name in names), way
