"""A quiet terminal: serving pages and exporting a PNG prints no "Inotify queue overflowed".

Streamlit's file watcher put a recursive inotify watch on the repository (the blacklist only
filters what it reports), so every file read under it raised events: the database in var/ on
each page visit, and with `make run`'s virtualenv in .venv every package file a PNG export
loads. The server now watches no folder at all."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.browser.conftest import ROOT, running_server
from tests.browser.test_analysis_browser import open_page


@pytest.mark.browser
def test_page_visits_and_a_png_export_print_no_inotify_overflow(
        bundled_sqlite: str, browser: object, wait_for_text: Callable[..., None],
        tmp_path: Path) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    # the database where `make run` keeps it: in var/ under the repository
    var = ROOT / "var"
    var.mkdir(exist_ok=True)
    database = var / f"quiet-terminal-{tmp_path.name}.db"
    shutil.copy(bundled_sqlite.removeprefix("sqlite:///"), database)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    browser.execute_cdp_cmd(  # type: ignore[attr-defined]
        "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    log = tmp_path / "streamlit.log"
    try:
        # with the start-up warm-up, as `make run` serves
        with running_server(f"sqlite:///{database}", log, env={"ELITR_WARM": "1"}) as url:
            for page in ("Agreement", "Calibration", "Leaderboard"):
                open_page(browser, url, page, wait_for_text)
            xpath = "//div[@data-testid='stDownloadButton']//button[contains(., 'PNG')]"
            button = WebDriverWait(browser, 60).until(
                lambda d: d.find_elements("xpath", xpath))[0]  # type: ignore[attr-defined]
            browser.execute_script(  # type: ignore[attr-defined]
                "arguments[0].scrollIntoView({block: 'center'});", button)
            button.click()
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not list(downloads.glob("*.png")):
                time.sleep(0.5)
            assert list(downloads.glob("*.png")), "no PNG exported"
            time.sleep(2)  # what the export made the watcher report reaches the log
            watches = inotify_watches(server_pid(url))
    finally:
        for path in var.glob(f"{database.name}*"):
            path.unlink()
    text = log.read_text()
    assert "Inotify" not in text and "inotify" not in text, text[-2000:]
    # nothing is watched, so nothing can overflow (a recursive watch of the repository held
    # one inotify watch per folder under it)
    assert watches == 0, watches


def server_pid(url: str) -> int:
    """The process serving ``url`` (its command line names the port)."""
    port = url.rsplit(":", 1)[1]
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"streamlit" in b" ".join(argv) and port.encode() in argv:
            return int(proc.name)
    raise AssertionError(f"no server process on port {port}")


def inotify_watches(pid: int) -> int:
    """How many inotify watches the process holds (``/proc/PID/fdinfo``)."""
    watches = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if "inotify" not in str(fd.readlink()):
                continue
            info = Path(f"/proc/{pid}/fdinfo/{fd.name}").read_text()
        except OSError:
            continue
        watches += sum(line.startswith("inotify wd:") for line in info.splitlines())
    return watches
