"""The states a pairwise tournament passes through, built through the CLI on SQLite and
PostgreSQL: a loopback OpenAI-compatible judge (the real ``openai`` client) scripted to tie
every battle, to always answer ``[[A]]``, to answer on one question only, to prefer one model
always, or judged in two groups of models that never met; then the exports.

Each state used to print zero-width intervals without a note, refuse with the wrong cause,
or give circular advice (issue 33, point 8)."""

from __future__ import annotations

import io
from collections.abc import Callable

import pandas as pd
import pytest

from elitr_core.backends.base import Message
from elitr_core.cli.main import main
from tests.elitr_core.backends.fake_openai_server import ServerScript, running_server
from tests.elitr_core.judging.test_pairwise_runner import answers
from tests.elitr_core.run_helpers import rows

THREE = ("GPT-4", "Vicuna-13B-v1.5", "LongAlpaca-7B")
#: the reference answer of meeting_en_test2_001 question 1 (the one question of a state)
ONE_REFERENCE = "Preparation for a workshop or conference event on automatic text summarization."
N_QUESTIONS = 130  # test2


@pytest.fixture
def bundled(bundled_db: str) -> str:
    return bundled_db


def judge(url: str, reply: Callable[[list[Message]], str], models: tuple[str, ...],
          evaluator: str = "battle") -> None:
    """``judge --style battle`` of ``models`` on test2 QA-st, over a loopback server."""
    with running_server(ServerScript(reply=reply, exact_reply=True)) as server:
        argv = ["judge", "--backend", "openai", "--base-url", server.base_url,
                "--judge-model", "scripted", "--style", "battle", "--evaluator", evaluator,
                "--split", "test2", "--setting", "qa", "--mode", "st", "--concurrency", "16",
                "--max-retries", "0", "--db", url]
        for model in models:
            argv += ["--model", model]
        assert main(argv) == 0


def export(url: str, capsys: pytest.CaptureFixture[str], *args: str) -> pd.DataFrame:
    capsys.readouterr()
    assert main(["export", *args, "--db", url]) == 0, capsys.readouterr().err
    return pd.read_csv(io.StringIO(capsys.readouterr().out), keep_default_na=False,
                       na_values=[""])


def refused(url: str, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert main(["export", *args, "--db", url]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    return err


def texts_of(url: str, model: str) -> set[str]:
    return {r[0].strip() for r in rows(url, "SELECT r.text FROM response r JOIN run u ON "
                                            "u.id = r.run_id WHERE u.model = :m AND "
                                            "u.split = 'test2' AND u.setting = 'qa' AND "
                                            "u.mode = 'st'", m=model)}


def test_every_battle_a_tie(bundled: str, capsys: pytest.CaptureFixture[str]) -> None:
    judge(bundled, lambda m: "Both are as good. [[C]]", THREE)
    for table, args in (("bradley-terry", ()), ("elo", ("--source", "pairwise"))):
        out = export(bundled, capsys, table, *args)
        assert len(out) == 3 and out["ci_low"].isna().all() and out["ci_high"].isna().all()
        assert out["note"].str.startswith(
            f"no interval: every one of the {6 * N_QUESTIONS} matches is a tie").all()
    rate = export(bundled, capsys, "winrate", "--baseline", "GPT-4")
    assert rate["ci_low"].isna().all() and rate["note"].str.contains("is 0.5").all()


def test_a_judge_that_always_answers_a(bundled: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Every pair wins once in each order: strengths 0 and win rates 0.5 in every resample.
    The intervals are empty with the position bias named, and the pairwise table shows the
    position consistency of 0."""
    judge(bundled, lambda m: "The first one. [[A]]", THREE)
    pairs = export(bundled, capsys, "pairwise")
    assert (pairs["position_consistency"] == 0).all() and (pairs["n_unparsed"] == 0).all()
    bt = export(bundled, capsys, "bradley-terry")
    assert bt["ci_low"].isna().all() and bt["strength"].abs().max() < 1e-6
    assert bt["note"].str.contains("preferred the answer shown first \\(\\[\\[A\\]\\]\\) in "
                                   f"all {6 * N_QUESTIONS} decided judgments").all()
    rate = export(bundled, capsys, "winrate", "--baseline", "GPT-4")
    assert (rate["win_rate"] == 0.5).all() and rate["ci_low"].isna().all()
    assert rate["note"].str.contains("preferred the answer shown first").all()
    median = export(bundled, capsys, "elo", "--source", "pairwise", "--elo", "median")
    assert median["ci_low"].isna().all() and median["ci_high"].isna().all()
    assert median["note"].str.contains("preferred the answer shown first").all()


def test_battles_on_one_question_and_unreadable_verdicts_counted(
        bundled: str, capsys: pytest.CaptureFixture[str]) -> None:
    def one_question(messages: list[Message]) -> str:
        if ONE_REFERENCE not in messages[-1]["content"]:
            return "I cannot decide."  # no verdict: stored unparsed
        first, second = answers(messages)
        return "[[A]]" if len(first) >= len(second) else "[[B]]"

    judge(bundled, one_question, THREE[:2])
    pairs = export(bundled, capsys, "pairwise")
    assert pairs["n"].tolist() == [2] and pairs["n_unparsed"].tolist() == [2 * N_QUESTIONS - 2]
    elo = export(bundled, capsys, "elo", "--source", "pairwise", "--elo", "median")
    assert elo["ci_low"].isna().all()
    assert elo["note"].str.contains("all matches come from 1 question").all()


def test_groups_that_never_met(bundled: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Two judge runs of one evaluator: {GPT-4, GPT-3.5} and {LongAlpaca-7B,
    Vicuna-13B-v1.5}. Every model won, so the old cause ("never won nor drew") was wrong; the
    groups are now named and rated apart, by every Elo and by Bradley-Terry, and the ranking
    agreement says why it has no tau instead of pointing back to elo (the one evaluator's rows
    empty: the table is refused with that cause)."""
    def longer(messages: list[Message]) -> str:
        first, second = answers(messages)
        return "[[A]]" if len(first) >= len(second) else "[[B]]"

    judge(bundled, longer, ("GPT-4", "GPT-3.5"))
    judge(bundled, longer, ("LongAlpaca-7B", "Vicuna-13B-v1.5"))
    groups = "never met"
    for args in (("elo", "--source", "pairwise"),
                 ("elo", "--source", "pairwise", "--elo", "median"), ("bradley-terry",)):
        out = export(bundled, capsys, *args)
        assert len(out) == 4 and out["note"].str.contains(groups).all(), args
        first, second = out.iloc[:2], out.iloc[2:]
        assert set(first["model"]) in ({"GPT-4", "GPT-3.5"}, {"LongAlpaca-7B",
                                                             "Vicuna-13B-v1.5"})
        assert first["note"].str.contains("group 1 of 2").all()
        assert second["note"].str.contains("group 2 of 2").all()
        if args[0] == "bradley-terry":  # each group centred on its own
            assert abs(first["strength"].sum()) < 1e-5 and abs(second["strength"].sum()) < 1e-5
    err = refused(bundled, capsys, "pairwise-agreement", "--reference", "gpt-4")
    assert "comparison graph is disconnected" in err and "use elo" not in err


def test_a_model_that_never_won(bundled: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The judge always prefers GPT-4: the refusal names Vicuna-13B-v1.5 and offers the
    order-based Elo, which then rates both (no circle back to Bradley-Terry)."""
    gpt4 = texts_of(bundled, "GPT-4")

    def prefers_gpt4(messages: list[Message]) -> str:
        first, _ = answers(messages)
        return "[[A]]" if first.strip() in gpt4 else "[[B]]"

    judge(bundled, prefers_gpt4, ("GPT-4", "Vicuna-13B-v1.5"))
    for args in (("bradley-terry",), ("elo", "--source", "pairwise")):
        err = refused(bundled, capsys, *args)
        assert "Vicuna-13B-v1.5 never won nor drew against the other models" in err
        assert "export elo --elo median" in err and "use elo instead" not in err
    out = export(bundled, capsys, "elo", "--source", "pairwise", "--elo", "median")
    assert out["model"].tolist() == ["GPT-4", "Vicuna-13B-v1.5"]
