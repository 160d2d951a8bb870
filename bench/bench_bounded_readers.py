"""Benchmark: peak memory of every bounded reader's worst case (issue 41, item 1).

Each case is one ``python -m elitr_core import FILE`` (or a server start, for the log-out
body) in its own process, whose peak resident memory is ``ru_maxrss`` of the finished child
(``resource.getrusage(RUSAGE_CHILDREN)``, read by a small wrapper process). The worst cases:

- a responses file of 63 MB of ``[{},{},...]`` under a key no reader knows (JSON and zipped);
- the most values accepted: 499,990 empty objects there (999,982 values: each object and each
  comma counts), parsed, then refused for what the file lacks;
- an inspect ``.eval`` log whose one sample holds a 400 MB answer (0.4 MB on disk), one whose
  sample expands just under the log's 16 MB, and one whose sample holds a million values;
- an lm-eval results file that is a link to ``/dev/zero``;
- three chunked POSTs of 190 MB to ``/session/end`` (the server's ``VmHWM`` before and after).

With ``--before DIR`` (another checkout of the project, e.g. ``git archive 73f864a | tar -x
-C DIR`` with its ``.venv``) each case also runs there, side by side. ``uptime`` is printed
with the figures: timings and memory swing with the machine's load.

    python bench/bench_bounded_readers.py [--before DIR] [--out bench/results/FILE.md]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.report import publish, uptime  # noqa: E402

RESPONSES = "elitr-bench-qa_dev_st_gpt-4-eval.json"
STAMP = "2026-11-27T10-00-00.000001"
MEASURE = ("import resource, subprocess, sys, time; t = time.monotonic(); done = "
           "subprocess.run(sys.argv[1:], capture_output=True, text=True); print(resource."
           "getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, done.returncode, "
           "round(time.monotonic() - t, 1)); print((done.stderr.strip().splitlines() or "
           "[''])[-1])")


def _objects(count: int) -> bytes:
    return b'{"split": "dev", "notes": [' + b"{}," * (count - 1) + b'{}]}'


def _zip(name: str, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(name, data)
    return buffer.getvalue()


def _inspect_log(folder: Path) -> Path:
    """A real inspect_ai log of the shipped task (mockllm), as the tests make one."""
    from tests.elitr_core.integrations.inspect_helpers import run_task
    from tests.elitr_core.run_helpers import set_transcripts

    db = folder / "source.db"
    subprocess.run([sys.executable, "-m", "elitr_core", "init", "--db", f"sqlite:///{db}"],
                   cwd=ROOT, check=True, capture_output=True)
    set_transcripts(f"sqlite:///{db}")
    return run_task(f"sqlite:///{db}", folder / "logs", mode="st")


def _answer(size: int) -> object:
    def change(sample: dict) -> dict:
        sample["messages"][-1]["content"] = "x" * size
        return sample
    return change


def cases(folder: Path) -> dict[str, Path]:
    """Each worst case as the file to import (built once, shared by both checkouts)."""
    out: dict[str, Path] = {}
    big = _objects((64 * 2**20 - 1024) // 3)
    (folder / "objects").mkdir()
    out["63 MB of {} (refused)"] = folder / "objects" / RESPONSES
    out["63 MB of {} (refused)"].write_bytes(big)
    out["63 MB of {}, zipped (refused)"] = folder / "objects.zip"
    out["63 MB of {}, zipped (refused)"].write_bytes(_zip(RESPONSES, big))
    (folder / "most").mkdir()
    out["499,990 {}: 999,982 values (most read)"] = folder / "most" / RESPONSES
    out["499,990 {}: 999,982 values (most read)"].write_bytes(_objects(499_990))
    from tests.elitr_core.integrations.inspect_helpers import inflated

    log = _inspect_log(folder / "inspect")
    out["inspect: a 400 MB sample (refused)"] = inflated(log, folder / "s400.eval",
                                                         _answer(400 * 2**20))
    out["inspect: a sample just under 16 MB (read)"] = inflated(
        log, folder / "s15.eval", _answer(15 * 2**20))
    out["inspect: a sample of a million {} (refused)"] = inflated(
        log, folder / "values.eval", lambda s: {**s, "notes": [{}] * 1_000_000})
    lm = folder / "lm-eval"
    lm.mkdir()
    doc = {"id": "meeting_en_test2_001/q1", "split": "test2", "setting": "qa", "mode": "st",
           "language": "en"}
    (lm / f"samples_elitr_bench_{STAMP}.jsonl").write_text(
        json.dumps({"doc": doc, "filtered_resps": ["a"]}) + "\n")
    (lm / f"results_{STAMP}.json").symlink_to("/dev/zero")
    out["lm-eval: results -> /dev/zero (refused)"] = lm / f"samples_elitr_bench_{STAMP}.jsonl"
    return out


def measure(root: Path, path: Path, work: Path) -> str:
    python = str(root / ".venv" / "bin" / "python")
    db = work / f"db-{abs(hash((str(root), str(path))))}.sqlite"
    done = subprocess.run([python, "-c", MEASURE, python, "-m", "elitr_core", "import",
                           str(path), "--db", f"sqlite:///{db}"], cwd=root,
                          capture_output=True, text=True, timeout=1800)
    first, _, last = done.stdout.partition("\n")
    peak_kb, status, seconds = first.split()
    what = last.strip()[:90] if status != "0" else "imported"
    return f"{int(peak_kb) / 1024:,.0f} MB, exit {status}, {seconds} s ({what})"


def server_case(root: Path, work: Path) -> str:
    """Three chunked 190 MB POSTs to /session/end: the server's peak before and after."""
    from tests.test_server import _chunked, _peak_kb, _post_end, _server_pid

    env = {**os.environ, "PATH": f"{root / '.venv' / 'bin'}:{os.environ['PATH']}"}
    db = work / f"server-{abs(hash(str(root)))}.sqlite"
    subprocess.run([str(root / ".venv" / "bin" / "python"), "-m", "elitr_core", "init", "--db",
                    f"sqlite:///{db}"], cwd=root, check=True, capture_output=True)
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = (work / f"server-{port}.log").open("w")
    proc = subprocess.Popen([str(root / ".venv" / "bin" / "python"), "-m", "streamlit", "run",
                             "server.py", "--server.port", str(port), "--server.address",
                             "127.0.0.1", "--server.headless", "true"], cwd=root,
                            env={**env, "DATABASE_URL": f"sqlite:///{db}", "ELITR_WARM": "0"},
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        import urllib.request
        for _ in range(300):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
                break
            except OSError:
                time.sleep(0.3)
        pid = _server_pid(port)
        before = _peak_kb(pid)
        form = {"Content-Type": "application/x-www-form-urlencoded",
                "Transfer-Encoding": "chunked"}
        statuses = [_post_end(port, form, _chunked(190 * 2**20)) for _ in range(3)]
        after = _peak_kb(pid)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
    return f"peak {before / 1024:,.0f} -> {after / 1024:,.0f} MB, answers {statuses}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="another checkout, measured side by side")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    roots = {"now": ROOT, **({"before": args.before} if args.before else {})}
    lines = [f"uptime: {uptime()}", "", "| case | " + " | ".join(roots) + " |",
             "|---|" + "---|" * len(roots)]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, path in cases(folder).items():
            figures = [measure(root, path, folder) for root in roots.values()]
            lines.append(f"| {name} | " + " | ".join(figures) + " |")
            print(lines[-1], flush=True)
        figures = [server_case(root, folder) for root in roots.values()]
        lines.append("| /session/end: 3 chunked POSTs of 190 MB | " + " | ".join(figures) + " |")
        print(lines[-1], flush=True)
        shutil.rmtree(folder / "inspect", ignore_errors=True)
    lines.append("")
    lines.append(f"uptime: {uptime()}")
    publish("\n".join(lines) + "\n", args.out)


if __name__ == "__main__":
    main()
