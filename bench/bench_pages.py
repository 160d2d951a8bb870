"""Server time of every analysis page, end to end, before and after a change, side by side.

"Server time" is one whole script run of the page as Streamlit runs it (``AppTest``: app.py,
the role check, the sidebar filters, the page's queries, statistics, figures, tables and
download buttons, everything but the browser drawing). Two figures per page: the first load
(cold caches) and the median of ``--repeat`` runs after it (a rerun, a reload or a return to
the page: the caches are warm). Run:

    python bench/bench_pages.py                  # this tree only
    python bench/bench_pages.py --before REF     # REF (a git commit) side by side with this tree
    python bench/bench_pages.py --browser ...    # also: what a user waits for in Chromium

With ``--browser`` each tree also runs as a real server (``streamlit run app.py``) and headless
Chromium moves between pages as a user does (its sidebar links, one session): "first" is the
first visit of a page, "warm" the median of ``--repeat`` later visits (Home in between), each
from the click until the app reports its script run finished and no spinner or skeleton is
left; "tab" the median over the page's other tabs of a click on the tab (a page that draws
one tab at a time reruns for it; "-" for a page without tabs); "reload" is a full page load
by address (a new session: the frontend starts again). The server is ``server.py`` where the
tree has one (what ``make run`` starts: it may warm caches at start), else ``app.py``; the
browser opens the app as soon as the server answers, or ``--settle`` seconds later (a user who
opens the app a little after starting it: the server's start-up work is then done).

Each tree is timed in its own process on its own copy of the bundled data, one after the
other; the load average is printed because the machine is shared and timings swing with it.

``--data busy`` adds, with each tree's own CLI, what a working database holds beyond the bundled
data: the n-gram metrics (``metrics``: evaluators rouge-l and token-f1) and two more fake judges
on test2 (8 evaluators in all), and a fake pairwise judge (``judge --style battle``) over three
models, so that Agreement and Battles are timed with the data that made them slow.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from bench.trees import checkout, clean_up  # noqa: E402

PAGES = ("leaderboard", "agreement", "calibration", "drilldown", "judge_audit", "battles",
         "meeting", "home")


def _worker(root: str, repeat: int) -> None:
    """Time the pages of the tree at ``root`` (run in a fresh process); print JSON."""
    import logging

    sys.path.insert(0, root)
    os.chdir(root)
    logging.disable(logging.WARNING)
    from streamlit.testing.v1 import AppTest

    out = {}
    for page in PAGES:
        if not (Path(root) / "pages" / f"{page}.py").exists():
            continue
        app = AppTest.from_file(str(Path(root) / "app.py"), default_timeout=600).run()
        start = time.perf_counter()
        app.switch_page(f"pages/{page}.py").run()
        first = time.perf_counter() - start
        warm = []
        for _ in range(repeat):
            start = time.perf_counter()
            app.run()
            warm.append(time.perf_counter() - start)
        out[page] = {"first": first, "warm": statistics.median(warm),
                     "error": bool(app.exception)}
    print(json.dumps(out))


_DONE_JS = """
const app = document.querySelector('[data-test-script-state]');
return !!app && app.getAttribute('data-test-script-state') === 'notRunning'
  && ![...document.querySelectorAll('[data-testid="stSkeleton"], [data-testid="stSpinner"]')]
       .some(e => e.getClientRects().length > 0)
  && document.querySelectorAll('[data-testid="stMain"] h1').length > 0;"""


def chromium(size: str = "1400,1000"):  # type: ignore[no-untyped-def]
    """A Selenium driver of Debian's headless Chromium with a window of ``size`` (w,h)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 f"--window-size={size}"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver") or "chromedriver"),
                            options=options)


def _browser_times(root: Path, url: str, repeat: int) -> dict[str, dict[str, float]]:
    """Seconds from request to a finished, drawn page in headless Chromium, per page."""
    driver = chromium()

    def finished(start: float) -> float:
        time.sleep(0.2)  # let the run start before asking whether it finished
        while not driver.execute_script(_DONE_JS) and time.perf_counter() - start < 300:
            time.sleep(0.05)
        return time.perf_counter() - start

    def reload(address: str) -> float:
        start = time.perf_counter()
        driver.get(address)
        return finished(start)

    def nav_link(page: str) -> Any:
        """The page's link: in the sidebar (trees before the top bar), else in the top bar's
        section menus (opened first: opening a menu is not part of the timed click)."""
        found = driver.find_elements(
            "css selector", f"a[data-testid='stSidebarNavLink'][href$='/{page}']")
        for section in [] if found else driver.find_elements(
                "css selector", "[data-testid='stTopNavSection']"):
            section.click()
            time.sleep(0.3)
            found = [e for e in driver.find_elements(
                "css selector", f"a[data-testid='stTopNavDropdownLink'][href$='/{page}']")
                if e.is_displayed()]
            if found:
                break
            section.click()  # close it again
        return found[0]

    def click(page: str) -> float:
        link = nav_link(page)
        start = time.perf_counter()
        link.click()
        return finished(start)

    def tabs() -> list[float]:
        labels = [e.text for e in driver.find_elements("css selector", "[role='tab']")]
        times = []
        for label in labels[1:]:
            tab = next(e for e in driver.find_elements("css selector", "[role='tab']")
                       if e.text == label)
            start = time.perf_counter()
            tab.click()
            times.append(finished(start))
        return times

    out = {}
    try:
        reload(url)  # the app's first session: role, engine
        for page in PAGES:
            if page == "home" or not (root / "pages" / f"{page}.py").exists():
                continue
            first = click(page)
            warm = []
            for _ in range(repeat):
                click("meeting")
                warm.append(click(page))
            tab = tabs()
            out[page] = {"first": first, "warm": statistics.median(warm),
                         "tab": statistics.median(tab) if tab else None,
                         "reload": reload(f"{url}/{page}"), "error": False}
    finally:
        driver.quit()
    return out


def _serve(root: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    import socket
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    script = "server.py" if (root / "server.py").exists() else "app.py"
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", script,
                             "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--server.headless", "true"], cwd=root, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                break
        except OSError:
            time.sleep(0.2)
    return proc, url


#: ``--data busy``: the commands run after ``init`` (each with ``--db URL``)
BUSY = (["metrics", "--split", "test2"],
        *(["judge", "--backend", "fake", "--style", "gpt4", "--judge-model", name,
           "--evaluator", name, "--split", "test2"] for name in ("fake-a", "fake-b")),
        ["judge", "--backend", "fake", "--style", "battle", "--judge-model", "fake-battle",
         "--evaluator", "battle", "--split", "test2", "--setting", "qa", "--mode", "st",
         "--model", "GPT-4", "--model", "Vicuna-13B-v1.5", "--model", "LongAlpaca-7B"])


def _time_tree(root: Path, repeat: int, tmp: Path, browser: bool,
               settle: float, data: str = "bundled") -> dict[str, dict[str, dict[str, float]]]:
    db = tmp / f"{root.name}.db"
    url = f"sqlite:///{db}"
    for command in (["init"], *(BUSY if data == "busy" else ())):
        subprocess.run([sys.executable, "-m", "elitr_core", *command, "--db", url], cwd=root,
                       check=True, capture_output=True)
    env = {**os.environ, "DATABASE_URL": url}
    done = subprocess.run([sys.executable, __file__, "--worker", str(root),
                           "--repeat", str(repeat)], env=env, check=True,
                          capture_output=True, text=True)
    out = {"server": json.loads(done.stdout.strip().splitlines()[-1])}
    if browser:
        proc, address = _serve(root, env)
        time.sleep(settle)
        try:
            out["browser"] = _browser_times(root, address, repeat)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return out


def _print(title: str, results: dict[str, dict[str, dict[str, float]]]) -> None:
    rows = [row for timing in results.values() for row in timing.values()]
    columns = [c for c in ("first", "warm", "tab", "reload") if any(c in row for row in rows)]
    what = " / ".join(columns) + " (s)"
    width = 12 + 8 * len(columns)
    header = "".join(f"{label + ': ' + what:>{width}}" for label in results)
    print(f"\n{title}\n{'page':<14}{header}")
    for page in PAGES:
        cells = []
        for timing in results.values():
            row = timing.get(page)
            if row is None:
                cells.append(f"{'-':>{width}}")
                continue
            text = " / ".join("-" if row.get(c) is None else f"{row[c]:.3f}" for c in columns)
            cells.append(f"{text:>{width - 1}}{'!' if row['error'] else ' '}")
        print(f"{page:<14}{''.join(cells)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="a git commit to time side by side with this tree")
    parser.add_argument("--repeat", type=int, default=5, help="warm runs per page (median)")
    parser.add_argument("--browser", action="store_true",
                        help="also time each page in headless Chromium on a real server")
    parser.add_argument("--settle", type=float, default=0.0,
                        help="with --browser: seconds between the server's start and the "
                             "browser's first request")
    parser.add_argument("--data", choices=["bundled", "busy"], default="bundled",
                        help="busy: 8 evaluators (metrics, two more judges) and a pairwise "
                             "judge on top of the bundled data")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(args.worker, args.repeat)
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="bench-pages-"))
    try:
        trees = {"this tree": HERE}
        if args.before:
            trees = {f"before ({args.before[:10]})": checkout(args.before, tmp), **trees}
        print(f"load average before: {os.getloadavg()}", flush=True)
        results = {label: _time_tree(root, args.repeat, tmp, args.browser, args.settle,
                                     args.data)
                   for label, root in trees.items()}
        print(f"load average after:  {os.getloadavg()}")
        _print("Server time of one script run (AppTest)",
               {label: r["server"] for label, r in results.items()})
        if args.browser:
            _print("In Chromium: navigation click (first, warm; the top bar opens its menu "
                   "untimed), first tab or full reload, to finished page",
                   {label: r["browser"] for label, r in results.items()})
        print("(! = the page raised in that tree)")
    finally:
        clean_up(tmp, args.before)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
