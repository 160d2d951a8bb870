"""The server's CPU per rerun of each researcher page, over Streamlit's websocket protocol, side
by side with an older commit: what every click on a page costs the server (issue 32).

For each tree: ``streamlit run server.py`` on a fresh copy of the bundled data (SQLite, its own
``init``), no login configured (the local user is the researcher). Per page: a session opens it
(the first visit, not counted), then ``--repeat`` reruns of the page as it stands (what a click
that changes nothing costs: the script run, its queries from the caches, the element tree,
Streamlit's per-run work); the server process's CPU over those reruns / ``--repeat``, and the
median wall time of one rerun, client to ``script_finished``. Run:

    python bench/bench_page_cpu.py --before REF [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from bench.bench_pages import PAGES  # noqa: E402
from bench.crowd_server import cpu_seconds, make_study, server  # noqa: E402
from bench.report import uptime  # noqa: E402
from bench.trees import checkout, clean_up  # noqa: E402
from tests.streamlit_ws import Session  # noqa: E402


async def _pages(base: str, pid: int, repeat: int) -> dict[str, tuple[float, float]]:
    out = {}
    for page in PAGES:
        name = "" if page == "home" else page
        s = await Session.open(base, page=name, timeout=300)
        before = cpu_seconds(pid)
        walls = [(await s.rerun(timeout=300)).seconds for _ in range(repeat)]
        out[page] = (1000 * (cpu_seconds(pid) - before) / repeat, statistics.median(walls))
        await s.close()
    return out


def _tree(root: Path, repeat: int, tmp: Path) -> dict[str, tuple[float, float]]:
    url = f"sqlite:///{tmp / f'pages-{root.name}.db'}"
    make_study(root, url, 1)  # the bundled data (and one study)
    with server(root, url, tmp / f"server-{root.name}.log", []) as (base, pid):
        return asyncio.run(_pages(base, pid, repeat))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="a git commit to run side by side with this tree")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-page-cpu-"))
    try:
        trees = {"this tree": HERE}
        if args.before:
            trees = {f"before ({args.before[:10]})": checkout(args.before, tmp), **trees}
        print(f"uptime before: {uptime()}", flush=True)
        results = {label: _tree(root, args.repeat, tmp) for label, root in trees.items()}
        print(f"uptime after:  {uptime()}")
        print("\n| page | " + " | ".join(f"{k}: CPU ms/rerun, wall s" for k in results) + " |")
        print("|---" * (len(results) + 1) + "|")
        for page in PAGES:
            print(f"| {page} | " + " | ".join(f"{r[page][0]:.0f} ms, {r[page][1]:.3f} s"
                                           for r in results.values()) + " |")
    finally:
        clean_up(tmp, args.before)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
