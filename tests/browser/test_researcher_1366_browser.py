"""The researcher's side at 1366x768 in Chromium (issue 43, item 3): every page opens on its
data under the top bar, which names the product and the page and underlines the open section;
each browser tab has the page's title; then the researcher's tasks of the guides: find the
judge that agrees best with the humans and download its table and figure, export the
Leaderboard's main table as LaTeX, download the scores as a dataset (Home), and exclude a
careless annotator of a study (after its confirmation).

With ``ELITR_DOCS_SCREENSHOTS=1`` in the environment the pages' screenshots are written to
``docs/screenshots/`` (the guides show them): ``make screenshots``.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from elitr_core.cli.main import main
from tests.browser.conftest import (
    ROOT,
    follow_nav_link,
    running_server,
    screenshot,
    wait_idle,
)
from tests.browser.test_studies_browser import STUDY, _pid, study_db  # noqa: F401 (a fixture)
from tests.pages.test_battles import judge_all
from ui.layout import tab_title

WIDTH, HEIGHT = 1366, 768
#: at least this much of the first table or chart shows in the window, under the top bar
MIN_SHOWN = 120
DOCS = ROOT / "docs" / "screenshots"

#: (navigation title, a text the page shows once computed, section, its docs screenshot)
PAGES = (
    ("Home", "Runs per model and setting", "Data", "home"),
    ("Leaderboard", "Main table (gpt-4)", "Analysis", "leaderboard"),
    ("Agreement", "Correlation between evaluators", "Analysis", "agreement"),
    ("Calibration", "Score-bin calibration", "Analysis", "calibration"),
    ("Model drilldown", "Lost in the middle", "Analysis", "drilldown"),
    ("Judge audit", "PPI leaderboard", "Analysis", "judge_audit"),
    ("Battles", "Win matrix", "Analysis", "battles"),
    ("Runs", "Generation runs", "Work", "runs"),
    ("Studies", "Progress per annotator", "Work", "studies"),
)

#: where the page's first table or chart starts, the window's height, the top bar's, the
#: tab's title, whether the logo is shown, and the open section's menu (the one underlined)
MEASURE = """
const data = [...document.querySelectorAll(
    "[data-testid=stDataFrame], .js-plotly-plot, [data-testid=stTable]")]
  .filter(e => e.getBoundingClientRect().height > 0);
const header = document.querySelector("header[data-testid=stHeader]");
const logo = [...document.querySelectorAll(
    "[data-testid=stSidebarLogo], [data-testid=stHeaderLogo]")]
  .filter(e => e.getBoundingClientRect().height > 0);
const open = [...document.querySelectorAll("[data-testid=stTopNavSection]")]
  .filter(e => getComputedStyle(e).boxShadow !== "none").map(e => e.textContent.trim());
return {top: data.length ? Math.round(data[0].getBoundingClientRect().top) : null,
        height: window.innerHeight, bar: header ? header.getBoundingClientRect().bottom : 0,
        title: document.title, logo: logo.length, open};
"""


@pytest.fixture
def walk_server(study_db: str, tmp_path: Path) -> Iterator[str]:  # noqa: F811
    """The bundled data with a silver study (a careless participant among five), two
    pairwise judges (a battle and a CREAM judge, fake), so that every page has data, and the
    demo corpus's transcripts (docs/generation-and-judging.md); the jobs' logs in tmp_path."""
    judge_all(study_db)
    assert main(["transcripts", str(ROOT / "data" / "demo"), "--db", study_db]) == 0
    with running_server(study_db, tmp_path / "streamlit.log",
                        {"ELITR_LOG_DIR": str(tmp_path / "logs")}) as url:
        yield url


def _first_data(browser: object, timeout: float = 60) -> dict[str, object]:
    """:data:`MEASURE` once the page's first table or chart is drawn."""
    deadline = time.monotonic() + timeout
    while True:
        seen = browser.execute_script(MEASURE)  # type: ignore[attr-defined]
        if seen["top"] is not None or time.monotonic() > deadline:
            return seen  # type: ignore[no-any-return]
        time.sleep(0.5)


def _open(browser: object, title: str, text: str, wait_for_text: Callable[..., None],
          folder: Path) -> Path:
    """Downloads into ``folder``; the page ``title`` through the top bar, drawn."""
    folder.mkdir()
    browser.execute_cdp_cmd(  # type: ignore[attr-defined]
        "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(folder)})
    follow_nav_link(browser, title)
    wait_for_text(browser, text, timeout=180)
    wait_idle(browser)
    return folder


def _click(browser: object, xpath: str, timeout: float = 60, index: int = 0) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    element = WebDriverWait(browser, timeout).until(lambda d: [
        e for e in d.find_elements("xpath", xpath)  # type: ignore[attr-defined]
        if e.is_displayed()])[index]
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", element)  # type: ignore[attr-defined]
    element.click()


def _downloaded(folder: Path, name: str, timeout: float = 90) -> bytes:
    target = folder / name
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not target.exists():
        time.sleep(0.3)
    assert target.exists(), f"no {name}: {sorted(p.name for p in folder.iterdir())}"
    return target.read_bytes()


def _cli(db: str, out: Path, *args: str) -> bytes:
    assert main(["export", *args, "--db", db, "--out", str(out)]) == 0
    return out.read_bytes()


def test_every_page_opens_on_its_data_and_the_tasks_run_at_1366x768(
        walk_server: str, study_db: str, browser: object,  # noqa: F811
        wait_for_text: Callable[..., None], tmp_path: Path) -> None:
    browser.set_window_size(WIDTH, HEIGHT)  # type: ignore[attr-defined]
    browser.get(walk_server)  # type: ignore[attr-defined]
    wait_for_text(browser, "Runs per model and setting", timeout=180)
    problems, seen = [], []
    for title, text, section, name in PAGES:
        if title != "Home":
            follow_nav_link(browser, title)
        wait_for_text(browser, text, timeout=180)
        wait_idle(browser)
        page = _first_data(browser)
        seen.append(f"{title}: {page}")
        top, height = page["top"], page["height"]
        if top is None or top + MIN_SHOWN > height:  # type: ignore[operator]
            problems.append(f"{title}: the first table or chart starts at y = {top} of "
                            f"{height}")
        if page["title"] != tab_title(title):
            problems.append(f"{title}: the tab's title is {page['title']!r}")
        if not page["logo"]:
            problems.append(f"{title}: no product name in the top bar")
        if page["open"] != [section]:
            problems.append(f"{title}: the top bar underlines {page['open']}, not {section}")
        path = screenshot(browser, f"researcher-1366-{name}", settle=1.5)
        if os.environ.get("ELITR_DOCS_SCREENSHOTS") == "1":
            DOCS.mkdir(exist_ok=True)
            (DOCS / f"{name}.png").write_bytes(path.read_bytes())
    assert not problems, "\n".join([*problems, "", "measured:", *seen])

    _find_the_judge_that_agrees_best(browser, study_db, wait_for_text, tmp_path)
    _export_the_main_table_as_latex(browser, study_db, wait_for_text, tmp_path)
    _download_the_dataset(browser, study_db, wait_for_text, tmp_path)
    _exclude_a_careless_annotator(browser, study_db, wait_for_text)
    _generate_and_judge_on_the_demo_corpus(browser, study_db, wait_for_text)
    _create_a_study_and_get_its_links(browser, walk_server, wait_for_text)


def _svg_texts(svg: bytes) -> list[str]:
    """The texts an SVG draws (each ``<text>`` element's, its ``<tspan>`` lines apart)."""
    from xml.etree import ElementTree

    texts = []
    for element in ElementTree.fromstring(svg).iter("{http://www.w3.org/2000/svg}text"):
        lines = [t.text or "" for t in element.iter("{http://www.w3.org/2000/svg}tspan")]
        texts += lines if lines else [element.text or ""]
    return texts


def _find_the_judge_that_agrees_best(browser: object, db: str,
                                     wait_for_text: Callable[..., None], tmp_path: Path) -> None:
    """Agreement, correlation tab (docs/analysis.md): the table's CSV downloads
    (:func:`_table_downloads`), the heatmap's PNG too, its SVG draws the cells the page
    draws, and the best pair's r in the export is the one the heatmap shows."""
    import csv
    import io

    folder = _open(browser, "Agreement", "Correlation between evaluators", wait_for_text,
                   tmp_path / "agreement")
    page = _cli(db, tmp_path / "corr.csv", "evaluator-correlation")
    _table_downloads(browser, folder, "evaluator-correlation", "csv", page)
    _click(browser, "//div[@data-testid='stDownloadButton']//button[contains(., 'PNG')]")
    assert _downloaded(folder, "correlation-pearson.png").startswith(b"\x89PNG")
    _click(browser, "//div[@data-testid='stDownloadButton']//button[contains(., 'SVG')]")
    svg = _downloaded(folder, "correlation-pearson.svg")
    # the heatmap's cells (r and its interval) as drawn on the page and in the SVG download
    cells = re.compile(r"^\[?-?\d\.\d\d(, -?\d\.\d\d\])?$")
    drawn = [t for t in browser.execute_script(  # type: ignore[attr-defined]
        "return [...document.querySelector('.js-plotly-plot').querySelectorAll('text')]"
        ".flatMap(t => { const lines = [...t.querySelectorAll('tspan')];"
        " return lines.length ? lines.map(l => l.textContent) : [t.textContent]; });")
        if cells.match(t)]
    assert drawn and sorted(drawn) == sorted(t for t in _svg_texts(svg) if cells.match(t))
    rows = [r for r in csv.DictReader(io.StringIO(page.decode()))
            if r["method"] == "pearson" and r["r"] and "gold-human" in
            (r["evaluator_a"], r["evaluator_b"])]
    best = max(rows, key=lambda r: float(r["r"]))
    heatmap = browser.find_element("css selector", ".js-plotly-plot").text  # type: ignore[attr-defined]
    assert f"{float(best['r']):.2f}" in heatmap, (best, heatmap)
    screenshot(browser, "researcher-1366-agreement-best", settle=0.5)


def _export_the_main_table_as_latex(browser: object, db: str,
                                    wait_for_text: Callable[..., None], tmp_path: Path) -> None:
    """Leaderboard: the main table's LaTeX downloads (:func:`_table_downloads`; the export is
    ``export main-table --format latex``)."""
    folder = _open(browser, "Leaderboard", "Main table (gpt-4)", wait_for_text,
                   tmp_path / "latex")
    _table_downloads(browser, folder, "leaderboard-main-gpt-4", "latex",
                     _cli(db, tmp_path / "main.tex", "main-table", "--evaluator", "gpt-4",
                          "--rank-by", "QA-st mean", "--format", "latex"))


def _download_the_dataset(browser: object, db: str, wait_for_text: Callable[..., None],
                          tmp_path: Path) -> None:
    """Home: the "Dataset (Hugging Face, zip)" download (docs/harnesses-and-datasets.md) holds
    exactly the files ``export dataset DIR`` writes for this database, byte for byte."""
    from tests.pages.test_dataset_download import cli_dataset, zip_members

    folder = _open(browser, "Home", "Scores per evaluator", wait_for_text, tmp_path / "dataset")
    _click(browser, "//div[@data-testid='stDownloadButton']//button"
                    "[contains(., 'Dataset (Hugging Face, zip)')]")
    members = zip_members(_downloaded(folder, "elitr-scores-dataset.zip"))
    cli = cli_dataset(db, tmp_path / "cli-dataset")
    assert {"scores.parquet", "studies.parquet", "README.md"} <= set(cli)
    assert sorted(members) == sorted(cli)
    for name, data in cli.items():
        assert members[name] == data, name


#: the first table the page shows, as the grid holds it: its row count, its headings, and
#: each drawn row's cells (the values, unformatted)
GRID = """
const grid = [...document.querySelectorAll("[data-testid='stDataFrame']")]
  .filter(g => g.offsetParent !== null).map(g => g.querySelector("table[role='grid']"))[0];
if (!grid) return null;  // not drawn yet
return {rows: Number(grid.getAttribute("aria-rowcount")) - 1,
        head: [...grid.querySelectorAll("thead th")].map(x => x.textContent),
        cells: [...grid.querySelectorAll("tbody tr")]
          .map(r => [...r.querySelectorAll("td, th")].map(x => x.textContent))};
"""
#: LaTeX's escapes of a cell's text (``-{}``: a hyphen that never joins the next into a dash)
_LATEX = {"\\_": "_", "\\%": "%", "\\&": "&", "\\#": "#", "\\$": "$", "-{}": "-"}


def _rows(data: bytes, fmt: str) -> list[list[str]]:
    """A CSV's or a LaTeX tabular's rows, the headings first."""
    import csv
    import io

    text = data.decode("utf-8")
    if fmt == "csv":
        return list(csv.reader(io.StringIO(text)))
    rows = []
    for line in text.splitlines():
        if " & " in line and line.rstrip().endswith("\\\\"):
            cells = line.rstrip()[:-2].split(" & ")
            for escaped, plain in _LATEX.items():
                cells = [c.replace(escaped, plain).strip() for c in cells]
            rows.append(cells)
    return rows


def _same_cell(value: str, text: str) -> bool:
    """The grid's ``value`` is the download's ``text`` at the text's rounding."""
    if value.strip() == text.strip() or (value in ("", "None", "nan")
                                         and text.strip() in ("", "\u2013", "-")):
        return True
    try:
        number, shown = float(value), float(text.replace(",", "").replace("$", ""))
    except ValueError:
        return False
    decimals = len(text.split(".")[1]) if "." in text else 0
    return abs(number - shown) <= 0.5 * 10 ** -decimals + 1e-9


def _table_downloads(browser: object, folder: Path, stem: str, fmt: str,
                     export: bytes) -> None:
    """The first table's download as ``fmt`` (CSV or LaTeX). Where the page also offers the
    export as a "Full table" download (issue 43, item 2), that one is ``export``'s bytes and
    the plain one the grid shown: its headings, its rows in their order, each cell the grid's
    value at the download's rounding. Else the plain one is ``export``'s bytes."""
    label, suffix = {"csv": ("CSV", "csv"), "latex": ("LaTeX", "tex")}[fmt]
    button = "//div[@data-testid='stDownloadButton']//button[contains(., '{}')]"
    from selenium.webdriver.support.ui import WebDriverWait

    grid = WebDriverWait(browser, 60).until(lambda d: d.execute_script(GRID))  # type: ignore[attr-defined]
    _click(browser, f"//div[@data-testid='stDownloadButton']//button[contains(., '{label}') "
                    "and not(contains(., 'Full table'))]")
    shown = _downloaded(folder, f"{stem}.{suffix}")
    full = button.format(f"Full table {label}")
    if not browser.find_elements("xpath", full):  # type: ignore[attr-defined]
        assert shown == export
        return
    _click(browser, full)
    assert _downloaded(folder, f"{stem}-full.{suffix}") == export
    headings, *rows = _rows(shown, fmt)
    assert headings == grid["head"], (headings, grid["head"])
    assert len(rows) == grid["rows"], (len(rows), grid["rows"])
    for number, (cells, got) in enumerate(zip(grid["cells"], rows, strict=False)):
        assert len(cells) == len(got) and all(
            _same_cell(v, t) for v, t in zip(cells, got, strict=True)), (number, cells, got)


def _excluded(db: str) -> int:
    """The scores stored with status ``excluded``."""
    from sqlalchemy import func, select

    from db.models import Score
    from elitr_core.data.database import open_database, reading

    with reading(open_database(db)) as session:
        return int(session.execute(select(func.count()).select_from(Score)
                                   .where(Score.status == "excluded")).scalar_one())


def _exclude_a_careless_annotator(browser: object, db: str,
                                  wait_for_text: Callable[..., None]) -> None:
    """Studies, Quality control (docs/crowd-study.md): nobody is chosen beforehand; choose
    the flagged annotator, type a reason, Exclude asks, Yes excludes."""
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    follow_nav_link(browser, "Studies")
    wait_for_text(browser, "Quality control", "Annotator to exclude", timeout=180)
    wait_idle(browser)
    field = "//*[@data-testid='stSelectbox'][contains(., 'Annotator to exclude')]//input"
    _click(browser, field)
    options = WebDriverWait(browser, 30).until(lambda d: [
        o for o in d.find_elements("xpath", "//*[@role='option']")  # type: ignore[attr-defined]
        if o.is_displayed()])
    # flagged first, and the careless participant (every score turned around) is flagged
    assert _pid("careless") in options[0].text, [o.text for o in options]
    options[0].click()
    reason = browser.find_element(  # type: ignore[attr-defined]
        "xpath", "//*[@data-testid='stTextInput'][contains(., 'Reason')]//input")
    reason.send_keys("failed the attention checks", Keys.ENTER)
    ask = "//button[contains(., 'Exclude (scores kept')]"
    # enabled once the page has the annotator and the reason (a rerun after each)
    WebDriverWait(browser, 60).until(lambda d: [
        b for b in d.find_elements("xpath", ask)  # type: ignore[attr-defined]
        if b.is_displayed() and b.is_enabled()])
    wait_idle(browser)
    _click(browser, ask)
    wait_for_text(browser, "Yes, exclude", timeout=60)
    assert _excluded(db) == 0  # Exclude only asks
    _click(browser, "//button[contains(., 'Yes, exclude')]")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _excluded(db):
        time.sleep(0.5)
    assert _excluded(db) > 0
    wait_idle(browser)
    screenshot(browser, f"researcher-1366-{STUDY}-excluded", settle=0.5)


def _choose(browser: object, label: str, option: str) -> None:
    """Pick ``option`` in the selectbox labelled ``label``."""
    from selenium.webdriver.support.ui import WebDriverWait

    _click(browser, f"//*[@data-testid='stSelectbox'][.//label[contains(., '{label}')]]//input")
    WebDriverWait(browser, 30).until(lambda d: [
        o for o in d.find_elements("xpath", "//*[@role='option']")  # type: ignore[attr-defined]
        if o.is_displayed() and o.text.strip() == option])[0].click()
    wait_idle(browser)


def _type(browser: object, label: str, text: str, *, enter: bool = True) -> None:
    """Type ``text`` into the text field labelled ``label`` (Enter keeps it; in a form, whose
    button sends it, Enter would submit the form)."""
    from selenium.webdriver.common.keys import Keys

    field = [f for f in browser.find_elements(  # type: ignore[attr-defined]
        "xpath", f"//*[@data-testid='stTextInput'][.//label[contains(., '{label}')]]//input")
        if f.is_displayed()][0]
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(text, *([Keys.ENTER] if enter else []))
    wait_idle(browser)


def _job_ends(browser: object, command: str, timeout: float = 240) -> str:
    """Wait until the Runs page shows the last job, ``command``, ended; return its state."""
    from selenium.webdriver.support.ui import WebDriverWait

    def ended(d: object) -> str | None:
        body = d.find_element("tag name", "body").text  # type: ignore[attr-defined]
        last = body.split("Last job", 1)[1] if "Last job" in body else ""
        state = last.split(")", 1)[0]  # " (pid N, ended (exit status C"
        return state if command in last[:600] and "ended" in state else None

    return str(WebDriverWait(browser, timeout).until(ended))


def _generate_and_judge_on_the_demo_corpus(browser: object, db: str,
                                           wait_for_text: Callable[..., None]) -> None:
    """Runs (docs/generation-and-judging.md, the demo corpus): a generation with the fake
    backend on the two demo meetings, then a judge over its answers; both end with status 0
    and the judge's scores are stored."""
    from sqlalchemy import func, select

    from db.models import Evaluator, Score
    from elitr_core.data.database import open_database, reading

    follow_nav_link(browser, "Runs")
    wait_for_text(browser, "Start a background job", timeout=180)
    wait_idle(browser)
    _choose(browser, "Backend", "fake")
    _choose(browser, "Split", "dev")
    _type(browser, "Model", "demo-model")
    _type(browser, "Meetings", "meeting_en_dev_001,meeting_en_dev_002")
    _click(browser, "//button[.//p[text()='Start']]")
    state = _job_ends(browser, "elitr_core generate")
    assert "exit status 0" in state, state
    _click(browser, "//*[@data-testid='stRadio']//label[contains(., 'judge')]")
    wait_idle(browser)
    _choose(browser, "Backend", "fake")
    _type(browser, "Judge model", "demo-judge")
    _type(browser, "Evaluator slug", "demo-judge")
    _type(browser, "Judged model", "demo-model")
    _click(browser, "//button[.//p[text()='Start']]")
    state = _job_ends(browser, "elitr_core judge")
    assert "exit status 0" in state, state
    screenshot(browser, "researcher-1366-runs-demo", settle=0.5)
    with reading(open_database(db)) as session:
        scored = session.execute(select(func.count()).select_from(Score).join(Evaluator)
                                 .where(Evaluator.slug == "demo-judge")).scalar_one()
    assert scored > 0


def _codes(browser: object) -> list[str]:
    """The texts of the page's code blocks (the links to copy are shown in one)."""
    return [c.text for c in browser.find_elements(  # type: ignore[attr-defined]
        "css selector", "[data-testid=stCode]") if c.is_displayed()]


def _create_a_study_and_get_its_links(browser: object, server: str,
                                      wait_for_text: Callable[..., None]) -> None:
    """Studies (docs/crowd-study.md): Create a silver study, its Prolific URL; then an
    annotator's personal link to it (Annotators tab), each in a block to copy."""
    from selenium.webdriver.support.ui import WebDriverWait

    follow_nav_link(browser, "Studies")
    wait_for_text(browser, "Create a study", timeout=180)
    wait_idle(browser)
    _click(browser, "//*[@role='tab'][contains(., 'Create a study')]")
    wait_for_text(browser, "Annotators per item", timeout=60)
    _type(browser, "Name", "walk-study")
    _click(browser, "//button[.//p[text()='Create study']]")
    wait_for_text(browser, "Study walk-study created", timeout=180)
    url = WebDriverWait(browser, 60).until(lambda d: [
        c for c in _codes(d) if "study=walk-study" in c])[0]
    assert url.startswith(server) and "PROLIFIC_PID={{%PROLIFIC_PID%}}" in url, url
    _click(browser, "//*[@role='tab'][contains(., 'Annotators')]")
    wait_for_text(browser, "Annotator name", timeout=60)
    _type(browser, "Annotator name", "expert-1", enter=False)
    _choose(browser, "Study the link opens", "walk-study")
    _click(browser, "//button[.//p[text()='Add annotator']]")
    wait_for_text(browser, "Personal link of expert-1", timeout=60)
    link = WebDriverWait(browser, 60).until(lambda d: [
        c for c in _codes(d) if "token=" in c])[0]
    assert link.startswith(f"{server}/?token=") and link.endswith("&study=walk-study"), link
    screenshot(browser, "researcher-1366-study-links", settle=0.5)
