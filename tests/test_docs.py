"""The README and the guides in docs/ point at things that exist.

Every relative link (and its #anchor) names a file and heading that exist; every
``python -m elitr_core`` command quoted names a real command, sub-command, export table and
options; every ``make`` target is the Makefile's; every repository path quoted in backticks
(``bench/bench_pages.py``, ``tests/...``) is there.
"""

from __future__ import annotations

import argparse
import fnmatch
import re
import shlex
from pathlib import Path

import pytest

from elitr_core.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`([^`]+)`")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
# a quoted repository path: a folder and a file name with one of these endings
REPO_PATH = re.compile(r"^[\w.-]+(?:/[\w.*-]+)+\.(?:py|md|txt|toml|ini|cfg|sh|json|zip)$")
# paths that the reader creates (not in the repository)
CREATED_BY_USER = {".streamlit/secrets.toml"}


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return {_slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.M)}


def _texts() -> list[tuple[Path, str]]:
    return [(path, path.read_text(encoding="utf-8")) for path in DOCS]


def _commands(text: str) -> list[str]:
    """Every quoted ``python -m elitr_core ...`` command: code spans and fenced lines, with
    a line continued by a backslash joined, each cut at a comment."""
    found: list[str] = []
    for block in FENCE.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            found.append(line.split(" #")[0])
    for span in CODE_SPAN.findall(FENCE.sub("", text)):
        found.append(" ".join(span.split()))
    out = []
    names = set(_subparsers(build_parser()))
    for item in found:
        item = item.replace("\\|", "|")
        at = item.find("python -m elitr_core")
        if at >= 0:
            out.append(item[at + len("python -m elitr_core"):].strip())
        elif item.split(" ")[0] in names and " " in item and "=" not in item.split(" ")[1]:
            # `export icc`, `study create ...` (not the shell's `export NAME=value`)
            out.append(item)
    return out


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {flag for action in parser._actions for flag in action.option_strings}


def _choices(parser: argparse.ArgumentParser, dest: str) -> set[str]:
    for action in parser._actions:
        if action.dest == dest and action.choices:
            return set(action.choices)
    return set()


def test_every_doc_is_read() -> None:
    names = {path.name for path in DOCS}
    for guide in ("crowd-study.md", "generation-and-judging.md", "judge-audit.md",
                  "pairwise-battles.md", "deployment.md", "security.md", "benchmarks.md"):
        assert guide in names


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_relative_links_exist(path: Path) -> None:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target):  # https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        where = (path.parent / file_part).resolve() if file_part else path
        if not where.exists():
            broken.append(f"{target}: no such file")
        elif anchor and where.suffix == ".md" and anchor not in _anchors(where):
            broken.append(f"{target}: no heading #{anchor} in {where.name}")
    assert not broken, f"{path.name}: {broken}"


def test_quoted_commands_exist() -> None:
    parser = build_parser()
    commands = _subparsers(parser)
    wrong = []
    for path, text in _texts():
        for command in _commands(text):
            bare = re.sub(r"[\[\]]", " ", command.replace("...", ""))
            words = [w for w in shlex.split(bare, posix=True) if w != "|"]
            if not words:
                continue
            name = words[0].rstrip(",")
            if name.startswith("-"):
                if name not in _options(parser) and name != "--help":
                    wrong.append(f"{path.name}: {command!r}")
                continue
            sub = commands.get(name)
            if sub is None:
                wrong.append(f"{path.name}: no command {name!r} in {command!r}")
                continue
            nested = _subparsers(sub)
            if nested and len(words) > 1 and not words[1].startswith("-"):
                for part in words[1].split("/"):
                    if part not in nested:
                        wrong.append(f"{path.name}: no command {name} {part!r}")
                sub = nested.get(words[1].split("/")[0], sub)
            if name == "export" and len(words) > 1 and not words[1].isupper():  # TABLE, NAME
                for table in words[1].split("|"):
                    if not fnmatch.filter(_choices(sub, "table"), table):  # `export ppi*`
                        wrong.append(f"{path.name}: no export table {table!r}")
            options = _options(sub)
            for word in words[1:]:
                flag = word.split("=")[0]
                if flag.startswith("--") and flag not in options:
                    wrong.append(f"{path.name}: {name} has no option {flag} ({command!r})")
    assert not wrong, "\n".join(wrong)


def test_quoted_make_targets_exist() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([\w-]+):", makefile, re.M))
    wrong = []
    for path, text in _texts():
        quoted = CODE_SPAN.findall(FENCE.sub("", text)) + FENCE.findall(text)
        for target in re.findall(r"(?<![\w/.-])make ([a-z][\w-]*)", "\n".join(quoted)):
            if target not in targets:
                wrong.append(f"{path.name}: make {target}")
    assert not wrong, wrong


def test_quoted_repository_paths_exist() -> None:
    wrong = []
    for path, text in _texts():
        spans = CODE_SPAN.findall(FENCE.sub("", text))
        spans += [w for block in FENCE.findall(text) for w in block.split()]
        for span in spans:
            for word in span.split():
                word = word.strip("(),;:")
                if (REPO_PATH.match(word) and word not in CREATED_BY_USER
                        and not word.startswith(("~", "/", "var/"))
                        and not list(ROOT.glob(word.replace("DATE", "*")))):
                    wrong.append(f"{path.name}: {word}")
    assert not wrong, wrong
