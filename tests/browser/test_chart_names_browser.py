"""Names reach charts and figure downloads as text, never as markup (issue 27, item 2).

Plotly draws a subset of HTML in every text of a figure: a model named
``<a href="https://example.org/">GPT-5</a>`` was a live link in the Leaderboard chart and in
its SVG download (``xlink:href``, which the plain-text test's ``a[href^=...]`` missed), a
``<span style="font-size:90px">`` was drawn 90 px tall. Here two models and an evaluator of the
bundled data carry such names (renamed in the database, as an import of such files stores
them); Chromium visits every page that draws names, and the DOM, its SVG and the SVG and PNG
downloads must hold no link, style, script or styled span from them, while the names are
shown as written.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from xml.etree import ElementTree

from tests.browser.conftest import SCREENSHOTS, running_server, screenshot

LINK_MODEL = '<a href="https://example.org/m">Vicuna</a>'
BIG_MODEL = '<span style="font-size:90px">Long</span>'
LINK_JUDGE = '<a href="https://example.org/e">prom</a><script>window.pwned=1</script>'
PAGES = ("leaderboard", "agreement", "calibration", "drilldown", "judge_audit", "battles")

#: links, styles and scripts that came from the names, in the page and in its SVGs
FOUND = r"""
const bad = [];
for (const el of document.querySelectorAll('*')) {
  const href = (el.getAttribute('href') || '') +
      (el.getAttributeNS('http://www.w3.org/1999/xlink', 'href') || '');
  if (href.includes('example.org')) bad.push('href: ' + el.outerHTML.slice(0, 120));
  // the name's own style (a layout box may well be 190px or 390px wide: not from a name)
  if (/font-size:\s*90px/.test(el.getAttribute('style') || ''))
    bad.push('style: ' + el.tagName + ' ' + el.getAttribute('style'));
  if (el.tagName.toLowerCase() === 'script' && el.textContent.includes('pwned'))
    bad.push('script');
}
if (window.pwned) bad.push('ran');
return bad;
"""


def _rename(db: str) -> None:
    """Give two models and an evaluator hostile names (as an import of such files would)."""
    with sqlite3.connect(db.removeprefix("sqlite:///")) as conn:
        conn.execute("UPDATE run SET model = ? WHERE model = 'Vicuna-7B-v1.5'", (LINK_MODEL,))
        conn.execute("UPDATE run SET model = ? WHERE model = 'LongChat-7B-v1.5'", (BIG_MODEL,))
        conn.execute("UPDATE evaluator SET slug = ? WHERE slug = 'prometheus'", (LINK_JUDGE,))


def _settle(driver: object, wait: Callable[..., None]) -> None:
    from selenium.webdriver.support.wait import WebDriverWait

    wait(driver, "Work")  # the navigation bar's last section: the app is drawn
    WebDriverWait(driver, 90).until(lambda d: not d.find_elements(  # type: ignore[attr-defined]
        "css selector", '[data-testid="stStatusWidget"]'))
    deadline = time.monotonic() + 30  # plotly draws its SVG after the text
    while time.monotonic() < deadline and not driver.find_elements(  # type: ignore[attr-defined]
            "css selector", ".js-plotly-plot .main-svg"):
        time.sleep(0.5)
    time.sleep(1.5)


def _download(driver: object, folder: Path, label: str) -> Path:
    """Click the first figure download button ``label`` (PNG/SVG); the file it saved."""
    from selenium.webdriver.support.ui import WebDriverWait

    xpath = f"//div[@data-testid='stDownloadButton']//button[contains(., '{label}')]"
    button = WebDriverWait(driver, 60).until(
        lambda d: d.find_elements("xpath", xpath))[0]  # type: ignore[attr-defined]
    before = set(folder.iterdir())
    driver.execute_script(  # type: ignore[attr-defined]
        "arguments[0].scrollIntoView({block: 'center'});", button)  # below the top bar
    button.click()  # type: ignore[attr-defined]
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        new = [p for p in set(folder.iterdir()) - before if not p.name.endswith(".crdownload")]
        if new:
            return new[0]
        time.sleep(0.3)
    raise AssertionError(f"no {label} download")


def test_no_name_reaches_a_chart_as_markup(bundled_sqlite: str, tmp_path: Path,
                                           browser: object,
                                           wait_for_text: Callable[..., None]) -> None:
    _rename(bundled_sqlite)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    browser.execute_cdp_cmd(  # type: ignore[attr-defined]
        "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    svgs: dict[str, str] = {}
    with running_server(bundled_sqlite, tmp_path / "streamlit.log") as url:
        for page in PAGES:
            browser.get(f"{url}/{page}")  # type: ignore[attr-defined]
            _settle(browser, wait_for_text)
            screenshot(browser, f"chart-names-{page}", settle=0.5)
            assert browser.execute_script(FOUND) == [], page  # type: ignore[attr-defined]
            if browser.find_elements(  # type: ignore[attr-defined]
                    "xpath", "//div[@data-testid='stDownloadButton']//button[contains(., 'SVG')]"):
                svgs[page] = _download(browser, downloads, "SVG").read_text()
                assert _markup(svgs[page]) == [], page
        browser.get(f"{url}/leaderboard")  # type: ignore[attr-defined]
        _settle(browser, wait_for_text)
        # the names are there, as written, in the chart's own SVG text
        svg_text = browser.execute_script(  # type: ignore[attr-defined]
            "return [...document.querySelectorAll('.js-plotly-plot .main-svg')]"
            ".map(s => s.textContent).join(' ')")
        assert LINK_MODEL in svg_text and BIG_MODEL in svg_text
        svg = svgs["leaderboard"]
        png = _download(browser, downloads, "PNG").read_bytes()
    (SCREENSHOTS / "chart-names-leaderboard.svg").write_text(svg)  # to look at
    assert png.startswith(b"\x89PNG") and b"example.org" not in png
    assert _markup(svg) == []
    assert {"leaderboard", "agreement", "calibration", "drilldown"} <= set(svgs), set(svgs)
    assert LINK_MODEL in "".join(ElementTree.fromstring(svg).itertext())  # as characters


def _markup(svg: str) -> list[str]:
    """Links, scripts and 90 px styles among the elements and attributes of an SVG."""
    found = []
    for element in ElementTree.fromstring(svg).iter():
        tag = element.tag.rsplit("}", 1)[-1]
        if tag in {"a", "script"}:
            found.append(tag)
        for name, value in element.attrib.items():
            if name.rsplit("}", 1)[-1] == "href" and "example.org" in value or \
                    name == "style" and "font-size:90px" in value.replace(" ", ""):
                found.append(f"{tag} {name}={value[:60]}")
    return found
