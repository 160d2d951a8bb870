"""The real lm-evaluation-harness on the shipped task config, its samples imported.

``lm_eval --model hf`` runs SmolLM2-135M-Instruct (the trained test model, offline) on the
JSONL that ``export benchmark --format jsonl`` writes, with ``--log_samples``; the samples file
is imported on SQLite and PostgreSQL and the stored answers are the strings lm_eval logged.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from elitr_core.cli.main import main
from tests.dbstate import snapshot
from tests.elitr_core.backends.smollm2 import LINES, REAL_MODEL_TIMEOUT, smollm2_dir
from tests.elitr_core.run_helpers import MEETINGS, rows, set_transcripts

pytest.importorskip("lm_eval")
pytestmark = REAL_MODEL_TIMEOUT
ROOT = Path(__file__).resolve().parents[3]
TASK_DIR = ROOT / "elitr_core" / "integrations" / "lm_eval"
LIMIT = 3


@pytest.fixture(scope="module")
def samples(bundled_sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The samples file of one real lm_eval run (LIMIT questions, 4 new tokens each)."""
    from db.engine import dispose_engines

    folder = tmp_path_factory.mktemp("lm-eval")
    shutil.copy(bundled_sqlite_template, folder / "source.db")
    url = f"sqlite:///{folder / 'source.db'}"
    set_transcripts(url, lines=LINES)
    questions = folder / "elitr_bench.jsonl"
    assert main(["export", "benchmark", "--format", "jsonl", "--split", "test2", "--setting",
                 "qa", "--meetings", MEETINGS[0], "--out", str(questions), "--db", url]) == 0
    dispose_engines()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1",
           "HF_DATASETS_CACHE": str(folder / "hf-datasets")}
    done = subprocess.run(
        [sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args",
         f"pretrained={smollm2_dir()},dtype=float32", "--device", "cpu",
         "--include_path", str(TASK_DIR), "--tasks", "elitr_bench",
         "--metadata", json.dumps({"jsonl": str(questions)}), "--apply_chat_template",
         "--limit", str(LIMIT), "--gen_kwargs", "max_gen_toks=4", "--log_samples",
         "--output_path", str(folder / "out")],
        cwd=folder, env=env, capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stderr[-3000:]
    (found,) = (folder / "out").glob("*/samples_elitr_bench_*.jsonl")
    return found


def _logged(path: Path) -> dict[tuple[str, int], str]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        sample = json.loads(line)
        meeting, _, number = sample["doc"]["id"].partition("/q")
        out[(meeting, int(number))] = sample["filtered_resps"][0]
    return out


def test_lm_eval_samples_import_as_a_run_with_the_logged_answers(
        samples: Path, url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", str(samples), "--db", url]) == 0
    out = capsys.readouterr().out
    assert f"{LIMIT} responses, 1 runs" in out and "scorer exact_match not imported" in out
    found = rows(url, "SELECT m.external_id, q.number, r.text, run.model, run.backend, "
                 "run.config FROM response r JOIN run ON run.id = r.run_id JOIN question q ON "
                 "q.id = r.question_id JOIN meeting m ON m.id = q.meeting_id "
                 "WHERE run.backend = 'lm-eval'")
    logged = _logged(samples)
    assert len(logged) == LIMIT and all(isinstance(t, str) for t in logged.values())
    assert {(m, n): text for m, n, text, *_ in found} == logged
    model, config = found[0][3], found[0][5]
    config = json.loads(config) if isinstance(config, str) else config
    assert model == smollm2_dir().name and config["lm_eval_version"] == "0.4.13"
    assert config["gen_kwargs"] == {"max_gen_toks": 4}
    before = snapshot(url)
    assert main(["import", str(samples), "--db", url]) == 0
    assert snapshot(url) == before


def _broken(samples: Path, folder: Path, edit: Any, *, results: bool = True) -> Path:
    target = folder / samples.name
    lines = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines()]
    target.write_text("".join(edit(line, i) + "\n" for i, line in enumerate(lines)),
                      encoding="utf-8")
    if results:
        name = samples.name.replace("samples_elitr_bench_", "results_").replace(".jsonl",
                                                                                ".json")
        shutil.copy(samples.with_name(name), folder / name)
    return target


def _with(line: dict[str, Any], i: int, **doc: Any) -> str:
    if i == 1:
        line["doc"].update(doc)
    return json.dumps(line)


def test_broken_samples_are_refused_and_nothing_written(
        samples: Path, url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = {
        "no results file": (lambda line, i: json.dumps(line), False,
                            "which names the model, is not beside it"),
        "a question of no meeting": (lambda line, i: _with(line, i, id="gsm8k/17"), True,
                                     "doc id 'gsm8k/17' names no ELITR-Bench question"),
        "an unknown question": (lambda line, i: _with(line, i, id=f"{MEETINGS[0]}/q99"), True,
                                "question 99, which is not an ELITR-Bench question"),
        "another setting": (lambda line, i: _with(line, i, setting="conv"), True,
                            "differs from line 1"),
        "cut short": (lambda line, i: json.dumps(line)[:50] if i == 1 else json.dumps(line),
                      True, "line 2: malformed JSON"),
    }
    before = snapshot(url)
    for case, (edit, results, expected) in cases.items():
        folder = tmp_path / case.replace(" ", "-")
        folder.mkdir()
        broken = _broken(samples, folder, edit, results=results)
        assert main(["import", str(broken), "--db", url]) == 2, case
        err = capsys.readouterr().err
        assert expected in err and broken.name in err, (case, err)
        assert err.count("\n") == 1
        assert snapshot(url) == before, case
