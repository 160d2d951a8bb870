"""Background CLI jobs started from the dashboard: build the command line, start it detached.

A job is ``python -m elitr_core generate|judge ...`` in its own session
(``start_new_session=True``), so it survives a Streamlit rerun or restart; its stdout and stderr
(progress bar, summary, errors) go to a log file under ``var/logs/`` (``ELITR_LOG_DIR``
overrides). The job inherits the app's environment, so it writes to the app's database
(``DATABASE_URL``) and reads API keys from the variables the user named.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elitr_core import settings
from elitr_core.backends.registry import backend_class
from elitr_core.errors import UserError

PROJECT_ROOT = Path(__file__).resolve().parents[2]
LOG_DIR_ENV = settings.LOG_DIR
COMMANDS: tuple[str, ...] = ("generate", "judge")
_FLAG_RE = re.compile(r"^[a-z][a-z0-9-]*$")
#: Children started by this process: polling them reaps them (no zombies left behind).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


@dataclass(frozen=True)
class Job:
    """A started background command."""

    pid: int
    argv: list[str]
    log_path: Path


#: the last job started, kept beside the logs: a reload or another tab shows it too
LAST_JOB_FILE = "last-job.json"


def log_dir() -> Path:
    """Where job logs go: ``$ELITR_LOG_DIR`` or ``var/logs/`` of the project."""
    return Path(settings.value(LOG_DIR_ENV) or PROJECT_ROOT / "var" / "logs")


def build_command(command: str, options: Mapping[str, Any]) -> list[str]:
    """The CLI arguments of ``command`` from option names and values.

    ``True`` gives a bare flag, ``False``, ``None`` and ``""`` are left out, a list or tuple
    repeats the option, anything else becomes ``--name value``; ``under_scores`` become
    ``--under-scores``. An option the chosen ``backend`` declares is written as its
    declaration says (:meth:`~elitr_core.backends.base.BackendOption.argv`: its own flag, and
    nothing for its default).

    Examples
    --------
    >>> build_command("judge", {"style": "gpt4", "samples": 2, "model": ["A", "B"]})
    ['judge', '--style', 'gpt4', '--samples', '2', '--model', 'A', '--model', 'B']
    """
    if command not in COMMANDS:
        raise UserError(f"unknown job {command!r}; use one of {', '.join(COMMANDS)}")
    argv = [command]
    declared = ({option.name: option for option in backend_class(str(options["backend"])).options}
                if options.get("backend") else {})
    for name, value in options.items():
        flag = name.replace("_", "-")
        if not _FLAG_RE.match(flag):
            raise UserError(f"bad option name {name!r}")
        if name in declared:
            argv += declared[name].argv(value)
            continue
        if value is None or value is False or value == "":
            continue
        if value is True:
            argv.append(f"--{flag}")
        elif isinstance(value, list | tuple):
            for item in value:
                argv += [f"--{flag}", str(item)]
        else:
            argv += [f"--{flag}", str(value)]
    return argv


def start_job(argv: list[str], *, env: Mapping[str, str] | None = None) -> Job:
    """Start ``python -m elitr_core ARGV`` detached, logging to a new file; return the job."""
    if not argv or argv[0] not in COMMANDS:
        raise UserError(f"a job runs one of: {', '.join(COMMANDS)}")
    folder = log_dir()
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    log_path = folder / f"{argv[0]}-{stamp}-{os.getpid()}-{len(_CHILDREN)}.log"
    command = [sys.executable, "-m", "elitr_core", *argv]
    with log_path.open("wb") as log:
        # the command as one types it, not the interpreter's path
        log.write(("$ python -m elitr_core " + shlex.join(argv) + "\n").encode())
        log.flush()
        process = subprocess.Popen(
            command, cwd=PROJECT_ROOT, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, env=dict(env) if env is not None else None,
            start_new_session=True,  # survives the app's rerun/shutdown and its Ctrl-C
        )
    _CHILDREN[process.pid] = process
    job = Job(pid=process.pid, argv=argv, log_path=log_path)
    _save_last_job(job)
    return job


def _save_last_job(job: Job) -> None:
    """Keep ``job`` as the last one started (written whole: a reader never sees half)."""
    path = log_dir() / LAST_JOB_FILE
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps({"pid": job.pid, "argv": job.argv,
                                   "log_path": str(job.log_path)}), encoding="utf-8")
    partial.replace(path)


def last_job() -> Job | None:
    """The last job started from the dashboard (by any session or tab), or None."""
    try:
        record = json.loads((log_dir() / LAST_JOB_FILE).read_text(encoding="utf-8"))
        return Job(pid=int(record["pid"]), argv=[str(a) for a in record["argv"]],
                   log_path=Path(record["log_path"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def process_alive(pid: int | None) -> bool:
    """Whether a process with this id is running on this machine (zombies count as ended)."""
    if not pid:
        return False
    child = _CHILDREN.get(pid)
    if child is not None:
        return child.poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    try:  # a zombie still answers kill(0); /proc tells (Linux only)
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


def exit_code(pid: int) -> int | None:
    """A child's exit status once it ended (None while running or when unknown)."""
    child = _CHILDREN.get(pid)
    return None if child is None else child.poll()


#: How much of a log's end :func:`log_tail` reads.
LOG_TAIL_BYTES = 64 * 1024


def log_tail(path: Path, lines: int = 20) -> str:
    """The last lines of a log (progress-bar carriage returns turned into line ends)."""
    from elitr_core.data.bounded import read_tail

    # the end of the log only: a run of hours writes megabytes, and this runs at each rerun
    text = read_tail(path, LOG_TAIL_BYTES).decode("utf-8", errors="replace")
    rows = [row for row in text.replace("\r", "\n").splitlines() if row.strip()]
    return "\n".join(rows[-lines:])


#: the Runs form's last values, kept beside the logs: a reload starts from them
LAST_FORM_FILE = "last-form.json"
_FORM_SCALARS = (str, int, float, bool, type(None))


def save_form(values: Mapping[str, Any]) -> None:
    """Keep the Runs form's field values (field key -> a string, number, bool or None; others
    are left out) so that a reload or a new tab starts from them. Written whole, never half;
    a folder that cannot be written keeps nothing (the form works without it)."""
    kept = {key: value for key, value in values.items() if isinstance(value, _FORM_SCALARS)}
    path = log_dir() / LAST_FORM_FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(kept), encoding="utf-8")
        partial.replace(path)
    except OSError:
        return


def last_form() -> dict[str, Any]:
    """The Runs form's values as last kept by :func:`save_form` (``{}`` when none)."""
    try:
        record = json.loads((log_dir() / LAST_FORM_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(record, dict):
        return {}
    return {str(k): v for k, v in record.items() if isinstance(v, _FORM_SCALARS)}
