"""The installed command (issue 43, item 1): ``pip install --no-deps -e .`` (what ``make
setup`` runs) gives a venv an ``elitr`` script that works from any folder and runs this tree's
code; without the project's dependencies, a command says to run it inside the project's
environment instead of "This is a bug".

The install goes into a venv of the test's own (tmp_path), never the shared one, so it can
point at the tree under test without shadowing another checkout's code."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    """A venv holding only the project, installed editable from this tree. While installing
    it reads this interpreter's packages (pip and setuptools, offline) through a .pth file,
    removed afterwards: what is left is the project alone."""
    root = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    purelib = Path(subprocess.run(
        [str(root / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path("
         "'purelib'))"], check=True, capture_output=True, text=True).stdout.strip())
    bridge = purelib / "_borrowed.pth"
    bridge.write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run([str(root / "bin" / "python"), "-m", "pip", "install", "--quiet",
                    "--no-deps", "--no-build-isolation", "--no-index", "-e", str(REPO)],
                   check=True, cwd=tmp_path, capture_output=True)
    bridge.unlink()
    return root


def _elitr(venv: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(venv / "bin" / "elitr"), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env={"PATH": "/usr/bin:/bin"})


def test_elitr_runs_from_any_folder_and_names_a_missing_dependency(venv: Path,
                                                                   tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shown = _elitr(venv, elsewhere, "--help")
    assert shown.returncode == 0, shown.stderr
    assert "usage:" in shown.stdout and "export" in shown.stdout
    where = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import elitr_core; print(elitr_core.__file__)"], cwd=elsewhere,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where) == REPO / "elitr_core" / "__init__.py"  # this tree's code runs
    failed = _elitr(venv, elsewhere, "export", "runs")  # needs sqlalchemy, not installed here
    assert failed.returncode == 2
    assert failed.stderr.count("\n") == 1 and "Traceback" not in failed.stderr
    assert failed.stderr == (
        f"error: the Python package 'sqlalchemy' is not installed in {venv}: run it inside "
        "the project's environment (make setup, then .venv/bin/elitr, or source "
        ".venv/bin/activate), or install requirements.txt there\n")
    assert "bug" not in failed.stderr
