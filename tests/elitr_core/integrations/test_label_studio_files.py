"""What ``export label-studio`` writes, read without a server (the quick tier; the round trip
through a real Label Studio is test_label_studio.py): the config asks the benchmark's rubric,
the tasks are blind and typed, and no other source writes under a ``label-studio:`` name."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from elitr_core.annotation.guidelines import rubric_criterion, score_meaning
from elitr_core.cli.main import main
from tests.dbstate import snapshot
from tests.elitr_core.run_helpers import rows


def test_config_asks_the_rubric_with_one_choice_per_score(small_sqlite: str,
                                                          tmp_path: Path) -> None:
    assert main(["export", "label-studio", str(tmp_path / "out"), "--db", small_sqlite]) == 0
    view = ET.parse(tmp_path / "out" / "config.xml").getroot()
    assert [t.get("value") for t in view.iter("Text")] == ["$question", "$reference",
                                                           "$response"]
    assert rubric_criterion() in [h.get("value") for h in view.iter("Header")]
    (choices,) = view.iter("Choices")
    assert choices.get("name") == "score" and choices.get("required") == "true"
    assert [(c.get("alias"), c.get("value"), c.get("hotkey")) for c in choices] == [
        (str(v), f"{v}: {score_meaning(v)}", str(v % 10)) for v in range(1, 11)]


def test_tasks_are_blind_typed_and_in_key_order(small_sqlite: str, tmp_path: Path) -> None:
    assert main(["export", "label-studio", str(tmp_path / "batch-1"), "--db",
                 small_sqlite]) == 0
    tasks = json.loads((tmp_path / "batch-1" / "tasks.json").read_text(encoding="utf-8"))
    responses = rows(small_sqlite, "SELECT count(*) FROM response")[0][0]
    assert len(tasks) == responses > 0
    keys = [t["data"]["response_key"] for t in tasks]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert all(t["meta"] == {"elitr_project": "batch-1", "response_key": t["data"][
        "response_key"]} for t in tasks)
    assert all(isinstance(t["data"]["question_id"], int) for t in tasks)
    assert {tuple(t["data"]) for t in tasks} == {(
        "response_key", "meeting", "question_id", "question", "reference", "response",
        "elitr_project")}
    models = {m for (m,) in rows(small_sqlite, "SELECT DISTINCT model FROM run")}
    assert models and not [v for t in tasks for v in (*t["data"].values(), *t["meta"].values())
                           if v in models]


def test_no_task_and_bad_names_are_refused(small_sqlite: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    for args, expected in (
            (["--model", "no-such-model"], "no response matches the filters"),
            (["--project", "x" * 60], "a Label Studio project name is 1 to 51 characters"),
            (["--evaluator", "gpt-4"], "--evaluator does not apply to export label-studio")):
        assert main(["export", "label-studio", str(tmp_path / "out"), *args, "--db",
                     small_sqlite]) == 2
        assert expected in capsys.readouterr().err
        assert not (tmp_path / "out").exists()


def test_a_scores_csv_cannot_write_under_a_label_studio_name(
        bundled_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scores = tmp_path / "scores.csv"
    assert main(["export", "scores", "--split", "test2", "--setting", "qa", "--mode", "st",
                 "--evaluator", "gold-human", "--out", str(scores), "--db", bundled_db]) == 0
    text = scores.read_text(encoding="utf-8").replace(",gold-human,", ",label-studio:pilot,")
    scores.write_text(text, encoding="utf-8")
    before = snapshot(bundled_db)
    assert main(["import", str(scores), "--db", bundled_db]) == 2
    assert "label-studio: namespace, which only a Label Studio export's scores use" in \
        capsys.readouterr().err
    assert snapshot(bundled_db) == before
