"""Closing a study on the Studies page: the server-side time of the run that follows the click,
and, with ``--browser``, what the researcher waits for in Chromium.

A silver study of two bundled test2 meetings with three annotators who answered everything.
The page is opened (AppTest, in-process), "Close the study" and "Yes, close the study" are
clicked; the second click's run (close, store the aggregate, redraw the page) is timed, wall
and CPU seconds. Side by side: the same run with the page's caches cleared first, which is
what every click cost before the human-budget planner and the agreement were cached (both
were recomputed on each run). The study is re-opened between repeats. The load average is
printed: on this 2-core machine other work moves every figure.

With ``--browser``, each tree (this one and ``--before REF``, a git commit, side by side) serves
its own copy of the study (``streamlit run``, no start-up warm-up), and headless Chromium at
1366x768 opens the Studies page, clicks "Close the study" (timed until the confirmation shows
and the run has finished) and "Yes, close the study" (until the closed message shows and the
run has finished); the study is re-opened in the database and the page loaded again between
repeats, the trees taking turns so that the load hits both.

    python bench/bench_studies_close.py [--repeats 3]
    python bench/bench_studies_close.py --browser --before main [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_pages import _DONE_JS, _serve, chromium  # noqa: E402
from bench.trees import checkout, clean_up  # noqa: E402

STUDY = "s"
CONFIRM = "Annotators can no longer answer"
CLOSED = "is closed; its aggregate is stored"


def _database(folder: Path) -> str:
    """The bundled data plus a finished three-annotator study of one meeting (two models)."""
    from elitr_core.annotation.admin import add_annotator
    from elitr_core.annotation.studies import StudySpec, create_study, enter_with_token, submit
    from elitr_core.data.database import ensure_bundled_data, open_database, writing

    url = f"sqlite:///{folder / 'bench.db'}"
    engine = open_database(url)
    ensure_bundled_data(engine)
    with writing(engine) as session:
        create_study(session, StudySpec(name="s", per_item=3, split="test2", setting="qa",
                                        mode="st", models=("GPT-4", "Vicuna-13B-v1.5"),
                                        meetings=("meeting_en_test2_001",)))
        tokens = [add_annotator(session, f"a{i}", "silver") for i in range(3)]
    for i, token in enumerate(tokens):
        entry = enter_with_token(engine, token)
        view = None
        for position in range(100):
            try:
                view = submit(engine, entry, position, 1 + (position + i) % 10, seconds=20.0)
            except Exception:  # past the end of the queue
                break
        assert view is not None
    return url


def _close_run(clear: bool) -> tuple[float, float]:
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from elitr_core.annotation.admin import reopen_study
    from elitr_core.data.database import open_database, writing

    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300).run()
    app = app.switch_page("pages/studies.py").run()
    [b for b in app.button if b.label == "Close the study"][0].click().run()
    if clear:
        st.cache_data.clear()
    wall, cpu = time.perf_counter(), time.process_time()
    [b for b in app.button if b.label == "Yes, close the study"][0].click().run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert "is closed" in app.success[0].value, [s.value for s in app.success]
    with writing(open_database(os.environ["DATABASE_URL"])) as session:
        reopen_study(session, "s")
    return wall, cpu


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def _server_side(repeats: int) -> None:
    """Print the close run's median wall and CPU seconds, cached vs recomputed (AppTest)."""
    folder = Path(tempfile.mkdtemp())
    try:
        os.environ["DATABASE_URL"] = _database(folder)
        os.environ["ELITR_WARM"] = "0"
        results: dict[str, list[tuple[float, float]]] = {"cached (now)": [],
                                                         "recomputed (before)": []}
        for _ in range(repeats):  # interleaved, so that load changes hit both
            results["cached (now)"].append(_close_run(clear=False))
            results["recomputed (before)"].append(_close_run(clear=True))
        print(f"{_load()}; {repeats} repeats, medians")
        for name, runs in results.items():
            print(f"{name:>20}: wall {statistics.median(r[0] for r in runs):.2f} s, "
                  f"CPU {statistics.median(r[1] for r in runs):.2f} s")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


#: the run has finished, the page holds ``arguments[0]`` and no element is stale (greyed out
#: while a run replaces it)
_SHOWN_JS = _DONE_JS.replace("return ", "return document.body.innerText.includes(arguments[0])"
                             " && !document.querySelector('[data-stale=true]') && ", 1)
#: every grid on the page has drawn (its accessible table is there)
_GRIDS_DRAWN_JS = """return [...document.querySelectorAll("[data-testid='stDataFrame']")]
  .every(g => g.closest("details:not([open])") || g.querySelector("table[role='grid']"));"""


def _click_until(driver, label: str, text: str) -> float:  # type: ignore[no-untyped-def]
    """Seconds from a click on the button ``label`` until ``text`` shows and the run is over."""
    button = driver.find_element("xpath", f"//button[.//p[text()='{label}']]")
    start = time.perf_counter()
    button.click()
    time.sleep(0.02)  # let the run start before asking whether it finished
    while time.perf_counter() - start < 300 and not driver.execute_script(_SHOWN_JS, text):
        time.sleep(0.01)
    return time.perf_counter() - start


def _reopen(url: str) -> None:
    from sqlalchemy import create_engine, text

    with create_engine(url).begin() as conn:
        conn.execute(text("UPDATE study SET status = 'open' WHERE name = :n"), {"n": STUDY})


def _browser(trees: dict[str, Path], repeats: int) -> None:
    """Print click -> confirmation and click -> message in Chromium per tree, with the load."""
    folder = Path(tempfile.mkdtemp(prefix="bench-close-"))
    servers, urls, databases = [], {}, {}
    try:
        for number, (label, root) in enumerate(trees.items()):
            place = folder / str(number)
            place.mkdir()
            databases[label] = subprocess.run(  # the tree's own code writes its database
                [sys.executable, __file__, "--setup", str(place), "--root", str(root)],
                check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
            proc, urls[label] = _serve(root, {**os.environ, "DATABASE_URL": databases[label],
                                             "ELITR_WARM": "0"})
            servers.append(proc)
        driver = chromium("1366,768")
        times: dict[str, list[tuple[float, float]]] = {label: [] for label in trees}
        loads = [_load()]
        try:
            for _ in range(repeats):
                for label, url in urls.items():
                    driver.get(f"{url}/studies")
                    while not (driver.execute_script(_SHOWN_JS, "Quality control")
                               and driver.execute_script(_GRIDS_DRAWN_JS)):
                        time.sleep(0.1)
                    time.sleep(1.5)  # the page settled: nothing left to draw
                    confirm = _click_until(driver, "Close the study", CONFIRM)
                    close = _click_until(driver, "Yes, close the study", CLOSED)
                    times[label].append((confirm, close))
                    _reopen(databases[label])
                loads.append(_load())
        finally:
            driver.quit()
        print(f"In Chromium at 1366x768, {repeats} repeats, medians (min-max); "
              + "; ".join(loads))
        print(f"{'tree':<24}{'click -> confirmation':>26}{'click -> closed message':>26}"
              f"{'both':>10}")
        for label, runs in times.items():
            cells = [f"{statistics.median(v):.2f} s ({min(v):.2f}-{max(v):.2f})"
                     for v in (list(r[0] for r in runs), list(r[1] for r in runs))]
            both = statistics.median(r[0] + r[1] for r in runs)
            print(f"{label:<24}{cells[0]:>26}{cells[1]:>26}{both:>8.2f} s")
    finally:
        for proc in servers:
            proc.terminate()
            proc.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    """Server side (AppTest), or with ``--browser`` in Chromium, this tree vs ``--before``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--browser", action="store_true",
                        help="time the clicks in headless Chromium on a real server")
    parser.add_argument("--before", help="with --browser: a git commit timed side by side")
    parser.add_argument("--setup", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.setup:  # a worker: the study's database written by the tree at --root
        sys.path.insert(0, args.root)
        print(_database(Path(args.setup)))
        return
    if not args.browser:
        _server_side(args.repeats)
        return
    tmp = Path(tempfile.mkdtemp(prefix="bench-close-trees-"))
    try:
        trees = {"this tree": ROOT}
        if args.before:
            trees = {f"before ({args.before[:10]})": checkout(args.before, tmp), **trees}
        _browser(trees, args.repeats)
    finally:
        clean_up(tmp, args.before)


if __name__ == "__main__":
    main()
