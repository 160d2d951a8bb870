"""The shared command-line options: the database URL and the score filters."""

from __future__ import annotations

import argparse

import pytest

from db.runs import ScoreFilter
from elitr_core.cli.options import db_option, filter_options, run_filter_options, score_filter


def _parser(with_evaluator: bool = True) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="elitr")
    db_option(parser)
    (filter_options if with_evaluator else run_filter_options)(parser)
    return parser


def test_the_filters_become_a_score_filter() -> None:
    args = _parser().parse_args(["--split", "dev", "--setting", "conv", "--mode", "mt",
                                 "--model", "A", "--model", "B", "--evaluator", "gpt-4",
                                 "--db", "sqlite:///x.db"])
    assert score_filter(args) == ScoreFilter(split="dev", setting="conv", mode="mt",
                                             models=("A", "B"), evaluators=("gpt-4",))
    assert args.db == "sqlite:///x.db"
    assert score_filter(_parser().parse_args([])) == ScoreFilter()
    assert _parser().parse_args([]).db is None


def test_commands_without_an_evaluator_filter() -> None:
    parser = _parser(with_evaluator=False)
    assert score_filter(parser.parse_args(["--model", "A"])) == ScoreFilter(models=("A",))
    with pytest.raises(SystemExit):
        parser.parse_args(["--evaluator", "gpt-4"])


@pytest.mark.parametrize("args", [["--split", "test"], ["--setting", "chat"],
                                  ["--mode", "multi"]])
def test_unknown_words_are_refused(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        _parser().parse_args(args)
    assert caught.value.code == 2
    assert f"invalid choice: '{args[1]}'" in capsys.readouterr().err
