"""The real inspect_ai on the shipped task, its logs imported: runs, scores, refusals.

``inspect_ai.eval`` (what ``inspect eval`` calls) runs ``elitr_core/integrations/
inspect_task.py`` with inspect's ``mockllm/model`` on two test2 meetings; the logs are
imported on SQLite and PostgreSQL, then edited to break each rule of the importer.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from elitr_core.cli.main import main
from elitr_core.data.model_text import as_generated
from tests.dbstate import snapshot
from tests.elitr_core.backends.smollm2 import REAL_MODEL_TIMEOUT
from tests.elitr_core.integrations.inspect_helpers import MODEL, build_logs, inflated
from tests.elitr_core.run_helpers import MEETINGS, rows

pytest.importorskip("inspect_ai")
ROOT = Path(__file__).resolve().parents[3]
#: The task's judge, graded by the evaluated model itself, in inspect's namespace.
JUDGE = f"inspect:elitr_judge:{MODEL}"


@pytest.fixture(scope="module")
def logs(bundled_sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory
         ) -> dict[str, Path]:
    return build_logs(bundled_sqlite_template, tmp_path_factory.mktemp("inspect-logs"))


def _log_answers(path: Path) -> dict[tuple[str, int], str]:
    from inspect_ai.log import read_eval_log

    out = {}
    for sample in read_eval_log(str(path)).samples or []:
        meeting, _, rest = str(sample.id).partition("/")
        numbers = sample.metadata["questions"]
        texts = [m.text for m in sample.messages if m.role == "assistant"]
        assert len(texts) == len(numbers) and rest in ("mt", f"q{numbers[0]}")
        out |= {(meeting, n): t for n, t in zip(numbers, texts, strict=True)}
    return out


def _stored(url: str, mode: str) -> dict[tuple[str, int], tuple[str, Any]]:
    found = rows(url, "SELECT m.external_id, q.number, r.text, r.meta FROM response r "
                 "JOIN run ON run.id = r.run_id JOIN question q ON q.id = r.question_id "
                 "JOIN meeting m ON m.id = q.meeting_id WHERE run.model = :m AND run.mode = :o",
                 m=MODEL, o=mode)
    return {(meeting, n): (text, json.loads(meta) if isinstance(meta, str) else meta)
            for meeting, n, text, meta in found}


def test_logs_import_as_runs_on_the_leaderboard_and_judgeable(
        logs: dict[str, Path], url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", str(logs["st"]), str(logs["mt"]), "--db", url]) == 0
    assert "56 responses, 2 runs, 56 scores" in capsys.readouterr().out
    for mode in ("st", "mt"):
        expected = _log_answers(logs[mode])
        stored = _stored(url, mode)
        assert {m for m, _ in expected} == set(MEETINGS) and len(expected) == 28
        assert set(stored) == set(expected)
        for key, (text, meta) in stored.items():  # a NUL became U+FFFD, the original kept
            assert "\x00" not in text and as_generated(text, meta) == expected[key]
            assert meta["harness"] == "inspect_ai" and meta["sample"].startswith(key[0] + "/")
    (backend, config), = rows(url, "SELECT backend, config FROM run WHERE model = :m AND "
                              "mode = 'mt'", m=MODEL)
    config = json.loads(config) if isinstance(config, str) else config
    assert backend == "inspect" and config["task"] == "elitr_bench"
    assert config["inspect_version"] and config["task_args"]["mode"] == "mt"
    assert "db" not in config["task_args"]  # a database URL may hold a password

    assert main(["export", "leaderboard", "--evaluator", JUDGE, "--db", url]) == 0
    board = capsys.readouterr().out
    assert f"{MODEL},qa,st,test2,{JUDGE},28" in board
    assert f"{MODEL},qa,mt,test2,{JUDGE},28" in board
    assert main(["judge", "--judge-model", "demo", "--backend", "fake", "--style", "gpt4",
                 "--evaluator", "fake-judge", "--model", MODEL, "--split", "test2",
                 "--db", url]) == 0
    assert "56 judgment(s) asked" in capsys.readouterr().out

    before = snapshot(url)
    json_log = logs["st"].with_suffix(".json")
    _rewrite(logs["st"], json_log, lambda log: None)  # the same log in inspect's JSON format
    assert main(["import", str(logs["st"]), str(logs["mt"]), str(json_log), "--db", url]) == 0
    assert snapshot(url) == before


def _rewrite(source: Path, target: Path, edit: Any) -> Path:
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(source))
    edit(log)
    write_eval_log(log, str(target))
    return target


def _error(log: Any) -> None:
    from inspect_ai.log import EvalError

    log.samples[1].error = EvalError(message="RuntimeError: the provider went away",
                                     traceback="", traceback_ansi="")


def _set(obj: Any, name: str, value: Any) -> Any:
    setattr(obj, name, value)


BROKEN = {
    "another task": (lambda log: _set(log.eval, "task", "gsm8k") or _set(
        log.eval, "task_registry_name", "gsm8k"), "a log of task 'gsm8k'"),
    "a sample of another dataset": (lambda log: _set(log.samples[0], "id", 17),
                                    "sample '17' names no ELITR-Bench question"),
    # (its judge's score keyed by question 99 too: a key naming no question asked is refused)
    "an unknown question": (lambda log: _set(log.samples[0], "id", "meeting_en_test2_001/q99")
                            or _set(log.samples[0], "scores", {}),
                            "question 99, which is not an ELITR-Bench question"),
    "an unknown meeting": (lambda log: _set(log.samples[0], "id", "meeting_en_test2_404/q1"),
                           "meeting 'meeting_en_test2_404' question 1"),
    "a meeting of the other split": (lambda log: _set(log.samples[0], "id",
                                                      "meeting_en_dev_001/q1"),
                                     "meeting meeting_en_dev_001 is stored as a dev meeting"),
    "half-finished": (lambda log: _set(log, "status", "started"), "status is 'started'"),
    "an errored sample": (_error, "failed (RuntimeError: the provider went away)"),
    "a second epoch": (lambda log: _set(log.samples[0], "epoch", 2), "has epoch 2"),
    "an unknown split": (lambda log: log.eval.metadata["elitr_bench"].update(split="train"),
                         "split 'train' is not one of dev, test2"),
}


def test_a_log_breaking_a_rule_is_refused_and_nothing_written(
        logs: dict[str, Path], url: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(url)
    for case, (edit, expected) in BROKEN.items():
        broken = _rewrite(logs["st"], tmp_path / f"{case.replace(' ', '-')}.eval", edit)
        # the good log in the same command is not written either (one transaction)
        assert main(["import", str(logs["mt"]), str(broken), "--db", url]) == 2, case
        err = capsys.readouterr().err
        assert expected in err and broken.name in err, (case, err)
        assert err.count("\n") == 1 and "Traceback" not in err
        assert snapshot(url) == before, case


def test_partial_imports_the_answered_samples_and_lists_the_rest(
        logs: dict[str, Path], url: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    from inspect_ai.log import read_eval_log

    broken = _rewrite(logs["st"], tmp_path / "errored.eval", _error)
    errored = str(read_eval_log(str(broken)).samples[1].id)
    assert main(["import", "--partial", str(broken), "--db", url]) == 0
    out = capsys.readouterr().out
    assert "27 responses" in out and "left out 1:" in out
    assert f"sample {errored} not imported (RuntimeError: the provider went away)" in out
    meeting, _, number = errored.partition("/q")
    stored = _stored(url, "st")
    assert (meeting, int(number)) not in stored and len(stored) == 27


def test_without_inspect_ai_one_line_names_the_package(logs: dict[str, Path],
                                                       tmp_path: Path) -> None:
    other = tmp_path / "answers.json"
    other.write_text("{}")
    for path, expected in ((logs["st"], "needs the inspect_ai package, which is not "
                            "installed: pip install inspect_ai"),
                           (other, "answers.json: not an ELITR-Bench file name (elitr-bench-"),
                           (other, "if it is an inspect_ai log, install inspect_ai to import "
                            "it: pip install inspect_ai")):
        script = ("import sys\n"
                  "sys.modules['inspect_ai'] = None\n"  # as if it were not installed
                  "from elitr_core.cli.main import main\n"
                  f"sys.exit(main(['import', {str(path)!r}, '--db', "
                  f"'sqlite:///{tmp_path}/x.db']))\n")
        done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 2, done.stderr
        assert expected in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_a_json_file_that_is_neither_is_one_line(url: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "answers.json"
    other.write_text('{"meetings": []}')
    before = snapshot(url)
    assert main(["import", str(other), "--db", url]) == 2
    err = capsys.readouterr().err
    assert "answers.json: not an ELITR-Bench file name" in err
    assert "nor an inspect_ai log inspect can read" in err and err.count("\n") == 1
    assert snapshot(url) == before


def test_an_imported_log_is_on_the_leaderboard_page(
        logs: dict[str, Path], bundled_sqlite: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.pages.analysis_support import messages, open_page, set_filters

    assert main(["import", str(logs["st"]), "--db", bundled_sqlite]) == 0
    values = [v for (v,) in rows(bundled_sqlite, "SELECT s.value FROM score s JOIN evaluator e "
                                 "ON e.id = s.evaluator_id WHERE e.slug = :j", j=JUDGE)]
    app = open_page(bundled_sqlite, monkeypatch, "leaderboard")
    set_filters(app, split="test2", evaluators=[JUDGE])
    assert not app.exception and messages(app)["error"] == []
    table = app.dataframe[0].value
    assert list(table.index) == [MODEL]
    assert float(table.loc[MODEL, "QA-st test2"]) == pytest.approx(sum(values) / len(values))


def test_a_variant_tells_apart_two_runs_of_one_model_and_settings(
        logs: dict[str, Path], bundled_sqlite: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    from tests.elitr_core.integrations.inspect_helpers import run_task

    source = f"sqlite:///{logs['st'].parent.parent / 'source.db'}"
    lie = run_task(source, tmp_path / "lie", mode="st", judge=None, length_instruction=True)
    assert main(["import", str(logs["st"]), "--db", bundled_sqlite]) == 0
    before = snapshot(bundled_sqlite)
    assert main(["import", str(lie), "--db", bundled_sqlite]) == 2  # another setup
    assert "is stored with another setup (task_args" in capsys.readouterr().err
    assert snapshot(bundled_sqlite) == before
    assert main(["import", "--variant", "lie", str(lie), "--db", bundled_sqlite]) == 0
    found = rows(bundled_sqlite, "SELECT variant, count(*) FROM run JOIN response r ON "
                 "r.run_id = run.id WHERE run.model = :m GROUP BY variant ORDER BY variant",
                 m=MODEL)
    assert found == [("", 28), ("lie", 28)]
    lie_texts = [t for (t,) in rows(bundled_sqlite, "SELECT r.text FROM response r JOIN run "
                                    "ON run.id = r.run_id WHERE run.variant = 'lie'")]
    assert all("Answer this question with" in t for t in lie_texts)


@REAL_MODEL_TIMEOUT
def test_the_inspect_cli_on_a_real_model_then_import(
        bundled_sqlite: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`inspect eval` itself (a subprocess, the task file by its path, cwd the repository) with
    inspect's hf provider on SmolLM2-135M-Instruct, offline; the log imports with its answers."""
    import os

    from inspect_ai.log import read_eval_log

    from tests.elitr_core.backends.smollm2 import LINES, smollm2_dir
    from tests.elitr_core.run_helpers import set_transcripts

    set_transcripts(bundled_sqlite, lines=LINES)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "inspect_ai", "eval", "elitr_core/integrations/inspect_task.py",
         "-T", "split=test2", "-T", "setting=qa", "-T", "mode=st", "-T", f"meetings={MEETINGS[1]}",
         "-T", f"db={bundled_sqlite}", "--model", "hf/smollm2", "-M",
         f"model_path={smollm2_dir()}", "-M", "device=cpu", "--max-tokens", "4", "--limit", "2",
         "--log-dir", str(tmp_path / "logs"), "--display", "none"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stderr[-3000:]
    (log,) = (tmp_path / "logs").glob("*.eval")
    assert main(["import", str(log), "--db", bundled_sqlite]) == 0
    assert "2 responses, 1 runs" in capsys.readouterr().out
    samples = read_eval_log(str(log)).samples or []
    logged = {int(str(s.id).rsplit("/q", 1)[1]): s.output.completion for s in samples}
    stored = dict(rows(bundled_sqlite, "SELECT q.number, r.text FROM response r JOIN run ON "
                       "run.id = r.run_id JOIN question q ON q.id = r.question_id WHERE "
                       "run.model = 'hf/smollm2'"))
    assert stored == logged and len(stored) == 2 and all(stored.values())


SECRETS = {"api_key": "sk-" + "a" * 30, "token": "hf_" + "b" * 24, "password": "hunter2",
           "base_url": "http://me:pw1@127.0.0.1:9/v1", "dsn": "postgresql://me:pw2@db/x",
           "note": "key hf_" + "c" * 24, "max_tokens": 8, "temperature": 0.5}


def test_a_second_log_with_another_setup_is_refused_and_no_credential_is_stored(
        logs: dict[str, Path], url: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 39: a second log of the same run key with other task arguments merged into the
    run, which kept the first log's config; model_args kept api_key, token=hf_... and a DSN's
    password in the stored config."""
    secret = _rewrite(logs["st"], tmp_path / "secret.eval",
                      lambda log: _set(log.eval, "model_args", dict(SECRETS)))
    assert main(["import", str(secret), "--db", url]) == 0
    (config,), = rows(url, "SELECT config FROM run WHERE model = :m", m=MODEL)
    config = json.loads(config) if isinstance(config, str) else config
    assert config["model_args"] == {
        "base_url": "http://me:[redacted]@127.0.0.1:9/v1", "dsn": "postgresql://me:[redacted]@db/x",
        "note": "key [redacted]", "max_tokens": 8, "temperature": 0.5}
    assert not any(text in json.dumps(config) for text in ("hunter2", "pw1", "pw2", "aaaa",
                                                           "bbbb", "cccc"))
    capsys.readouterr()
    before = snapshot(url)
    for edit, differs in (
            (lambda log: log.eval.task_args.update(length_instruction=True), "task_args"),
            (lambda log: log.eval.model_args.update(temperature=0.9), "model_args"),
            (lambda log: _set(log.eval, "task_version", 7), "task_version")):
        other = _rewrite(secret, tmp_path / "other.eval", edit)
        assert main(["import", str(other), "--db", url]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"is stored with another setup ({differs} " in err[0], err
        assert "--variant NAME" in err[0] and "hunter2" not in err[0]
        assert snapshot(url) == before
    # another key to the same server is the same setup: nothing to change
    rekeyed = _rewrite(secret, tmp_path / "rekeyed.eval",
                       lambda log: log.eval.model_args.update(api_key="sk-" + "d" * 30))
    assert main(["import", str(rekeyed), "--db", url]) == 0
    assert snapshot(url) == before



def _answer(sample: dict[str, Any], size: int) -> dict[str, Any]:
    sample["messages"][-1]["content"] = "x" * size
    return sample


def test_a_log_past_its_bounds_is_refused_before_inspect_reads_it(
        logs: dict[str, Path], url: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 41: a 0.55 MB log holding a 400 MB sample peaked at 1.3 GB and was accepted;
    a FIFO or /dev/zero named .eval was opened as a log."""
    import os

    from elitr_core.data.validation import MAX_JSON_ELEMENTS
    from elitr_core.integrations.inspect_logs import MAX_LOG_BYTES

    os.mkfifo(tmp_path / "pipe.eval")
    (tmp_path / "zero.eval").symlink_to("/dev/zero")
    cases = {
        "a sample past the log's bytes": (
            inflated(logs["st"], tmp_path / "big.eval",
                     lambda s: _answer(s, MAX_LOG_BYTES + 1)),
            f"an inspect_ai log that expands to {MAX_LOG_BYTES // 2**20 + 1} MB, more than the "
            f"{MAX_LOG_BYTES // 2**20} MB read at most: import the eval in parts"),
        "a JSON log past the log's bytes": (
            _rewrite(logs["st"], tmp_path / "big.json", lambda log: setattr(
                log.samples[0].messages[-1], "content", "x" * (MAX_LOG_BYTES + 1))),
            f"MB, more than the {MAX_LOG_BYTES // 2**20} MB read at most: import the eval in "
            "parts, logs of fewer samples each (inspect eval --limit or --sample-id)"),
        "a million values": (
            inflated(logs["st"], tmp_path / "values.eval",
                     lambda s: {**s, "notes": [{}] * MAX_JSON_ELEMENTS}),
            "more than the 1,000,000 read at most"),
        "a FIFO": (tmp_path / "pipe.eval", "is a named pipe (FIFO), not a regular file"),
        "/dev/zero": (tmp_path / "zero.eval", "is a device, not a regular file"),
    }
    before = snapshot(url)
    for case, (path, expected) in cases.items():
        assert main(["import", str(path), "--db", url]) == 2, case
        err = capsys.readouterr().err
        assert expected in err and err.count("\n") == 1 and "Traceback" not in err, (case, err)
        assert snapshot(url) == before, case
    # the same log within its bounds, rewritten alike, still imports
    fine = inflated(logs["st"], tmp_path / "fine.eval", lambda s: _answer(s, 2**20))
    assert main(["import", str(fine), "--db", url]) == 0
