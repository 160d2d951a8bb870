"""AppTest: the Battles page shows what the pairwise exports hold, byte for byte."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from db.engine import get_engine
from elitr_core.backends.fake import FakeBackend
from elitr_core.judging.pairs import PairwiseSpec
from elitr_core.judging.pairwise_runner import pairwise_judge_run
from tests.pages.analysis_support import (
    cli_export,
    download_bytes,
    messages,
    open_page,
    shared_copy,
)

MODELS = ("GPT-4", "Vicuna-13B-v1.5", "LongAlpaca-7B")


def judge_all(url: str) -> None:
    """A fake battle judge and a fake CREAM judge over three models on test2 QA-st."""
    for style in ("battle", "cream"):
        spec = PairwiseSpec(judge_model="fake-judge", style=style, evaluator=style,
                            models=MODELS, split="test2", setting="qa", mode="st")
        pairwise_judge_run(get_engine(url), spec, FakeBackend())


@pytest.fixture(scope="module")
def judged_sqlite(bundled_sqlite_template: Path,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The bundled data with :func:`judge_all`'s judgments, judged once for the tests that
    only read it (``analysis_support.shared_copy``)."""
    yield from shared_copy(bundled_sqlite_template, tmp_path_factory.mktemp("judged"),
                           judge_all)


@pytest.fixture
def app(judged_sqlite: str, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    return open_page(judged_sqlite, monkeypatch, "battles")


def test_battle_judge_tables_match_the_cli(app: AppTest, judged_sqlite: str,
                                          tmp_path: Path) -> None:
    assert not app.exception
    shown = messages(app)
    assert shown["error"] == [] and shown["info"] == []
    # the fake judge's verdicts come from a hash: it keeps its verdict under a swap of the
    # answers about one time in three, and the page says so above the ratings
    assert len(shown["warning"]) == 1
    assert shown["warning"][0].startswith("Position consistency of battle: 0.37 of 390")
    assert app.selectbox(key="battles.judge").options == ["battle", "cream"]
    assert app.radio(key="battles.criterion").options == ["verdict"]
    assert len(app.get("plotly_chart")) == 4  # win matrix, Elo, Bradley-Terry, win rate
    for key, table, options in (
            ("download.pairwise-verdict.csv", "pairwise", ["--criterion", "verdict"]),
            ("download.elo-pairwise-verdict.csv", "elo",
             ["--source", "pairwise", "--criterion", "verdict"]),
            ("download.bradley-terry-pairwise-verdict.csv", "bradley-terry",
             ["--criterion", "verdict"]),
            ("download.winrate-verdict.csv", "winrate",
             ["--baseline", "GPT-4", "--criterion", "verdict"]),
            ("download.pairwise-agreement-verdict.csv", "pairwise-agreement",
             ["--reference", "gold-human", "--criterion", "verdict"])):
        assert download_bytes(app, key) == cli_export(judged_sqlite, table,
                                                      tmp_path / f"{table}.csv", *options)
    # no key-fact view for a battle judge
    assert not [s for s in app.subheader if "Key facts" in s.value]


def test_cream_judge_shows_key_facts(app: AppTest) -> None:
    app.selectbox(key="battles.judge").set_value("cream").run()
    assert not app.exception and not app.error
    assert app.radio(key="battles.criterion").options == ["completeness", "conciseness"]
    assert [s for s in app.subheader if "Key facts" in s.value]
    facts = app.dataframe[-1].value
    assert list(facts.columns)[0] == "key_fact" and 1 <= len(facts) <= 4
    chosen = app.selectbox(key="battles.judgment")
    assert len(chosen.options) == 130 * 6  # every judgment of the CREAM judge
    app.radio(key="battles.criterion").set_value("conciseness").run()
    assert not app.exception and not app.error


def test_no_pairwise_judgment_is_a_warning(bundled_sqlite: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    app = open_page(bundled_sqlite, monkeypatch, "battles")
    assert not app.exception
    assert any("no pairwise judgment matches" in w.value for w in app.warning)


def test_a_judge_that_always_answers_a_is_flagged_above_the_ratings(
        bundled_sqlite: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A loopback judge answering [[A]] to every battle: the page warns with its position
    consistency (0.00) above the ratings, the ratings show no zero-width interval but the
    cause, and the downloads still equal the CLI's bytes."""
    from elitr_core.backends.openai_backend import OpenAIBackend
    from tests.elitr_core.backends.fake_openai_server import ServerScript, running_server

    spec = PairwiseSpec(judge_model="scripted", style="battle", evaluator="always-a",
                        models=MODELS, split="test2", setting="qa", mode="st")
    with running_server(ServerScript(reply=lambda m: "[[A]]", exact_reply=True)) as server:
        backend = OpenAIBackend("scripted", base_url=server.base_url, concurrency=16,
                                max_retries=0)
        pairwise_judge_run(get_engine(bundled_sqlite), spec, backend)
    app = open_page(bundled_sqlite, monkeypatch, "battles")
    assert not app.exception
    warnings = messages(app)["warning"]
    assert any("Position consistency of always-a: 0.00 of 390" in w for w in warnings)
    for table in app.dataframe:
        frame = table.value
        if "strength" in frame.columns or "rating" in frame.columns:
            assert frame["note"].str.contains("preferred the answer shown first").all()
    assert download_bytes(app, "download.bradley-terry-pairwise-verdict.csv") == cli_export(
        bundled_sqlite, "bradley-terry", tmp_path / "bt.csv", "--criterion", "verdict")
