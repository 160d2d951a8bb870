"""Every boolean and number setting parsed in elitr_core/settings.py (issue 41, item 5): a value
a setting cannot take is one line naming the variable and the values accepted; never a silent
default, a crash at each login, or the opposite meaning."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from elitr_core import settings
from elitr_core.cli.main import main

ROOT = Path(__file__).resolve().parents[2]

#: (variable, what was written, the start of the one line that refuses it)
REFUSED = [
    ("ELITR_SESSION_HOURS", "nan", "ELITR_SESSION_HOURS='nan' is not a number of hours from "),
    ("ELITR_SESSION_HOURS", "abc", "ELITR_SESSION_HOURS='abc' is not a number of hours from "),
    ("ELITR_SESSION_HOURS", "-5", "ELITR_SESSION_HOURS='-5' is not a number of hours from "),
    ("ELITR_SESSION_HOURS", "inf", "ELITR_SESSION_HOURS='inf' is not a number of hours"),
    ("ELITR_SESSION_HOURS", "1e9", "ELITR_SESSION_HOURS='1e9' is not a number of hours"),
    ("ELITR_MIN_SCORES", "-1", "ELITR_MIN_SCORES='-1' is not a whole number of scores"),
    ("ELITR_MIN_SCORES", "2.5", "ELITR_MIN_SCORES='2.5' is not a whole number of scores"),
    ("ELITR_REPLICAS", "0", "ELITR_REPLICAS='0' is not a whole number of server replicas"),
    ("ELITR_REPLICAS", "two", "ELITR_REPLICAS='two' is not a whole number of server replicas"),
    ("ELITR_WARM", "maybe", "ELITR_WARM='maybe' is not a yes/no setting: write one of 1, true"),
    ("ELITR_DEBUG", "2", "ELITR_DEBUG='2' is not a yes/no setting"),
]
PARSERS = {"ELITR_SESSION_HOURS": settings.session_hours, "ELITR_MIN_SCORES": settings.min_scores,
           "ELITR_REPLICAS": settings.replicas, "ELITR_WARM": settings.warm,
           "ELITR_DEBUG": settings.debug}


@pytest.mark.parametrize("name,written,expected", REFUSED)
def test_a_value_a_setting_cannot_take_is_one_line(name: str, written: str, expected: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(name, written)
    with pytest.raises(settings.SettingError) as caught:
        PARSERS[name]()
    assert str(caught.value).startswith(expected) and "\n" not in str(caught.value)
    with pytest.raises(settings.SettingError):
        settings.check()


@pytest.mark.parametrize("name,written,value", [
    ("ELITR_WARM", "false", False), ("ELITR_WARM", " OFF ", False), ("ELITR_WARM", "no", False),
    ("ELITR_WARM", "0", False), ("ELITR_WARM", "on", True), ("ELITR_WARM", "", True),
    ("ELITR_DEBUG", "off", False), ("ELITR_DEBUG", "False", False), ("ELITR_DEBUG", "yes", True),
    ("ELITR_DEBUG", "1", True), ("ELITR_SESSION_HOURS", "0.5", 0.5),
    ("ELITR_SESSION_HOURS", "", 12.0), ("ELITR_MIN_SCORES", "0", 0),
    ("ELITR_REPLICAS", " 3 ", 3),
])
def test_values_are_read_as_written(name: str, written: str, value: object,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(name, written)
    assert PARSERS[name]() == value


def test_the_session_lifetime_and_the_cli_read_the_parsed_settings(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from elitr_core.annotation.sessions import session_lifetime
    from elitr_core.cli.boundary import debug_requested

    monkeypatch.setenv("ELITR_SESSION_HOURS", "0.5")
    assert session_lifetime() == timedelta(minutes=30)
    monkeypatch.setenv("ELITR_SESSION_HOURS", "-5")  # was 36 s
    with pytest.raises(settings.SettingError):
        session_lifetime()
    monkeypatch.setenv("ELITR_DEBUG", "off")  # turned debug on
    assert debug_requested([]) is False
    monkeypatch.setenv("ELITR_DEBUG", "maybe")
    assert main(["export", "leaderboard", "--db", "sqlite:///:memory:"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ELITR_DEBUG='maybe' is not a yes/no setting") and \
        err.count("\n") == 1, err


@pytest.mark.parametrize("name,written", [("ELITR_SESSION_HOURS", "nan"),
                                          ("ELITR_WARM", "maybe"),
                                          ("ELITR_MIN_SCORES", "abc")])
def test_the_server_does_not_start_on_a_bad_setting(name: str, written: str) -> None:
    done = subprocess.run([sys.executable, "-c", "import server"], cwd=ROOT,
                          env={**os.environ, "ELITR_WARM": "0", name: written},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: {name}={written!r} is not ") and "Traceback" not in \
        done.stderr, done.stderr


def test_a_reading_command_refuses_a_missing_database(db_url: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 41: a read-only command on a mistyped SQLite path created an empty database and
    exited 0; on PostgreSQL a database that does not exist is one line too."""
    if db_url.startswith("sqlite"):
        missing = tmp_path / "typo" / "elitr.db"
        url = f"sqlite:///{missing}"
        expected = f"the SQLite database {missing} does not exist: check --db"
    else:
        url = db_url.rsplit("/", 1)[0] + "/elitr_no_such_database"
        expected = "elitr_no_such_database"
    for command in (["export", "leaderboard"], ["export", "scores"], ["study", "status", "s"]):
        assert main([*command, "--db", url]) == 2, command
        err = capsys.readouterr().err
        assert expected in err and err.count("\n") == 1, (command, err)
    if db_url.startswith("sqlite"):
        assert not missing.parent.exists()  # neither the file nor its folder was made
