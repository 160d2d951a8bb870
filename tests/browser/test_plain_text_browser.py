"""Imported names and texts are shown as text: no page makes the browser fetch an image or a
link written in an imported file (issue 19, item 5).

Markdown and HTML payloads (an image, a link, a raw ``<img>``, an autolink, a bare URL) pointing
at a local beacon HTTP server are imported as a meeting id, question, reference, model name,
response, evaluator slug, study name and annotator name, through the CLI as a user would. Then
Chromium visits every researcher page and the annotator's page; the beacon must receive nothing.
A control image loaded by the test itself proves the beacon would have seen a fetch.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from elitr_core.annotation.admin import add_annotator
from elitr_core.annotation.studies import StudySpec, create_study
from elitr_core.data.database import open_database, writing
from tests.browser.conftest import ROOT, running_server, screenshot

PAGES = ("", "meeting", "leaderboard", "agreement", "calibration", "drilldown", "judge_audit",
         "battles", "runs", "studies")


@pytest.fixture
def beacon() -> Iterator[tuple[str, list[str]]]:
    """A local HTTP server on 127.0.0.1 that records every path asked of it."""
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            hits.append(self.path)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()


def payload(base: str, tag: str, *, short: bool = False) -> str:
    """Markdown and HTML that fetch ``base/tag-...`` if rendered (``short``: fits 64 chars)."""
    if short:
        return f"![{tag}]({base}/{tag}-md.png)"
    return (f"{tag} ![i]({base}/{tag}-md.png) <img src=\"{base}/{tag}-html.png\"> "
            f"[l]({base}/{tag}-link) <{base}/{tag}-auto> {base}/{tag}-bare "
            f"<iframe src=\"{base}/{tag}-frame\"></iframe>")


def _import(url: str, base: str, folder: Path) -> tuple[str, str]:
    """Import the payloads (through the CLI); return the meeting id and an annotator token."""
    meeting = f"<img src={base}/meeting>"  # the meeting id (sorted first among meetings)
    question = {"id": "1", "question-type": "who", "answer-position": "S",
                "question": payload(base, "question"),
                "groundtruth-answer": payload(base, "reference")}
    (folder / "elitr-bench-qa_test2.json").write_text(json.dumps(
        {"split": "test2", "meetings": [{"id": meeting, "questions": [question]}]}))
    responses = [{"model": model, "generated-response": payload(base, "response"),
                  "gpt-4-eval_score": score}
                 for model, score in ((payload(base, "model", short=True), "7"),
                                      ("GPT-4", "5"))]
    (folder / "elitr-bench-qa_test2_st_gpt-4-eval.json").write_text(json.dumps(
        {"split": "test2", "meetings": [{"id": meeting,
                                         "questions": [{**question,
                                                        "generated-responses": responses}]}]}))
    scores = folder / "scores.csv"
    scores.write_text("meeting,question_id,split,setting,mode,model,evaluator,score\n" + "".join(
        f"\"{meeting}\",1,test2,qa,st,\"{model}\",\"{payload(base, 'judge', short=True)}\",{v}\n"
        for model, v in ((payload(base, "model", short=True), 4), ("GPT-4", 8))))
    for path in ("elitr-bench-qa_test2.json", "elitr-bench-qa_test2_st_gpt-4-eval.json",
                 "scores.csv"):
        subprocess.run([sys.executable, "-m", "elitr_core", "import", str(folder / path),
                        "--db", url], cwd=ROOT, check=True, capture_output=True)
    study = f"![s]({base}/study.png)"
    with writing(open_database(url)) as session:
        create_study(session, StudySpec(name=study, per_item=1, split="test2", setting="qa",
                                        mode="st", meetings=(meeting,)))
        token = add_annotator(session, payload(base, "annotator", short=True), "silver")
    return meeting, token


def _links_to(driver: object, base: str) -> list[str]:
    """The links (``a``), images, frames and sources of the page that point at ``base``."""
    elements = driver.find_elements(  # type: ignore[attr-defined]
        "css selector", f"a[href^='{base}'], [src^='{base}'], [srcset*='{base}']")
    return [e.get_attribute("outerHTML")[:120] for e in elements]


def _settle(driver: object, wait: Callable[..., None], *texts: str) -> None:
    from selenium.webdriver.support.wait import WebDriverWait

    wait(driver, *texts)
    WebDriverWait(driver, 60).until(lambda d: not d.find_elements(  # type: ignore[attr-defined]
        "css selector", '[data-testid="stStatusWidget"]'))
    time.sleep(1.5)  # images and frames load after the text is drawn


def test_no_page_fetches_what_an_imported_file_links(
    bundled_sqlite: str, tmp_path: Path, browser: object, beacon: tuple[str, list[str]],
    wait_for_text: Callable[..., None],
) -> None:
    base, hits = beacon
    _, token = _import(bundled_sqlite, base, tmp_path)
    with running_server(bundled_sqlite, tmp_path / "streamlit.log") as url:
        for page in PAGES:
            browser.get(f"{url}/{page}")  # type: ignore[attr-defined]
            _settle(browser, wait_for_text, "Work")  # the navigation bar is drawn
            screenshot(browser, f"plain-text-{page or 'home'}", settle=0.5)
            body = browser.find_element("tag name", "body").text  # type: ignore[attr-defined]
            assert "Traceback" not in body
            assert not _links_to(browser, base), page
        browser.get(f"{url}/studies")  # type: ignore[attr-defined]
        _settle(browser, wait_for_text, "Quality control")
        screenshot(browser, "plain-text-studies-status", settle=0.5)
        browser.get(f"{url}/?token={token}")  # type: ignore[attr-defined]
        _settle(browser, wait_for_text, "Scoring:", "/study.png", "Start scoring")
        assert not _links_to(browser, base)  # the walkthrough, over the study's name
        # a first entry's page is the walkthrough alone: the item is drawn when it closes
        browser.find_element(  # type: ignore[attr-defined]
            "css selector", ".st-key-annotate-tour-done button").click()
        _settle(browser, wait_for_text, "question-html.png")
        screenshot(browser, "plain-text-annotate", settle=0.5)
        assert not _links_to(browser, base)
        # the payloads are there, as characters (bare links carry an invisible word joiner)
        body = browser.find_element(  # type: ignore[attr-defined]
            "tag name", "body").text.replace("\u2060", "")
        assert f"![s]({base}/study.png)" in body
        assert f"<img src=\"{base}/question-html.png\">" in body
        assert f"![i]({base}/response-md.png)" in body
        assert hits == [], f"the browser fetched imported links: {hits}"
        # control: an image the page itself asks for does reach the beacon
        browser.execute_script(  # type: ignore[attr-defined]
            "const i = new Image(); i.src = arguments[0]; document.body.appendChild(i);",
            f"{base}/control.png")
        deadline = time.monotonic() + 10
        while not hits and time.monotonic() < deadline:
            time.sleep(0.1)
        assert hits == ["/control.png"]
