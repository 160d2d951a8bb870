"""The input-validation layer on its own: paths, sizes, nesting, values, duplicates."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest

from elitr_core.data import validation
from elitr_core.data.benchmark import iter_archive
from elitr_core.errors import DataFileError
from tests.zipbomb import deflate_bomb


def test_a_zip_expanding_to_1_gb_is_refused_before_decompressing(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.zip"
    deflate_bomb(bomb, "elitr-bench-qa_dev.json", 1024)
    assert bomb.stat().st_size < 1_200_000  # a 1 MB file ...
    with zipfile.ZipFile(bomb) as archive:  # ... that zipfile reads as 1 GiB
        assert archive.infolist()[0].file_size == 1 << 30
    with pytest.raises(DataFileError, match="expands to 1,024 MB, more than the 64 MB"):
        list(iter_archive(bomb))


def test_a_zip_member_larger_than_declared_is_refused(tmp_path: Path) -> None:
    """The header says 1,000 bytes; the data expands to 8 MiB: refused, not read further."""
    bomb = tmp_path / "liar.zip"
    deflate_bomb(bomb, "elitr-bench-qa_dev.json", 8, declared=1000)
    with pytest.raises(DataFileError, match="liar.zip: damaged archive member"):
        list(iter_archive(bomb))


def test_archive_members_together_are_capped(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "many.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for i in range(3):
            archive.writestr(f"elitr-bench-qa_dev_st_m{i}.json", "x" * 400)
    monkeypatch.setattr("elitr_core.data.benchmark.MAX_ARCHIVE_BYTES", 1000)
    members = iter_archive(path)
    assert len(next(members)[1]) == 400 and len(next(members)[1]) == 400
    with pytest.raises(DataFileError, match="elitr-bench-qa_dev_st_m2.json expands to"):
        next(members)


def test_json_nested_100000_levels_is_refused_without_recursion() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(DataFileError, match="nested 100000 levels deep, more than the 32"):
        validation.load_json(deep, where="deep.json")


def test_json_depth_ignores_brackets_inside_strings() -> None:
    text = json.dumps({"a": [{"b": "[[[[{{{{ \" ]]"}]}).encode()
    assert validation.json_depth(text) == 3
    assert validation.load_json(text, where="x")["a"][0]["b"].startswith("[[[[")


def test_json_with_a_bom_is_read_and_nan_is_refused() -> None:
    assert validation.load_json(b"\xef\xbb\xbf[1]", where="x") == [1]
    with pytest.raises(DataFileError, match="malformed JSON: NaN is not valid JSON"):
        validation.load_json(b"[NaN]", where="x")


@pytest.mark.parametrize(("value", "expected"), [
    (7, 7.0), (6.8, 6.8), ("6.8", 6.8), (" 10 ", 10.0), ("1e0", 1.0),
])
def test_scores_accepted(value: object, expected: float) -> None:
    assert validation.parse_score(value, where="w", path="p") == expected


@pytest.mark.parametrize(("value", "problem"), [
    (True, "score True is not a number"), (False, "score False is not a number"),
    (None, "score None is not a number"), ([5], "score [5] is not a number"),
    ("1_0", "score '1_0' is not a number"), ("²", "score '²' is not a number"),
    ("nan", "score 'nan' is not a number"), (float("nan"), "score nan is outside 1..10"),
    (0, "score 0 is outside 1..10"), ("11", "score '11' is outside 1..10"),
])
def test_scores_refused(value: object, problem: str) -> None:
    with pytest.raises(DataFileError, match=f"p: w: {re.escape(problem)}"):
        validation.parse_score(value, where="w", path="p")


@pytest.mark.parametrize("value", ["²", "1.5", "", "1_000", True, 2.0, None, "٣"])
def test_ids_must_be_whole_ascii_numbers(value: object) -> None:
    with pytest.raises(DataFileError, match="is not a whole number"):
        validation.parse_whole(value, what="question id", where="w", path="p")


def test_whole_numbers_and_their_minimum() -> None:
    assert validation.parse_whole(" 12 ", what="id", where="w", path="p") == 12
    assert validation.parse_whole(3, what="id", where="w", path="p", minimum=0) == 3
    with pytest.raises(DataFileError, match="sample '-5' is below 0"):
        validation.parse_whole("-5", what="sample", where="w", path="p", minimum=0)


@pytest.mark.parametrize("value", ["", "   ", None, 5])
def test_slugs_must_be_non_empty_text(value: object) -> None:
    with pytest.raises(DataFileError, match="evaluator .* should be a non-empty text"):
        validation.parse_slug(value, what="evaluator", where="w", path="p")


def test_duplicates_name_the_key_and_both_places() -> None:
    entries = [("a", "line 2"), ("b", "line 3"), ("a", "line 7")]
    with pytest.raises(DataFileError, match=r"f.csv: key a appears twice \(line 2 and line 7\)"):
        validation.refuse_duplicates(entries, path="f.csv", describe=lambda k: f"key {k}")
    validation.refuse_duplicates(entries[:2], path="f.csv", describe=str)


def test_paths_that_are_not_readable_files(tmp_path: Path) -> None:
    (tmp_path / "folder").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "gone")
    cases = {"folder": "is a folder, not a file", "link": "dangling symbolic link",
             "absent": "no such file"}
    for name, problem in cases.items():
        with pytest.raises(DataFileError, match=problem):
            validation.read_bytes(tmp_path / name)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 2000)
    with pytest.raises(DataFileError, match="more than the"):
        validation.read_bytes(big, max_bytes=1000)
    assert validation.read_text(big, max_bytes=2000) == " " * 2000


def test_the_streaming_depth_scan_agrees_with_the_structure(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """Issue 27 item 4: the chunked scan that replaced the regular expression for large texts
    gives every valid document's true depth, whatever the chunk boundaries cut (escaped
    quotes, backslash runs and brackets inside strings across chunks)."""
    import json
    import random

    from elitr_core.data import validation

    rng = random.Random(27)

    def build(level: int) -> object:
        roll = rng.random()
        if level > 8 or roll < 0.3:
            return "".join(rng.choice('[]{}"\\ab\n') for _ in range(rng.randint(0, 8)))
        if roll < 0.65:
            return [build(level + 1) for _ in range(rng.randint(0, 3))]
        return {str(build(9)): build(level + 1) for _ in range(rng.randint(0, 3))}

    def depth(value: object) -> int:
        items = value if isinstance(value, list) else \
            list(value.values()) if isinstance(value, dict) else None
        return 0 if items is None else 1 + max(map(depth, items), default=0)

    for _ in range(1500):
        document = build(0)
        data = json.dumps(document, ensure_ascii=rng.random() < 0.5).encode()
        monkeypatch.setattr(validation, "_SCAN_CHUNK", rng.choice([1, 2, 3, 5, 8, 64, 4096]))
        assert validation._scan_depth(data).deepest == depth(document), data
