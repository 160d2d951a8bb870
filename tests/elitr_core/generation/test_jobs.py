"""Background jobs: the command line built from options, a real detached process with its log,
and whether a process is still alive."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from elitr_core.errors import UserError
from elitr_core.generation import jobs


def test_build_command_from_options() -> None:
    argv = jobs.build_command("generate", {
        "backend": "openai", "max_new_tokens": 64, "resume": True, "dry_run": False,
        "seed": None, "note": "", "meeting": ("m1", "m2"), "temperature": 0.0,
    })
    assert argv == ["generate", "--backend", "openai", "--max-new-tokens", "64", "--resume",
                    "--meeting", "m1", "--meeting", "m2", "--temperature", "0.0"]
    assert jobs.build_command("judge", {}) == ["judge"]
    assert jobs.build_command("judge", {"model": []}) == ["judge"]



def test_a_backend_s_options_are_written_as_it_declares_them() -> None:
    """Its own flag (a switched-off default is ``--no-...``), nothing for the default."""
    assert jobs.build_command("generate", {
        "backend": "hf", "model_path": "/m", "use_chat_template": False, "batch_size": None,
        "truncation": "middle", "base_url": ""}) == [
        "generate", "--backend", "hf", "--model-path", "/m", "--no-chat-template",
        "--truncation", "middle"]
    assert jobs.build_command("judge", {"backend": "openai", "concurrency": 8, "timeout": 30.0,
                                        "base_url": "http://h:8000/v1"}) == [
        "judge", "--backend", "openai", "--timeout", "30.0", "--base-url", "http://h:8000/v1"]


def test_build_command_refuses() -> None:
    with pytest.raises(UserError, match="unknown job 'export'; use one of generate, judge"):
        jobs.build_command("export", {})
    for bad in ("Model", "a b", "--x", "x;rm", "1st"):
        with pytest.raises(UserError, match=f"bad option name {bad!r}"):
            jobs.build_command("judge", {bad: "v"})


def test_start_job_refuses_other_commands(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(jobs.LOG_DIR_ENV, str(tmp_path / "logs"))
    for argv in ([], ["export", "scores"], ["--help"]):
        with pytest.raises(UserError, match="a job runs one of: generate, judge"):
            jobs.start_job(argv)
    assert not (tmp_path / "logs").exists()


def _wait(job: jobs.Job, seconds: float = 60) -> int | None:
    deadline = time.monotonic() + seconds
    while jobs.process_alive(job.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return jobs.exit_code(job.pid)


def test_a_started_job_runs_detached_and_logs(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(jobs.LOG_DIR_ENV, str(tmp_path / "logs"))
    job = jobs.start_job(["generate", "--help"])
    # its own session and process group: a Ctrl-C or restart of the app does not reach it
    # (the child is not reaped before `_wait`, so its ids can be read even once it ended)
    assert os.getsid(job.pid) == job.pid != os.getsid(0)
    assert os.getpgid(job.pid) == job.pid
    assert job.argv == ["generate", "--help"]
    assert job.log_path.parent == tmp_path / "logs"
    assert job.log_path.name.startswith("generate-") and job.log_path.suffix == ".log"
    assert _wait(job) == 0
    log = job.log_path.read_text()
    assert log.startswith("$ python -m elitr_core generate --help\n")
    assert "usage:" in log and "--backend" in log
    assert not jobs.process_alive(job.pid)


def test_a_failing_job_logs_its_error_and_exit_status(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(jobs.LOG_DIR_ENV, str(tmp_path))
    first = jobs.start_job(["judge", "--no-such-option"])
    second = jobs.start_job(["judge", "--no-such-option"])
    assert first.log_path != second.log_path  # two jobs in the same second: two logs
    assert _wait(first) == 2 and _wait(second) == 2
    assert "error: the following arguments are required: --judge-model" in \
        first.log_path.read_text()  # stderr goes to the log too


def test_log_dir_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(jobs.LOG_DIR_ENV, raising=False)
    assert jobs.log_dir() == jobs.PROJECT_ROOT / "var" / "logs"


def test_process_alive() -> None:
    assert not jobs.process_alive(None) and not jobs.process_alive(0)
    assert jobs.process_alive(os.getpid())
    assert jobs.process_alive(1)  # exists (possibly owned by someone else)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # reaped: the id no longer exists
    assert not jobs.process_alive(gone.pid)
    assert jobs.exit_code(gone.pid) is None  # not one of the jobs' children


def test_a_zombie_counts_as_ended() -> None:
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])  # not one of the jobs' children
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            state = Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if state == "Z":
                break
            time.sleep(0.05)
        assert state == "Z"
        assert not jobs.process_alive(zombie.pid)
    finally:
        zombie.wait()


def test_log_tail(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text("$ -m elitr_core judge\n 10%|#\r 50%|#####\r100%|##########\n\n"
                   "done: 4 scored\n")
    assert jobs.log_tail(log, lines=2) == "100%|##########\ndone: 4 scored"
    assert jobs.log_tail(log).splitlines()[:2] == ["$ -m elitr_core judge", " 10%|#"]
    assert jobs.log_tail(tmp_path / "missing.log") == ""
