"""Fuzzing the importers with Hypothesis: the real bundled files, mutated.

Each example drops a key, changes a value's type, duplicates an entry, truncates the file,
nests it deeply, or flips bytes of a real archive, then imports it with the CLI. Every outcome
must be a clean import (exit 0) or one line ``error: ...`` with exit 2 and the database exactly
as before; an exception escaping ``main`` (a traceback) fails the test. Fixed seed
(``derandomize``) and bounded example counts keep it deterministic and well under a minute.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from db.engine import dispose_engines
from elitr_core.cli.main import main
from elitr_core.data.benchmark import DATA_DIR
from tests.bundled import bundled_json
from tests.dbstate import snapshot


def fuzz(examples: int) -> settings:
    """Fixed seed, bounded examples, no example database, no deadline (imports vary)."""
    return settings(derandomize=True, deadline=None, database=None, max_examples=examples,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])
RESPONSES = "elitr-bench-qa_dev_st_gpt-4-eval.json"
QUESTIONS = "elitr-bench-qa_dev.json"

#: Values a mutation puts in place of another: wrong types, edge numbers, odd text.
ODD_VALUES = st.sampled_from([
    None, True, False, 0, -5, 11, 1e308, float("inf"), "", " ", "²", "٣", "NaN", "1_0",
    "=HYPERLINK(\"x\")", [], {}, [1, 2], {"id": "1"}, "x" * 300,
])


def _real_file(archive: str, name: str) -> Any:
    """One real bundled file, parsed (the responses file cut to its first meeting so that an
    example imports in a fraction of a second)."""
    content = bundled_json(archive, "/" + name)
    if name == RESPONSES:
        content["meetings"] = content["meetings"][:1]
    return content


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path (keys and indexes) into a JSON tree."""
    yield prefix
    children = node.items() if isinstance(node, dict) else enumerate(node) \
        if isinstance(node, list) else ()
    for key, child in children:
        yield from _paths(child, (*prefix, key))


def _parent(tree: Any, path: tuple[Any, ...]) -> Any:
    for key in path[:-1]:
        tree = tree[key]
    return tree


@st.composite
def mutated_json(draw: st.DrawFn, content: Any) -> bytes:
    """The file with one to three mutations applied, serialised (and maybe truncated)."""
    tree = copy.deepcopy(content)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(tree) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent, key = _parent(tree, path), path[-1]
        action = draw(st.sampled_from(["drop", "retype", "duplicate", "nest"]))
        if action == "drop":
            del parent[key]
        elif action == "retype":
            parent[key] = draw(ODD_VALUES)
        elif action == "duplicate" and isinstance(parent, list):
            parent.insert(key, copy.deepcopy(parent[key]))
        elif action == "duplicate":
            parent[key] = [parent[key], copy.deepcopy(parent[key])]
        else:
            parent[key] = json.loads("[" * 40 + json.dumps(parent[key]) + "]" * 40)
    text = json.dumps(tree).encode()
    if draw(st.booleans()) and draw(st.integers(0, 9)) == 0:  # sometimes cut it short
        text = text[: draw(st.integers(0, len(text)))]
    if draw(st.integers(0, 19)) == 0:  # rarely: nested far deeper than Python recurses
        text = b"[" * 100_000 + text + b"]" * 100_000
    return text


@pytest.fixture(scope="module")
def fuzz_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small database: the real benchmark questions and the real responses file (cut), so
    that comparing the whole database before and after an example stays cheap."""
    path = tmp_path_factory.mktemp("fuzz") / "template.db"
    responses = tmp_path_factory.mktemp("fuzz-src") / RESPONSES
    responses.write_text(json.dumps(_real_file("generated-responses.zip", RESPONSES)))
    url = f"sqlite:///{path}"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["import", str(DATA_DIR / "data.zip"), str(responses), "--db", url]) == 0
    dispose_engines()
    return path


@pytest.fixture
def fuzz_db(fuzz_template: Path) -> Iterator[str]:
    """One database shared by the examples of a test (each refusal must leave it as it was;
    an accepted import changes it, and the next example compares against that)."""
    folder = Path(tempfile.mkdtemp(prefix="elitr-fuzz-"))
    shutil.copy(fuzz_template, folder / "fuzz.db")
    yield f"sqlite:///{folder / 'fuzz.db'}"
    dispose_engines()
    shutil.rmtree(folder)


def _import_and_check(db_url: str, path: Path) -> int:
    """Import ``path``: exit 0, or exit 2 with one error line and the database unchanged."""
    before = snapshot(db_url)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(["import", str(path), "--db", db_url])
    message = err.getvalue()
    assert status in (0, 2), message
    if status == 2:
        assert message.startswith("error: ") and message.count("\n") == 1, message
        assert "Traceback" not in message
        assert snapshot(db_url) == before, message
    return status


def _import_bytes(db_url: str, name: str, content: bytes) -> int:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(content)
        return _import_and_check(db_url, path)


@pytest.mark.parametrize(("archive", "name"), [("generated-responses.zip", RESPONSES),
                                               ("data.zip", QUESTIONS)])
@fuzz(20)
@given(data=st.data())
def test_mutated_json_files(fuzz_db: str, archive: str, name: str,
                            data: st.DataObject) -> None:
    _import_bytes(fuzz_db, name, data.draw(mutated_json(_real_file(archive, name))))


def _scores_csv(db_url: str) -> list[list[str]]:
    """The first rows of the real bundled scores, as the export writes them."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["export", "scores", "--db", db_url, "--split", "dev", "--setting", "qa",
                     "--mode", "st", "--model", "GPT-4"]) == 0
    import csv

    return list(csv.reader(io.StringIO(out.getvalue())))[:12]


@fuzz(20)
@given(data=st.data())
def test_mutated_scores_csv(fuzz_db: str, data: st.DataObject) -> None:
    import csv

    rows = copy.deepcopy(_scores_csv(fuzz_db))
    for _ in range(data.draw(st.integers(1, 3))):
        action = data.draw(st.sampled_from(["drop column", "cell", "duplicate", "cut row"]))
        line = data.draw(st.integers(1, len(rows) - 1))
        column = data.draw(st.integers(0, len(rows[0]) - 1))
        if action == "drop column":
            for row in rows:
                del row[min(column, len(row) - 1)]
        elif action == "cell":
            rows[line][min(column, len(rows[line]) - 1)] = str(data.draw(ODD_VALUES))
        elif action == "duplicate":
            rows.insert(line, list(rows[line]))
        else:
            rows[line] = rows[line][: column]
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    encoded = (b"\xef\xbb\xbf" if data.draw(st.booleans()) else b"") + text.getvalue().encode()
    _import_bytes(fuzz_db, "scores.csv", encoded)


@fuzz(10)
@given(data=st.data())
def test_damaged_archives(fuzz_db: str, data: st.DataObject) -> None:
    """The real (encrypted) data.zip with bytes flipped or cut off."""
    raw = bytearray((DATA_DIR / "data.zip").read_bytes())
    if data.draw(st.booleans()):
        raw = raw[: data.draw(st.integers(0, len(raw) - 1))]
    for _ in range(data.draw(st.integers(1, 4))):
        if raw:
            position = data.draw(st.integers(0, len(raw) - 1))
            raw[position] ^= data.draw(st.integers(1, 255))
    _import_bytes(fuzz_db, "data.zip", bytes(raw))
