"""Score-based tables in the states a live study passes through, built through the CLI on
SQLite and PostgreSQL: a model with one response (Elo), one model with constant scores
(lost in the middle). Both used to empty or refuse the table (issue 33, points 6 and 9)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from elitr_core.cli.main import main
from tests.bundled import bundled_json
from tests.elitr_core.export.test_pairwise_states import export

RESPONSES = "elitr-bench-qa_test2_st_gpt-4-eval.json"


@pytest.fixture
def bundled(bundled_db: str) -> str:
    return bundled_db


def bundled_responses() -> dict:
    return bundled_json("generated-responses.zip", RESPONSES)


def import_model(url: str, folder: Path, model: str, *, questions: int | None,
                 score: str | None = None) -> None:
    """Import ``model`` answering the first ``questions`` test2 QA-st questions of each
    meeting (all with None; only the first question of the first meeting with 0) with the
    first bundled answer's text and gpt-4 score (or ``score``)."""
    data = bundled_responses()
    meetings = []
    for meeting in data["meetings"][: 1 if questions == 0 else None]:
        chosen = meeting["questions"][: 1 if questions == 0 else questions]
        meetings.append({**meeting, "questions": [
            {**q, "generated-responses": [{**q["generated-responses"][0], "model": model,
                                           **({"gpt-4-eval_score": score} if score else {})}]}
            for q in chosen]})
    path = folder / RESPONSES
    path.write_text(json.dumps({**data, "meetings": meetings}), encoding="utf-8")
    assert main(["import", str(path), "--db", url]) == 0


@pytest.fixture
def sparse(bundled: str, tmp_path: Path) -> Iterator[str]:
    """The bundled data plus model Sparse with one test2 QA-st response scored by gpt-4."""
    import_model(bundled, tmp_path, "Sparse", questions=0)
    yield bundled


def test_a_model_with_one_response_keeps_the_others_intervals(
        sparse: str, capsys: pytest.CaptureFixture[str]) -> None:
    """All nine bundled models' intervals used to be empty; now only Sparse's is, with a
    note, and the elo table has a note column."""
    out = export(sparse, capsys, "elo", "--split", "test2", "--setting", "qa", "--mode", "st",
                 "--evaluator", "gpt-4").set_index("model")
    assert len(out) == 10 and "note" in out.columns
    assert out.loc["Sparse", ["ci_low", "ci_high"]].isna().all()
    assert out.loc["Sparse", "note"].startswith("no interval: Sparse played on 1 question(s)")
    others = out.drop(index="Sparse")
    assert others["ci_low"].notna().all() and (others["note"].fillna("") == "").all()
    assert ((others["ci_low"] < others["rating"]) & (others["rating"] < others["ci_high"])).all()


def test_lost_in_middle_on_one_constant_model_is_its_documented_row(
        bundled: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import_model(bundled, tmp_path, "Constant", questions=None, score="7")
    out = export(bundled, capsys, "lost-in-middle", "--model", "Constant", "--evaluator",
                 "gpt-4")
    assert out["model"].tolist() == ["Constant"] and out["t"].isna().all()
    assert out["note"].tolist() == ["both groups have constant scores: Welch's t is undefined"]
    assert (out["mean_middle"] == 7).all() and (out["n_middle"] + out["n_other"] == 130).all()
