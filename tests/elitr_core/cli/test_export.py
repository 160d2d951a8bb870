"""`export` on the small seeded benchmark: every core table's CSV is byte-identical to what the
pages download (build_table + render); options reach the tables; bad options are one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from db.runs import ScoreFilter
from elitr_core.cli.main import main
from elitr_core.data.database import open_database, reading
from elitr_core.export.formats import render
from elitr_core.export.groups import parse_groups
from elitr_core.export.tables import build_table
from elitr_core.vocab import EXPORT_COLUMNS

CORE = ("scores", "unscored", "leaderboard", "breakdown", "lost-in-middle", "differentiating",
        "evaluator-means", "evaluator-correlation", "calibration", "icc", "elo")


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["export", *args]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("name", CORE)
def test_the_cli_writes_what_the_pages_download(small_sqlite: str, name: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    out = _cli(capsys, name, "--db", small_sqlite, "--split", "test2", "--model", "A",
               "--model", "C")
    with reading(open_database(small_sqlite)) as session:
        frame = build_table(name, session, ScoreFilter(split="test2", models=("A", "C")))
    assert out == render(frame, "csv", name)
    if name in EXPORT_COLUMNS:
        assert out.splitlines()[0] == ",".join(EXPORT_COLUMNS[name])


def test_options_reach_the_tables(small_sqlite: str, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    grouped = _cli(capsys, "breakdown", "--db", small_sqlite, "--group", "AB=A,B",
                   "--evaluator", "gold-human")
    with reading(open_database(small_sqlite)) as session:
        frame = build_table("breakdown", session, ScoreFilter(evaluators=("gold-human",)),
                            groups=parse_groups(["AB=A,B"]))
    assert grouped == render(frame, "csv", "breakdown") and "\nAB,gold-human," in grouped
    calibration = _cli(capsys, "calibration", "--db", small_sqlite, "--reference", "gpt-4")
    assert {line.split(",")[0] for line in calibration.splitlines()[1:]} == {"gpt-4"}
    out = tmp_path / "board.json"
    assert _cli(capsys, "leaderboard", "--db", small_sqlite, "--format", "json",
                "--out", str(out)) == ""
    assert out.read_text() == _cli(capsys, "leaderboard", "--db", small_sqlite, "--format",
                                   "json")


@pytest.mark.parametrize(("args", "message"), [
    (["breakdown", "--group", "AB"], "model group 'AB': write NAME=MODEL,MODEL"),
    (["leaderboard", "--source", "pairwise"], "--source pairwise applies to elo, not "
                                              "leaderboard"),
    (["leaderboard", "--model", "Z"], "no scores match the current filters"),
])
def test_bad_options_are_one_line(small_sqlite: str, capsys: pytest.CaptureFixture[str],
                                  args: list[str], message: str) -> None:
    assert main(["export", *args, "--db", small_sqlite]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
