"""The readers parse ids and numbers only through ``elitr_core.data.strict`` (beside
tests/test_architecture.py's SQL check, the same kind of check for issue 39's no-last-wins rule).

``str.isdigit``/``isdecimal``/``isnumeric``, a regex ``\\d`` and ``int()``/``float()`` all accept
full-width and Arabic-Indic digits, so ``q１`` and ``q1``, or score keys ``"١"`` and ``"1"``,
would read as one question and the last one would win. In the readers (every module of
``elitr_core/data`` and ``elitr_core/integrations``, and the scorers' writers) none of them
appears outside ``strict.py``, but for the conversions listed in :data:`ALLOWED`, each of a
value that is no text a file holds.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from tests.test_architecture import docstring_ids

ROOT = Path(__file__).resolve().parents[1]
READERS = ("elitr_core/data", "elitr_core/integrations")
SHARED = "elitr_core/data/strict.py"
#: (file, function) -> why its int()/float() reads no text of a file.
ALLOWED = {
    ("elitr_core/data/bounds.py", "string_length"): "a column's length from the schema",
    ("elitr_core/data/validation.py", "feed"): "numpy counts of brackets",
    ("elitr_core/data/validation.py", "parse_score"): "a JSON number (text: strict)",
    ("elitr_core/data/fields.py", "score_number"): "a JSON integer (text: strict)",
    ("elitr_core/integrations/inspect_task.py", "score"): "the NaN of an unscored sample",
}
_DIGIT_CLASS = re.compile(r"(?<!\\)\\d")
_DIGIT_METHODS = {"isdigit", "isdecimal", "isnumeric"}


def offences(path: Path, relative: str) -> Iterator[str]:
    """Each place of ``path`` that reads digits another way than ``strict``'s."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    docstrings = docstring_ids(tree)
    for node in ast.walk(tree):
        where = f"{relative}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and _DIGIT_CLASS.search(node.value) and id(node) not in docstrings:
            yield f"{where}: a \\d"
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _DIGIT_METHODS:
            yield f"{where}: .{func.attr}()"
        if isinstance(func, ast.Name) and func.id in ("int", "float") and node.args \
                and not isinstance(node.args[0], ast.Constant) \
                and (relative, _innermost(node, tree)) not in ALLOWED:
            yield f"{where}: {func.id}(...)"


def _innermost(node: ast.AST, tree: ast.AST) -> str:
    """The name of the innermost function holding ``node``."""
    found = ""
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) and any(
                child is node for child in ast.walk(function)):
            found = function.name  # later matches are nested deeper
    return found


def test_readers_read_digits_only_through_the_shared_module() -> None:
    found = [offence for folder in READERS for path in sorted((ROOT / folder).rglob("*.py"))
             if (relative := path.relative_to(ROOT).as_posix()) != SHARED
             for offence in offences(path, relative)]
    assert not found, "read ids and numbers with elitr_core.data.strict:\n" + "\n".join(found)


def test_the_digit_check_sees_each_way(tmp_path: Path) -> None:
    source = tmp_path / "reader.py"
    source.write_text('"""Reads \\\\d in a docstring: fine."""\nimport re\n'
                      'ID = re.compile(r"q(\\d+)")\n'
                      "def read(key):\n    if key.isdigit():\n        return int(key)\n"
                      "    return float(key) if key.isnumeric() else int('3')\n")
    assert list(offences(source, "reader.py")) == [
        "reader.py:3: a \\d", "reader.py:5: .isdigit()", "reader.py:6: int(...)",
        "reader.py:7: .isnumeric()", "reader.py:7: float(...)"]


def test_the_scorers_writers_get_their_evaluator_from_the_one_gate() -> None:
    """Every writer of scores asks ``db.evaluators.evaluator_for`` (or ``annotator_pool`` for a
    pool, which holds no score) for its evaluator: no module of the core upserts one."""
    found = [f"{path.relative_to(ROOT)}" for path in sorted((ROOT / "elitr_core").rglob("*.py"))
             if "upsert_evaluator" in path.read_text(encoding="utf-8")]
    assert not found, found
