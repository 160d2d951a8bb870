"""The Label Studio round trip against a real Label Studio server (tests/label_studio.py), on
SQLite and PostgreSQL, as a lab makes it.

``export label-studio DIR`` writes the tasks and the config; the test creates a project with
that config through Label Studio's API, imports the tasks, has two annotators (the first user
and one who signs up through the invite link) submit scores through the API, one task skipped,
exports the project as JSON through the API and imports it with ``import``. The scores come
back under ``label-studio:<project>``, each on the response its task was made from, by the
pseudonymised annotator who gave it; the evaluator shows on the Agreement page. Files that are
not such an export (Label Studio's JSON-MIN, a project of other tasks, tasks imported twice,
two annotations of one task by one user: all made by the server) and a score changed since
the import are refused in one line with nothing written.
"""

from __future__ import annotations

import csv
import io
import json
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from elitr_core.cli.main import main
from tests.dbstate import snapshot
from tests.elitr_core.run_helpers import rows
from tests.label_studio import ADMIN, LabelStudio, choice, comment, label_studio_server
from tests.pages.analysis_support import open_page, set_filters

#: pyproject's 600 s per test guards against a hang; Label Studio starts (and checks its
#: migrations) before the first leg runs (tests/label_studio.START_TIMEOUT_S). It may be slow;
#: it may not hang.
pytestmark = pytest.mark.timeout(2400)
MODEL = "Vicuna-13B-v1.5"
FILTERS = ["--split", "test2", "--setting", "qa", "--mode", "st"]
PROJECT = "pilot"
SECOND = "second-annotator@example.com"
#: tasks scored by the first user; the second scores every other one of them
FIRST_TASKS = 32


@pytest.fixture(scope="module")
def label_studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabelStudio]:
    """One server for the module's tests (each leg makes its own projects)."""
    with label_studio_server(tmp_path_factory.mktemp("label-studio")) as server:
        print(f"\nLabel Studio answered after {server.start_s:.1f} s")
        yield server


def _csv(url: str, *args: str) -> list[dict[str, str]]:
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stdout", out)
        assert main(["export", *args, "--db", url]) == 0
    return list(csv.DictReader(io.StringIO(out.getvalue())))


def _gold(url: str) -> dict[tuple[str, int], float]:
    """The gold-human score of each of MODEL's test2 QA-st responses."""
    return {(r["meeting"], int(r["question_id"])): float(r["score"])
            for r in _csv(url, "scores", *FILTERS, "--model", MODEL, "--evaluator",
                          "gold-human")}


def _annotate(server: LabelStudio, tasks: list[dict[str, Any]], gold: dict[tuple[str, int],
              float], second: str) -> dict[tuple[str, int, str], int]:
    """Scores submitted through the API: (meeting, question, annotator pseudonym) -> score.
    The first user (id 1) is the first pseudonym, the second user the next."""
    given = {}
    for i, task in enumerate(tasks[:FIRST_TASKS]):
        key = (task["data"]["meeting"], task["data"]["question_id"])
        first = int(min(10, max(1, gold[key] + (i % 3) - 1)))
        server.annotate(task["id"], [choice(str(first)), comment(f"first {i}")],
                        lead_time=10.0 + i)
        given[(*key, "annotator-001")] = first
        if i % 2 == 0:
            second_value = int(min(10, max(1, gold[key] + (i % 5) - 2)))
            server.annotate(task["id"], [choice(str(second_value))], token=second,
                            lead_time=5.5)
            given[(*key, "annotator-002")] = second_value
    server.annotate(tasks[FIRST_TASKS]["id"], [], token=second, was_cancelled=True)
    return given


def test_round_trip_through_a_real_label_studio(
        label_studio: LabelStudio, bundled_db: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    server, url = label_studio, bundled_db
    folder = tmp_path / "to-label"
    assert main(["export", "label-studio", str(folder), *FILTERS, "--model", MODEL,
                 "--project", PROJECT, "--db", url]) == 0
    assert "label-studio:pilot" in capsys.readouterr().out
    tasks_text = (folder / "tasks.json").read_text(encoding="utf-8")
    config = (folder / "config.xml").read_text(encoding="utf-8")
    exported = json.loads(tasks_text)
    models = {m for (m,) in rows(url, "SELECT DISTINCT model FROM run")}
    # blind: no model name anywhere, only the declared fields
    assert not [m for m in models if m in tasks_text or m in config]
    assert {tuple(t["data"]) for t in exported} == {(
        "response_key", "meeting", "question_id", "question", "reference", "response",
        "elitr_project")}
    gold = _gold(url)
    assert len(exported) == len(gold) > FIRST_TASKS

    project = server.project(f"{PROJECT} {url.split(':')[0][:10]} {secrets.token_hex(3)}",
                             config)
    assert server.import_tasks(project, exported) == len(exported)
    made = server.tasks(project)
    assert [t["data"] for t in made] == [t["data"] for t in exported]  # ids as written
    second_id, second = server.sign_up(f"{secrets.token_hex(4)}-{SECOND}", "a-long-password-2")
    given = _annotate(server, made, gold, second)
    export = tmp_path / "project-export.json"
    export.write_bytes(server.export(project))

    assert main(["import", str(export), "--db", url]) == 0
    out = capsys.readouterr().out
    assert f"{len(given)} scores" in out and "was skipped by its annotator" in out
    stored = _csv(url, "scores", "--evaluator", "label-studio:pilot")
    assert {(r["meeting"], int(r["question_id"]), r["annotator"]): int(float(r["score"]))
            for r in stored} == given
    assert {(r["model"], r["split"], r["setting"], r["mode"]) for r in stored} == {
        (MODEL, "test2", "qa", "st")}
    evaluator = rows(url, "SELECT kind, source FROM evaluator WHERE slug = 'label-studio:pilot'")
    assert evaluator == [("human", "label-studio")]
    annotators = rows(url, "SELECT a.name, a.external_id FROM annotator a JOIN evaluator e ON "
                      "e.id = a.evaluator_id WHERE e.slug = 'label-studio:pilot' ORDER BY a.name")
    assert annotators == [("annotator-001", "label-studio-user:1"),
                          ("annotator-002", f"label-studio-user:{second_id}")]
    dump = json.dumps(snapshot(url))
    assert ADMIN not in dump and SECOND not in dump  # no e-mail stored
    comments = rows(url, "SELECT s.raw, s.seconds_spent FROM score s JOIN evaluator e ON "
                    "e.id = s.evaluator_id WHERE e.slug = 'label-studio:pilot' AND "
                    "s.raw = 'first 0'")
    assert comments == [("first 0", 10.0)]

    before = snapshot(url)
    assert main(["import", str(export), "--db", url]) == 0  # the same export: no change
    assert snapshot(url) == before
    _refusals(server, url, exported, config, made, second, tmp_path, capsys)
    _agreement_page(url, monkeypatch, given, gold)
    print(f"\nround trip on {url.split(':')[0]}: {time.monotonic() - started:.1f} s")


def _refused(url: str, path: Path, expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(url)
    assert main(["import", str(path), "--db", url]) == 2, expected
    err = capsys.readouterr().err
    assert expected in err and len(err.strip().splitlines()) == 1, err
    assert snapshot(url) == before


def _refusals(server: LabelStudio, url: str, exported: list[dict[str, Any]], config: str,
              made: list[dict[str, Any]], second: str, tmp_path: Path,
              capsys: pytest.CaptureFixture[str]) -> None:
    """Foreign and broken exports, each made by the server, refused with nothing written."""
    project = made[0]["project"]
    cases: dict[str, tuple[bytes, str]] = {}
    cases["json-min"] = (server.export(project, "JSON_MIN"), "is not a Label Studio JSON export")
    other = server.project(f"other {secrets.token_hex(3)}",
                           '<View><Text name="text" value="$text"/><Choices name="ok" '
                           'toName="text"><Choice value="yes"/></Choices></View>')
    server.import_tasks(other, [{"text": "a task of another project"}])
    server.annotate(server.tasks(other)[0]["id"], [choice("yes", "ok", "text")])
    cases["another project"] = (server.export(other), "was not made by `export label-studio`")
    twice = server.project(f"twice {secrets.token_hex(3)}", config)
    server.import_tasks(twice, exported[:1])
    server.import_tasks(twice, exported[:1])
    for copy in server.tasks(twice):  # (an export holds the annotated tasks)
        server.annotate(copy["id"], [choice("5")])
    cases["tasks imported twice"] = (server.export(twice), "tasks.json imported twice")
    again = server.project(f"again {secrets.token_hex(3)}", config)
    server.import_tasks(again, exported[:1])
    task = server.tasks(again)[0]["id"]
    for value in ("3", "4"):
        server.annotate(task, [choice(value)], token=second)
    cases["one user twice"] = (server.export(again), f"an annotation of task {task} by one user")
    changed = json.loads(server.export(project))
    first = next(t for t in changed if t["annotations"])
    annotation = first["annotations"][0]
    old = annotation["result"][0]["value"]["choices"][0]
    new = "1" if old != "1" else "2"
    server.call("PATCH", f"/api/annotations/{annotation['id']}",
                {"result": [choice(new)] + annotation["result"][1:]})
    cases["a changed score"] = (server.export(project), f"annotation {annotation['id']} is "
                                f"stored with value {float(old)}; this file says {new}")
    for name, (data, expected) in cases.items():
        path = tmp_path / f"{name.replace(' ', '-')}.json"
        path.write_bytes(data)
        _refused(url, path, expected, capsys)
    # with --replace the changed score is taken and listed
    assert main(["import", str(tmp_path / "a-changed-score.json"), "--replace", "--db",
                 url]) == 0
    assert "replaced 1 stored value" in capsys.readouterr().out
    server.call("PATCH", f"/api/annotations/{annotation['id']}", {"result": annotation["result"]})
    restore = tmp_path / "restored.json"
    restore.write_bytes(server.export(project))
    assert main(["import", str(restore), "--replace", "--db", url]) == 0
    capsys.readouterr()


def _agreement_page(url: str, monkeypatch: pytest.MonkeyPatch,
                    given: dict[tuple[str, int, str], int],
                    gold: dict[tuple[str, int], float]) -> None:
    """The Agreement page lists the evaluator, correlated with gold-human on the responses
    both scored, as an independent computation from the scores given."""
    at: AppTest = open_page(url, monkeypatch, "agreement")
    at = set_filters(at, split="test2", setting="qa", mode="st")
    assert not at.exception and not at.error
    corr = next(d.value for d in at.dataframe if "method" in d.value.columns)
    pair = corr[((corr["evaluator_a"] == "label-studio:pilot") & (corr["evaluator_b"]
                 == "gold-human")) | ((corr["evaluator_b"] == "label-studio:pilot")
                                      & (corr["evaluator_a"] == "gold-human"))]
    assert len(pair) == 1, corr
    means: dict[tuple[str, int], list[int]] = {}
    for (meeting, number, _), value in given.items():
        means.setdefault((meeting, number), []).append(value)
    keys = sorted(means)
    expected = np.corrcoef([float(np.mean(means[k])) for k in keys], [gold[k] for k in keys])
    assert int(pair.iloc[0]["n"]) == len(keys) == FIRST_TASKS
    assert float(pair.iloc[0]["r"]) == pytest.approx(expected[0, 1], abs=1e-9)
