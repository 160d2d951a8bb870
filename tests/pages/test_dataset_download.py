"""Home's "Dataset (Hugging Face, zip)" download (issue 43): a ZIP of exactly the folder
``python -m elitr_core export dataset DIR`` writes, the same file names and the same bytes,
rendered only when clicked. On both databases."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from elitr_core.cli.main import main
from tests.pages.analysis_support import analysis_app, download_bytes


def cli_dataset(db_url: str, folder: Path) -> dict[str, bytes]:
    """What ``export dataset FOLDER`` writes: file name -> bytes."""
    assert main(["export", "dataset", str(folder), "--db", db_url]) == 0
    return {path.name: path.read_bytes() for path in folder.iterdir()}


def zip_members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_home_dataset_zip_is_the_cli_folder(bundled_db: str, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    at = analysis_app(bundled_db, monkeypatch).run()
    assert not at.exception
    button = at.download_button(key="download.dataset")
    assert button.proto.label == "Dataset (Hugging Face, zip)"
    assert button.proto.deferred_file_id  # rendered when clicked, not on every run
    members = zip_members(download_bytes(at, "download.dataset"))
    folder = cli_dataset(bundled_db, tmp_path / "dataset")
    assert {"scores.parquet", "README.md"} <= set(folder)
    assert sorted(members) == sorted(folder)
    for name, data in folder.items():
        assert members[name] == data, name

