"""The test tiers (tests/tiers.py, issue 38): set from what a test uses, and a test that starts
a costly thing outside its tier fails the collection (or, for a command built at run time, the
test itself). Each case is a test file made in tmp_path and collected or run by a real pytest in
a subprocess, with the suite's own conftest."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.tiers import ROOT

CONFTEST = """from tests.conftest import *  # noqa: F403 - the suite's hooks and fixtures
from tests.tiers import TIERS


def pytest_collection_finish(session):
    for item in session.items:
        tiers = sorted(m.name for m in item.iter_markers() if m.name in TIERS)
        print("TIERS", item.nodeid, ",".join(tiers))
"""

#: starts what only a tier may start, and is not marked: each must fail the collection
OFFENDERS = {
    "test_streamlit_direct.py": """
        import subprocess, sys

        def test_starts_the_app():
            subprocess.run([sys.executable, "-m", "streamlit", "run", "server.py"])
        """,
    "test_through_a_helper.py": """
        import shutil
        from subprocess import Popen

        def _proxy(conf):
            return Popen([shutil.which("nginx") or "/usr/sbin/nginx", "-c", conf])

        class Harness:
            def start(self):
                return _proxy("x.conf")

        def test_behind_a_proxy():
            Harness().start()
        """,
    "test_a_constant_command.py": """
        import asyncio

        BROWSER = ["/usr/bin/chromium", "--headless"]

        def test_opens_a_browser():
            asyncio.run(asyncio.create_subprocess_exec(*BROWSER))
        """,
    "test_model_cli.py": """
        import subprocess, sys

        def test_lm_eval():
            subprocess.run([sys.executable, "-m", "lm_eval", "--model", "hf"])
        """,
}

#: start the same things in a way the tiers know: each collects, in its tier
KNOWN = {
    "test_marked.py": """
        import subprocess, sys
        import pytest

        @pytest.mark.server
        def test_starts_the_app_marked():
            subprocess.run([sys.executable, "-m", "streamlit", "run", "server.py"])
        """,
    "test_helpers.py": """
        from tests.browser.conftest import running_server
        from tests.conftest import pg_database

        def _app(url, log):
            with running_server(url, log) as base:
                return base

        def test_app_through_the_registered_helper(tmp_path):
            _app("sqlite://", tmp_path / "log")

        def test_a_database_of_its_own():
            with pg_database() as url:
                assert url

        def test_nothing_costly(db_url):
            assert db_url

        def test_a_model():
            from tests.elitr_core.backends.smollm2 import smollm2_dir
            smollm2_dir()
        """,
}


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "DATABASE_URL_TEST": "postgresql://postgres@127.0.0.1:1/x"}  # never connected
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "-p", "no:randomly", "--rootdir", str(folder), *args], cwd=folder,
                          env=env, capture_output=True, text=True, timeout=300)


def _write(folder: Path, files: dict[str, str]) -> None:
    folder.mkdir()
    (folder / "conftest.py").write_text(CONFTEST)
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text))


def test_a_test_starting_a_tier_s_program_unmarked_fails_the_collection(tmp_path: Path) -> None:
    _write(tmp_path / "t", {**OFFENDERS, **KNOWN})
    done = _pytest(tmp_path / "t", "--collect-only", "-q")
    assert done.returncode != 0, done.stdout
    out = done.stdout + done.stderr
    assert "Traceback" not in out, out
    for test, program, tier in (("test_starts_the_app", "streamlit", "server"),
                                ("test_behind_a_proxy", "nginx", "server"),
                                ("test_opens_a_browser", "chromium", "browser"),
                                ("test_lm_eval", "lm_eval", "model")):
        line = next((x for x in out.splitlines() if f"::{test}:" in x), None)
        assert line is not None, out
        assert re.search(rf"starts '[^']*{program}', which belongs to the '{tier}' tier, but "
                         rf"the test is not marked {tier}: ", line), line
    problems = [line for line in out.splitlines() if "which belongs to the" in line]
    assert len(problems) == 4, out
    # the line named is the command's
    assert "test_through_a_helper.py:6 starts '" in out, out


def test_tiers_come_from_fixtures_helpers_and_legs(tmp_path: Path) -> None:
    _write(tmp_path / "t", KNOWN)
    done = _pytest(tmp_path / "t", "--collect-only", "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    tiers = dict(line.split(" ")[1:] for line in done.stdout.splitlines()
                 if line.startswith("TIERS "))
    assert tiers == {
        "test_marked.py::test_starts_the_app_marked": "server",
        "test_helpers.py::test_app_through_the_registered_helper": "server",
        "test_helpers.py::test_a_database_of_its_own": "postgres",
        "test_helpers.py::test_nothing_costly[sqlite]": "",  # the quick tier
        "test_helpers.py::test_nothing_costly[postgresql]": "postgres",
        "test_helpers.py::test_a_model": "model",
    }


def test_a_command_built_at_run_time_fails_its_test(tmp_path: Path) -> None:
    """What reading the code cannot see (the program's name built at run time) is refused when
    it starts, before anything runs; the same command in a marked test is let through."""
    _write(tmp_path / "t", {"test_sly.py": """
        import subprocess
        import pytest

        def _command():
            return ["/usr/bin/" + "chro" + "mium", "--version"]

        def test_hidden_browser():
            try:
                subprocess.run(_command(), capture_output=True, timeout=60)
            except FileNotFoundError:
                pass

        @pytest.mark.browser
        def test_marked_browser():
            try:
                subprocess.run(_command(), capture_output=True, timeout=60)
            except FileNotFoundError:
                pass
        """})
    done = _pytest(tmp_path / "t", "-q", "-rf")
    assert done.returncode == 1, done.stdout
    assert "1 failed, 1 passed" in done.stdout, done.stdout
    assert ("test_sly.py::test_hidden_browser starts '/usr/bin/chromium', which belongs to "
            "the 'browser' tier, but the test is not marked browser") in done.stdout, done.stdout
