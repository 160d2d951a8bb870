"""The Runs page in headless Chromium: runs with progress, judges and unparsable judgments."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from db.engine import get_engine
from elitr_core.backends.fake import FakeBackend
from elitr_core.generation.runs import GenerationSpec, generate_run
from elitr_core.judging.runner import JudgeSpec, judge_run
from elitr_core.passes.records import NullProgress
from tests.browser.conftest import follow_nav_link, screenshot
from tests.elitr_core.run_helpers import MEETINGS, set_transcripts


class _StopAfter(NullProgress):
    def __init__(self, n: int) -> None:
        self.n, self.count = n, 0

    def advance(self, count: int = 1) -> None:
        self.count += count
        if self.count >= self.n:
            raise KeyboardInterrupt


@pytest.fixture
def runs_db(bundled_sqlite: str) -> str:
    set_transcripts(bundled_sqlite)
    engine = get_engine(bundled_sqlite)
    for model, mode in (("demo-model", "st"), ("demo-model", "mt")):
        generate_run(engine, GenerationSpec(model=model, setting="qa", mode=mode, split="test2",
                                            meetings=MEETINGS), FakeBackend())
    with pytest.raises(KeyboardInterrupt):
        generate_run(engine, GenerationSpec(model="killed-model", setting="qa", mode="st",
                                            split="test2", meetings=MEETINGS),
                     FakeBackend(), progress=_StopAfter(9))
    judge_run(engine, JudgeSpec(judge_model="demo-judge", style="gpt4", evaluator="demo-judge",
                                models=("demo-model",)), FakeBackend(unparsable_rate=0.1))
    return bundled_sqlite


def test_runs_page_in_chromium(runs_db: str, streamlit_server: str, browser: object,
                               wait_for_text: Callable[..., None]) -> None:

    browser.get(streamlit_server)  # type: ignore[attr-defined]
    wait_for_text(browser, "ELITR-Bench dashboard")
    follow_nav_link(browser, "Runs")
    wait_for_text(browser, "Generation runs", "LLM judges", "Unparsable judgments",
                  "Start a background job")
    path = screenshot(browser, "runs", settle=3.0)
    assert path.stat().st_size > 10_000
    body = browser.find_element("tag name", "body").text  # type: ignore[attr-defined]
    assert "Traceback" not in body and "Error" not in body
