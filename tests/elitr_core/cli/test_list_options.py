"""One style for every option taking several values: repeatable, and each occurrence a comma
list too (``--model A --model B`` == ``--model A,B``), through the shared ``ListOption``."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from db.runs import runs_per_model
from db.transaction import reading
from elitr_core.cli.main import build_parser, main
from elitr_core.cli.options import SEVERAL, WHOLE, ListOption
from elitr_core.data.database import open_database
from tests import small_db
from tests.elitr_core.annotation_data import build as build_study_data

#: Repeatable options whose one value holds a comma of its own, so it cannot split on commas.
KEYED = {"--group": "NAME=MODEL,MODEL: the comma lists one family's models"}


def _commands(parser: argparse.ArgumentParser, path: str = "") -> Iterator[
        tuple[str, argparse.ArgumentParser]]:
    """Every (sub)command's parser, named by its words (``study create``)."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _commands(child, f"{path} {name}".strip())


def _takes_several(action: argparse.Action) -> bool:
    """An option that collects values, or says it takes a comma list."""
    collects = isinstance(action, (argparse._AppendAction, argparse._ExtendAction))
    several_args = action.nargs in ("+", "*") or (isinstance(action.nargs, int)
                                                  and action.nargs > 1)
    says_comma = "," in str(action.metavar or "") or "comma" in (action.help or "")
    return collects or several_args or says_comma or isinstance(action, ListOption)


def test_every_option_taking_several_values_uses_the_shared_action() -> None:
    found = []
    for command, parser in _commands(build_parser()):
        for action in parser._actions:
            if not action.option_strings or not _takes_several(action):
                continue
            name = max(action.option_strings, key=len)
            found.append((command, name))
            if name in KEYED:
                assert isinstance(action, argparse._AppendAction), (command, name)
                continue
            assert isinstance(action, ListOption), f"{command} {name}: use ListOption"
            # names taken whole (a model name may hold a comma) say so; the others say "comma"
            said = WHOLE if action.whole else SEVERAL  # type: ignore[attr-defined]
            assert said in (action.help or ""), f"{command} {name}: say how to give several"
    # The walk does reach the commands (a walk finding nothing would pass trivially).
    for expected in [("export", "--model"), ("export", "--evaluator"), ("metrics", "--metric"),
                     ("judge", "--model"), ("generate", "--meetings"),
                     ("study create", "--models"), ("study create", "--meetings")]:
        assert expected in found


def _parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_a_comma_list_means_the_same_as_repeating() -> None:
    one = _parse("export", "scores", "--evaluator", "x", "--evaluator", "y,z")
    other = _parse("export", "scores", "--evaluator", " x , y", "--evaluator", "z")
    assert one.evaluator == other.evaluator == ["x", "y", "z"]
    # A model name is free text and may hold a comma: --model takes it whole; repeat it.
    assert _parse("export", "scores", "--model", " A, v2 ", "--model", "B").model == ["A, v2", "B"]
    assert _parse("judge", "--backend", "fake", "--judge-model", "j", "--style", "gpt4",
                  "--evaluator", "e", "--model", "A,B").model == ["A,B"]
    assert _parse("export", "scores").model is None
    assert _parse("metrics", "--metric", "rouge-l,token-f1").metric == ["rouge-l", "token-f1"]
    # The old spellings still parse: plural names and comma lists.
    assert _parse("study", "create", "--name", "s", "--pool", "gold", "--per-item", "1",
                  "--models", "A,B", "--model", "C", "--meetings", "m1").models == ["A", "B", "C"]
    generate = ["generate", "--backend", "fake", "--model", "A", "--split", "dev"]
    assert _parse(*generate, "--meetings", "m1,m2").meetings == ["m1", "m2"]
    assert _parse(*generate, "--meeting", "m1", "--meeting", "m2").meetings == ["m1", "m2"]


@pytest.mark.parametrize(("argv", "said"), [
    (["export", "scores", "--evaluator", "A,"], "argument --evaluator: empty value in 'A,'"),
    (["export", "scores", "--evaluator", ""], "argument --evaluator: empty value in ''"),
    (["judge", "--backend", "fake", "--judge-model", "j", "--style", "gpt4", "--evaluator", "e",
      "--model", " "], "argument --model: empty value in ' '"),
    (["metrics", "--metric", "rouge-l,bleu"], "argument --metric: invalid choice: 'bleu'"),
])
def test_bad_lists_are_one_line(argv: list[str], said: str,
                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1 and "--help" in err


def test_export_gives_the_same_table_either_way(db_url: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    small_db.build(db_url)
    outs = []
    for models in (["--model", "A", "--model", "C"], ["--model", "C", "--model", "A"],
                   ["--model", " A ", "--model", "C"]):
        assert main(["export", "scores", "--db", db_url, *models]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] == outs[2]
    assert main(["export", "scores", "--db", db_url, "--model", "A"]) == 0
    only_a = capsys.readouterr().out
    assert main(["export", "scores", "--db", db_url]) == 0
    every = capsys.readouterr().out
    # The filter kept A and C, not B: more rows than A alone, fewer than all models.
    assert len(only_a.splitlines()) < len(outs[0].splitlines()) < len(every.splitlines())


def test_study_create_takes_either_spelling(db_url: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    build_study_data(db_url)
    outs = []
    for name, models in (("one", ["--models", "Alpha-7B,Beta-13B"]),
                         ("two", ["--model", "Alpha-7B", "--model", "Beta-13B"]),
                         ("three", ["--model", "Alpha-7B"])):
        assert main(["study", "create", "--name", name, "--pool", "silver", "--per-item", "1",
                     "--split", "test2", "--setting", "qa", "--mode", "st", *models,
                     "--db", db_url]) == 0
        outs.append(capsys.readouterr().out.splitlines()[0].replace(name, "NAME"))
    assert outs[0] == outs[1] != outs[2]


def test_no_bundled_model_name_holds_a_comma(bundled_sqlite: str) -> None:
    with reading(open_database(bundled_sqlite)) as session:
        names = {row["model"] for row in runs_per_model(session)}
    assert names and not [name for name in names if "," in name]
