"""The data commands (init, import, transcripts) on bad input: a one-line message naming the
file, exit code 2, database unchanged."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from db.engine import dispose_engines
from elitr_core.cli.main import main
from tests.dbstate import counts, snapshot
from tests.unprivileged import run_cli, shared_tmp
from tests.zipbomb import deflate_bomb

ROOT = Path(__file__).resolve().parents[3]


def _responses(score: object = "7", number: str = "1") -> dict:
    return {"split": "dev", "meetings": [{"id": "meeting_en_dev_001", "questions": [{
        "id": number, "question-type": "who", "answer-position": "S",
        "question": "Who were the participants of the meeting?", "groundtruth-answer": "x",
        "generated-responses": [{"model": "GPT-4", "generated-response": "new text",
                                 "gpt-4-eval_score": score}]}]}]}


def _two_responses(*, same_question: bool) -> dict:
    """A response file whose question holds GPT-4 twice, or whose question appears twice."""
    data = _responses()
    question = data["meetings"][0]["questions"][0]
    if same_question:
        data["meetings"][0]["questions"].append(json.loads(json.dumps(question)))
        data["meetings"][0]["questions"][1]["generated-responses"][0]["model"] = "Other"
    else:
        question["generated-responses"].append(dict(question["generated-responses"][0]))
    return data


def _write(tmp_path: Path, name: str, content: str) -> Path:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    return path


BAD_FILES = {
    "malformed JSON": ("elitr-bench-qa_dev_st_gpt-4-eval.json", '{"split": "dev", "meet',
                       "malformed JSON"),
    "wrong shape": ("elitr-bench-qa_dev_st_gpt-4-eval.json", json.dumps({"split": "dev"}),
                    "missing key 'meetings'"),
    "wrong file name": ("answers.json", json.dumps(_responses()), "not an ELITR-Bench file"),
    "score above 10": ("elitr-bench-qa_dev_st_gpt-4-eval.json", json.dumps(_responses("11")),
                       "score '11' is outside 1..10"),
    "score not a number": ("elitr-bench-qa_dev_st_gpt-4-eval.json",
                           json.dumps(_responses("great")), "score 'great' is not a number"),
    "unknown question": ("elitr-bench-qa_dev_st_gpt-4-eval.json",
                         json.dumps(_responses(number="999")), "unknown question id 999"),
    "score true": ("elitr-bench-qa_dev_st_gpt-4-eval.json", json.dumps(_responses(True)),
                   "gpt-4-eval_score True is not a number"),
    "question id ²": ("elitr-bench-qa_dev_st_gpt-4-eval.json",
                      json.dumps(_responses(number="²")),
                      "question id '²' is not a whole number"),
    "nested 100,000 levels": ("elitr-bench-qa_dev.json", "[" * 100_000 + "]" * 100_000,
                              "JSON nested 100000 levels deep"),
    "blank model": ("elitr-bench-qa_dev_st_gpt-4-eval.json",
                    json.dumps(_responses()).replace('"GPT-4"', '" "'),
                    "model ' ' is empty: give a name"),
    "same model twice": ("elitr-bench-qa_dev_st_gpt-4-eval.json",
                         json.dumps(_two_responses(same_question=False)),
                         "meeting meeting_en_dev_001 question 1: model 'GPT-4' appears twice "
                         "(response 1 and response 2): keep one"),
    "same question twice": ("elitr-bench-qa_dev_st_gpt-4-eval.json",
                            json.dumps(_two_responses(same_question=True)),
                            "meeting meeting_en_dev_001 question 1 appears twice "
                            "(question entry 1 and question entry 2)"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_file_is_refused_and_nothing_written(
    case: str, bundled_sqlite: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name, content, expected = BAD_FILES[case]
    good = tmp_path / "good"
    good.mkdir()
    # a good file (a new model's responses) in the same command must not be written either
    # (one transaction)
    good_file = _write(good, "elitr-bench-qa_dev_st_gpt-4-eval.json",
                       json.dumps(_responses("3")).replace('"GPT-4"', '"Good-Model"'))
    before = snapshot(bundled_sqlite)
    status = main(["import", str(good_file), str(_write(tmp_path, name, content)),
                   "--db", bundled_sqlite])
    err = capsys.readouterr().err
    assert status == 2
    assert expected in err and name in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert snapshot(bundled_sqlite) == before


def test_scores_csv_errors(bundled_sqlite: str, tmp_path: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:
    header = "meeting,question_id,split,setting,mode,model,evaluator,annotator,score\n"
    ok = "meeting_en_dev_001,1,dev,qa,st,GPT-4,expert-2,ann1,8\n"
    before = snapshot(bundled_sqlite)
    cases = {
        "out of range": (header + ok + "meeting_en_dev_001,2,dev,qa,st,GPT-4,expert-2,a,0\n",
                         "line 3: score '0' is outside 1..10"),
        "unknown question": (header + "meeting_en_dev_001,77,dev,qa,st,GPT-4,e,a,5\n",
                             "unknown question id 77"),
        "no response": (header + "meeting_en_dev_001,1,dev,qa,mt,Nobody-7B,e,a,5\n",
                        "no stored response of model 'Nobody-7B'"),
        "not a scores CSV": ("a,b\n1,2\n", "missing column(s) meeting"),
        "blank evaluator": (header + "meeting_en_dev_001,1,dev,qa,st,GPT-4, ,a,5\n",
                            "line 2: evaluator ' ' is empty: give a name"),
        "negative sample": (header.replace("score", "score,sample")
                            + "meeting_en_dev_001,1,dev,qa,st,GPT-4,e,a,5,-5\n",
                            "line 2: sample -5 is below 0"),
        "question id ²": (header + "meeting_en_dev_001,²,dev,qa,st,GPT-4,e,a,5\n",
                          "line 2: question_id '²' is not a whole number"),
        "score true": (header + "meeting_en_dev_001,1,dev,qa,st,GPT-4,e,a,true\n",
                       "line 2: score 'true' is not a number"),
        "short row": (header + "meeting_en_dev_001,1,dev\n", "line 2: fewer cells"),
    }
    for content, expected in cases.values():
        path = _write(tmp_path, "scores.csv", content)
        assert main(["import", str(path), "--db", bundled_sqlite]) == 2
        err = capsys.readouterr().err
        assert expected in err and "scores.csv" in err
    assert snapshot(bundled_sqlite) == before
    # and a good CSV lands, idempotently
    path = _write(tmp_path, "scores.csv", header + ok)
    assert main(["import", str(path), "--db", bundled_sqlite]) == 0
    once = snapshot(bundled_sqlite)
    assert main(["import", str(path), "--db", bundled_sqlite]) == 0
    assert snapshot(bundled_sqlite) == once != before


def test_wrong_zip_password(bundled_sqlite: str, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(bundled_sqlite)
    status = main(["import", str(ROOT / "data" / "data.zip"), "--password", "guess",
                   "--db", bundled_sqlite])
    err = capsys.readouterr().err
    assert status == 2 and "data.zip" in err and "wrong ZIP password" in err
    assert snapshot(bundled_sqlite) == before


def test_not_a_zip(bundled_sqlite: str, tmp_path: Path,
                   capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "broken.zip", "PK not really")
    assert main(["import", str(path), "--db", bundled_sqlite]) == 2
    assert "broken.zip: not a readable ZIP archive" in capsys.readouterr().err


def test_missing_transcript_file(bundled_sqlite: str, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "elitr-minuting-corpus-en"
    (corpus / "dev" / "meeting_en_dev_001").mkdir(parents=True)
    _write(corpus / "dev" / "meeting_en_dev_001", "transcript_MAN_1.txt", "(PERSON1) Hi.\n")
    (corpus / "dev" / "meeting_en_dev_002").mkdir()  # no transcript file in it
    before = snapshot(bundled_sqlite)
    assert main(["transcripts", str(tmp_path), "--db", bundled_sqlite]) == 2
    err = capsys.readouterr().err
    assert "meeting_en_dev_002: missing transcript file" in err
    assert snapshot(bundled_sqlite) == before  # meeting 001's transcript was not kept either


def test_unreachable_database(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["init", "--db", "postgresql://nobody@127.0.0.1:9/nowhere"])
    err = capsys.readouterr().err
    assert status == 2
    assert "cannot reach the database" in err and "127.0.0.1:9" in err
    assert "Check the URL" in err


def test_cli_process_prints_no_traceback(tmp_path: Path) -> None:
    """The real process: exit status 2 and one line on stderr."""
    bad = _write(tmp_path, "elitr-bench-qa_dev.json", "{oops")
    result = subprocess.run(
        [sys.executable, "-m", "elitr_core", "import", str(bad),
         "--db", f"sqlite:///{tmp_path / 'x.db'}"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and "malformed JSON" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("kind", ["responses", "scores CSV"])
def test_duplicates_in_one_import_are_refused(
    kind: str, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On SQLite the last duplicate used to win silently; on PostgreSQL a traceback."""
    assert main(["import", str(ROOT / "data" / "data.zip"), "--db", db_url]) == 0
    good = _write(tmp_path, "elitr-bench-qa_dev_st_gpt-4-eval.json", json.dumps(_responses()))
    assert main(["import", str(good), "--db", db_url]) == 0
    if kind == "responses":
        bad = _write(tmp_path / "..", "elitr-bench-qa_dev_st_gpt-4-eval.json",
                     json.dumps(_two_responses(same_question=False)))
        expected = "model 'GPT-4' appears twice (response 1 and response 2)"
    else:
        row = "meeting_en_dev_001,1,dev,qa,st,GPT-4,expert-2,ann1,{}\n"
        bad = _write(tmp_path, "scores.csv",
                     "meeting,question_id,split,setting,mode,model,evaluator,annotator,score\n"
                     + row.format(8) + row.format(3) + row.format(5))
        expected = ("the score of model 'GPT-4' for meeting_en_dev_001 question 1 (qa-st dev) "
                    "by 'expert-2' annotator 'ann1' sample 0 appears twice (line 2 and line 3)")
    capsys.readouterr()
    before = snapshot(db_url)
    assert main(["import", str(bad), "--db", db_url]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}: ") and expected in err and err.count("\n") == 1
    assert snapshot(db_url) == before


def test_a_scores_csv_with_a_byte_order_mark_is_imported(
    bundled_sqlite: str, tmp_path: Path
) -> None:
    path = tmp_path / "scores.csv"
    path.write_text("meeting,question_id,split,setting,mode,model,evaluator,annotator,score\n"
                    "meeting_en_dev_001,1,dev,qa,st,GPT-4,expert-2,ann1,8\n", encoding="utf-8-sig")
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    before = counts(bundled_sqlite)
    assert main(["import", str(path), "--db", bundled_sqlite]) == 0
    assert counts(bundled_sqlite)["score"] == before["score"] + 1


def test_a_folder_passed_as_a_file(bundled_sqlite: str, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("elitr-bench-qa_dev.json", "scores.csv", "data.zip"):
        (tmp_path / name).mkdir()
        assert main(["import", str(tmp_path / name), "--db", bundled_sqlite]) == 2
        err = capsys.readouterr().err
        assert err == f"error: {tmp_path / name}: is a folder, not a file: pass the file itself\n"


def test_a_1_mb_zip_expanding_to_1_gb(bundled_sqlite: str, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    bomb = tmp_path / "bomb.zip"
    deflate_bomb(bomb, "elitr-bench-qa_dev.json", 1024)
    before = snapshot(bundled_sqlite)
    assert main(["import", str(bomb), "--db", bundled_sqlite]) == 2
    assert "bomb.zip: elitr-bench-qa_dev.json expands to 1,024 MB" in capsys.readouterr().err
    assert snapshot(bundled_sqlite) == before


def _corpus(tmp_path: Path) -> Path:
    """A corpus folder with meeting 001's transcript; meeting 002 is filled by each test."""
    corpus = tmp_path / "elitr-minuting-corpus-en" / "dev"
    (corpus / "meeting_en_dev_001").mkdir(parents=True)
    _write(corpus / "meeting_en_dev_001", "transcript_MAN_1.txt", "(PERSON1) Hi.\n")
    (corpus / "meeting_en_dev_002").mkdir()
    return corpus / "meeting_en_dev_002"


@pytest.mark.parametrize(("kind", "problem"), [
    ("folder", "is a folder, not a file"),
    ("dangling link", "dangling symbolic link (its target is missing)"),
])
def test_transcript_that_is_not_a_file(
    kind: str, problem: str, bundled_sqlite: str, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    target = _corpus(tmp_path) / "transcript_MAN_1.txt"
    if kind == "folder":
        target.mkdir()
    else:
        target.symlink_to(tmp_path / "gone.txt")
    before = snapshot(bundled_sqlite)
    assert main(["transcripts", str(tmp_path), "--db", bundled_sqlite]) == 2
    assert capsys.readouterr().err == f"error: {target}: {problem}" + (
        ": pass the file itself\n" if kind == "folder" else ": check the path\n")
    assert snapshot(bundled_sqlite) == before


def test_unreadable_transcript(bundled_sqlite_template: Path) -> None:
    """Run as an unprivileged user: a transcript it may not read is refused in one line."""
    with shared_tmp() as folder:
        db = folder / "bundled.db"
        shutil.copy(bundled_sqlite_template, db)
        db.chmod(0o666)
        folder.chmod(0o777)  # the WAL files are created next to the database
        target = _corpus(folder) / "transcript_MAN_1.txt"
        _write(target.parent, target.name, "(PERSON1) secret.\n").chmod(0o000)
        before = snapshot(f"sqlite:///{db}")
        dispose_engines()
        result = run_cli("transcripts", str(folder), "--db", f"sqlite:///{db}")
        assert result.returncode == 2, result.stderr
        assert result.stderr == (f"error: {target}: cannot be read (Permission denied): "
                                 "check the file's permissions\n")
        assert snapshot(f"sqlite:///{db}") == before
        dispose_engines()
