"""A real Label Studio server for the round-trip test, and the calls a lab makes to it.

:func:`label_studio_server` starts ``label-studio start`` from its own virtualenv
(``.venv-labelstudio``, made by ``make label-studio`` from ``requirements-labelstudio.txt``: its
pins clash with the project's) on a free loopback port, with its own data folder and SQLite
database, the first user made by the command line (``--username``, ``--password``,
``--user-token``). Everything else goes through its HTTP API as a lab's script would: projects,
task import, a second annotator who signs up through the organisation's invite link and takes
their own token, annotations, and the project's JSON export. No outside address is reached
(Label Studio's version check is turned off).
"""

from __future__ import annotations

import http.cookiejar
import json
import os
import secrets
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.workers import answers, free_port

ROOT = Path(__file__).resolve().parents[1]
LS_VENV = ROOT / ".venv-labelstudio"
PROGRAM = LS_VENV / "bin" / "label-studio"
#: its data folder with the database migrated, made once by ``make label-studio``: each start
#: takes a copy (a start that migrated a new database used 52 CPU-s on the 2 cores, 46 of them
#: migrating; one on the copy, 6)
MIGRATED = LS_VENV / "migrated" / "data"
#: how long a start may take (a first start that migrated took 192 s at load 8-12, 1,074 s at
#: load 15-17, niced; on the migrated copy it checks the migrations only)
START_TIMEOUT_S = 1500
ADMIN = "admin@example.com"


@dataclass
class LabelStudio:
    """A running server: its URL, the first user's token, and how long it took to start."""

    url: str
    token: str
    start_s: float

    def call(self, method: str, path: str, body: Any = None, *, token: str | None = None,
             raw: bool = False) -> Any:
        """One API call (JSON in and out; ``raw``: the body's bytes); an HTTP error fails
        the test with its status and body."""
        request = urllib.request.Request(
            self.url + path, method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Token {token or self.token}",
                     "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                data = response.read()
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"{method} {path}: {exc.code} {exc.read()[:2000]!r}") from None
        return data if raw else json.loads(data or b"null")

    def sign_up(self, email: str, password: str) -> tuple[int, str]:
        """A second member of the organisation, signed up through its invite link as a person
        would (the sign-up form); their user id and API token."""
        invite = self.call("GET", "/api/invite")["invite_url"]
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        opener.open(self.url + invite, timeout=60).read()
        csrf = next(c.value for c in jar if c.name == "csrftoken")
        form = urllib.parse.urlencode({"csrfmiddlewaretoken": csrf, "email": email,
                                       "password": password}).encode()
        opener.open(urllib.request.Request(self.url + invite, data=form,
                                           headers={"Referer": self.url + invite}),
                    timeout=60).read()
        with opener.open(self.url + "/api/current-user/token", timeout=60) as response:
            token = json.loads(response.read())["token"]
        return int(self.call("GET", "/api/current-user/whoami", token=token)["id"]), token

    def project(self, title: str, config: str) -> int:
        """A new project with this labelling config; its id."""
        return int(self.call("POST", "/api/projects", {"title": title,
                                                       "label_config": config})["id"])

    def import_tasks(self, project: int, tasks: list[dict[str, Any]]) -> int:
        """Import tasks (a tasks.json's list); how many the server says it made."""
        return int(self.call("POST", f"/api/projects/{project}/import", tasks)["task_count"])

    def tasks(self, project: int) -> list[dict[str, Any]]:
        """The project's tasks, in id order."""
        found: list[dict[str, Any]] = []
        page = 1
        while True:
            batch = self.call("GET", f"/api/tasks?project={project}&page={page}&page_size=100")
            found += batch["tasks"]
            if len(found) >= batch["total"] or not batch["tasks"]:
                return sorted(found, key=lambda t: t["id"])
            page += 1

    def annotate(self, task: int, result: list[dict[str, Any]], *, token: str | None = None,
                 **fields: Any) -> int:
        """Submit an annotation of ``task`` as the token's user; its id."""
        return int(self.call("POST", f"/api/tasks/{task}/annotations/",
                             {"result": result, **fields}, token=token)["id"])

    def export(self, project: int, kind: str = "JSON") -> bytes:
        """The project's export in Label Studio's ``kind`` format, as its API gives it."""
        return bytes(self.call("GET", f"/api/projects/{project}/export?exportType={kind}",
                               raw=True))


def choice(value: str, control: str = "score", to: str = "response") -> dict[str, Any]:
    """A choices result, as Label Studio's editor submits it."""
    return {"from_name": control, "to_name": to, "type": "choices",
            "value": {"choices": [value]}}


def comment(text: str) -> dict[str, Any]:
    """A text-area result."""
    return {"from_name": "comment", "to_name": "response", "type": "textarea",
            "value": {"text": [text]}}


def environment(folder: Path) -> dict[str, str]:
    """Label Studio's environment for its data folder ``folder / "data"``: offline (no version
    check, no analytics), its own SQLite database, never the project's ``DATABASE_URL``. The
    migration (:func:`migrate`) and every start use it, so a start finds the database it
    expects."""
    env = {**os.environ, "HOME": str(folder), "LATEST_VERSION_CHECK": "false",
           "COLLECT_ANALYTICS": "false", "LABEL_STUDIO_BASE_DATA_DIR": str(folder / "data"),
           "DJANGO_DB": "sqlite", "SECRET_KEY": secrets.token_hex(32)}
    env.pop("DATABASE_URL", None)
    return env


def migrate(folder: Path) -> int:
    """Make ``folder / "data"`` (what :data:`MIGRATED` names for ``make label-studio``) with
    Label Studio's database migrated: ``label-studio version`` applies the migrations before
    printing, as ``start`` does first. Returns its exit status; on a failure, prints the end of
    its log."""
    folder.mkdir(parents=True, exist_ok=True)
    log_path = folder / "migrate.log"
    with log_path.open("w") as log:
        code = subprocess.call([str(PROGRAM), "version", "--data-dir", str(folder / "data")],
                               cwd=folder, env=environment(folder), stdout=log,
                               stderr=subprocess.STDOUT)
    if code:
        print("\n".join(log_path.read_text().splitlines()[-20:]))
    return code


@contextmanager
def label_studio_server(folder: Path) -> Iterator[LabelStudio]:
    """``label-studio start`` on a free loopback port with its own data folder and SQLite
    database under ``folder``; yields the server once it answers ``/health``."""
    if not PROGRAM.exists() or not (MIGRATED / "label_studio.sqlite3").is_file():
        raise AssertionError(f"{PROGRAM} or its migrated database {MIGRATED} is missing: run "
                             "`make label-studio` (installs Label Studio into .venv-labelstudio "
                             "from requirements-labelstudio.txt and migrates its database once)")
    shutil.copytree(MIGRATED, folder / "data")
    port = free_port()
    token = secrets.token_hex(20)
    env = environment(folder)
    log_path = folder / "label-studio.log"
    started = time.monotonic()
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [str(PROGRAM), "start", "--no-browser", "--data-dir", str(folder / "data"),
             "--internal-host", "127.0.0.1", "--port", str(port), "--username", ADMIN,
             "--password", secrets.token_hex(12), "--user-token", token,
             "--enable-legacy-api-token", "--log-level", "WARNING"],
            cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            _wait(url, process, log_path, started)
            yield LabelStudio(url, token, time.monotonic() - started)
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)


def _wait(url: str, process: subprocess.Popen[bytes], log_path: Path, started: float) -> None:
    if answers(f"{url}/health", START_TIMEOUT_S - (time.monotonic() - started),
               alive=lambda: process.poll() is None, poll_s=1):
        return
    what = (f"exited ({process.returncode})" if process.poll() is not None
            else f"did not answer in {START_TIMEOUT_S} s")
    raise AssertionError(f"label-studio {what}: {log_path.read_text()[-3000:]}")


if __name__ == "__main__":  # make label-studio: python -m tests.label_studio FOLDER
    import sys

    sys.exit(migrate(Path(sys.argv[1]).resolve()))
