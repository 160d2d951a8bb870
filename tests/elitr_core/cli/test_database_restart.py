"""``generate`` and ``judge`` while their PostgreSQL server restarts (issue 27, item 3), on a
server the test starts and restarts itself (``tests.pg_instance``).

Before: ~250 lines of stderr with 4 tracebacks, the SQL and an answer's text, and the false
"Nothing was written". Now: the progress bar and one ``error:`` line saying the connection was
lost, that what was stored is kept and to run the same command again; the same command then
finishes the run with every answer stored once.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

from elitr_core.cli.main import main
from tests.elitr_core.backends.fake_openai_server import FakeOpenAIServer, running_server
from tests.elitr_core.run_helpers import MEETINGS, rows, set_transcripts
from tests.pg_instance import PgInstance, pg_instance

ROOT = Path(__file__).resolve().parents[3]


def _through_restart(pg: PgInstance, args: list[str], fake: FakeOpenAIServer) -> int | None:
    """Run ``args`` (a command using ``fake``), restart the server after 8 answers; the
    command's stderr holds only its progress bar and at most one line saying what to do, with
    how many outputs are stored (returned; None when the command went on to the end)."""
    proc = subprocess.Popen([sys.executable, "-m", "elitr_core", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while len(fake.successful()) < 8 and proc.poll() is None:
        time.sleep(0.1)
    pg.restart()
    _, err = proc.communicate(timeout=300)
    lines = [line for line in re.split(r"[\r\n]+", err) if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert all("/s]" in line or line.startswith("error:") for line in lines), err
    assert "Traceback" not in err and "[SQL" not in err and "INSERT" not in err
    if proc.returncode != 0:
        assert proc.returncode == 2 and len(errors) == 1, err
        assert "run the same command again" in errors[0], errors[0]
        stored = re.search(r": (\d+) of the run's \d+ .+? are stored", errors[0])
        assert stored is not None, errors[0]
        return int(stored[1])
    return None


def test_generate_and_judge_through_a_database_restart(tmp_path: Path) -> None:
    with pg_instance() as pg, running_server() as fake:
        assert main(["init", "--db", pg.url]) == 0
        set_transcripts(pg.url)
        fake.script.latency = 0.3
        args = ["generate", "--model", "cli-model", "--setting", "qa", "--mode", "st",
                "--split", "test2", "--meetings", ",".join(MEETINGS), "--db", pg.url,
                "--backend", "openai", "--base-url", fake.base_url, "--concurrency", "2"]
        stored = _through_restart(pg, args, fake)
        if stored is not None:  # the line is true: that many answers are in the database
            assert len(rows(pg.url, "SELECT r.id FROM response r JOIN run ON r.run_id = run.id "
                                    "WHERE run.model = 'cli-model'")) == stored
        done = subprocess.run([sys.executable, "-m", "elitr_core", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        written, stored = map(int, re.search(r"(\d+) answer\(s\) written, (\d+) already "
                                             r"stored", done.stdout).groups())  # type: ignore[union-attr]
        assert written + stored == 28
        (run_id,), = rows(pg.url, "SELECT id FROM run WHERE model = 'cli-model'")
        counts = rows(pg.url, f"SELECT question_id, count(*) FROM response WHERE run_id = "
                              f"{run_id} GROUP BY question_id")
        assert len(counts) == 28 and {n for _, n in counts} == {1}  # each answer once
        fake.reset()
        judge = ["judge", "--judge-model", "fake-model", "--backend", "openai", "--base-url",
                 fake.base_url, "--evaluator", "restart-judge", "--style", "prometheus",
                 "--model", "cli-model",
                 "--split", "test2", "--setting", "qa", "--mode", "st", "--concurrency", "2",
                 "--db", pg.url]
        _through_restart(pg, judge, fake)
        done = subprocess.run([sys.executable, "-m", "elitr_core", *judge], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
