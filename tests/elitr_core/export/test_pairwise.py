"""``judge --style battle|cream`` then the pairwise exports, end to end through the CLI."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest

from db.engine import get_engine
from db.runs import ScoreFilter
from db.transaction import reading
from elitr_core.cli.main import main
from elitr_core.export.pairwise import pairwise_frame, win_matrix
from elitr_core.vocab import EXPORT_COLUMNS
from tests.elitr_core.run_helpers import rows

MODELS = ("GPT-4", "Vicuna-13B-v1.5", "LongAlpaca-7B")
N_QUESTIONS = 130


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory, bundled_sqlite_template: Path) -> str:
    """The bundled data judged by a fake battle judge and a fake CREAM judge (3 models)."""
    import shutil

    target = tmp_path_factory.mktemp("pairwise") / "judged.db"
    shutil.copy(bundled_sqlite_template, target)
    url = f"sqlite:///{target}"
    common = ["--backend", "fake", "--judge-model", "fake-judge", "--split", "test2",
              "--setting", "qa", "--mode", "st", "--db", url]
    for model in MODELS:
        common += ["--model", model]
    assert main(["judge", "--style", "battle", "--evaluator", "battle", *common]) == 0
    assert main(["judge", "--style", "cream", "--evaluator", "cream", *common]) == 0
    return url


def export(url: str, *args: str, capsys: pytest.CaptureFixture[str]) -> pd.DataFrame:
    capsys.readouterr()
    assert main(["export", *args, "--db", url]) == 0
    return pd.read_csv(io.StringIO(capsys.readouterr().out))


def test_judge_summary_and_every_judgment_stored(judged: str) -> None:
    counts = dict(rows(judged, "SELECT e.slug, count(*) FROM pairwisejudgment p JOIN evaluator "
                               "e ON e.id = p.evaluator_id WHERE p.status = 'ok' GROUP BY e.slug"))
    assert counts == {"battle": N_QUESTIONS * 6, "cream": N_QUESTIONS * 6}


def test_pairwise_table_counts_match_the_stored_verdicts(
        judged: str, capsys: pytest.CaptureFixture[str]) -> None:
    table = export(judged, "pairwise", capsys=capsys)
    assert tuple(table.columns) == EXPORT_COLUMNS["pairwise"]
    assert sorted(set(zip(table["evaluator"], table["criterion"], strict=True))) == [
        ("battle", "verdict"), ("cream", "completeness"), ("cream", "conciseness")]
    assert len(table) == 9 and (table["n"] == 2 * N_QUESTIONS).all()
    assert (table["wins"] + table["ties"] + table["losses"] == table["n"]).all()
    assert (table["n_both_orders"] == N_QUESTIONS).all()
    # independent count straight from the table, oriented by model names
    sql = ("SELECT ua.model, ub.model, p.verdict FROM pairwisejudgment p "
           "JOIN evaluator e ON e.id = p.evaluator_id AND e.slug = 'battle' "
           "JOIN response ra ON ra.id = p.response_a_id JOIN run ua ON ua.id = ra.run_id "
           "JOIN response rb ON rb.id = p.response_b_id JOIN run ub ON ub.id = rb.run_id")
    wins: dict[tuple[str, str], int] = {}
    for a, b, verdict in rows(judged, sql):
        winner = {"a": a, "b": b}.get(verdict)
        if winner is not None:
            loser = b if winner == a else a
            wins[winner, loser] = wins.get((winner, loser), 0) + 1
    for row in table[table["evaluator"] == "battle"].itertuples():
        assert row.wins == wins.get((row.model_a, row.model_b), 0)
        assert row.losses == wins.get((row.model_b, row.model_a), 0)
    cream = table[table["criterion"] == "completeness"]
    assert cream["mean_a"].between(0, 1).all() and (cream["mean_a_ci_low"] <= cream["mean_a"]).all()
    assert table.loc[table["criterion"] == "verdict", "mean_a"].isna().all()


def test_rankings_win_rate_and_agreement(judged: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    elo = export(judged, "elo", "--source", "pairwise", capsys=capsys)
    assert tuple(elo.columns) == EXPORT_COLUMNS["elo-pairwise"] and len(elo) == 9
    assert ((elo["ci_low"] <= elo["rating"]) & (elo["rating"] <= elo["ci_high"])).all()
    bt = export(judged, "bradley-terry", "--criterion", "verdict", capsys=capsys)
    assert tuple(bt.columns) == EXPORT_COLUMNS["bradley-terry"] and len(bt) == 3
    assert bt["strength"].sum() == pytest.approx(0, abs=1e-5)  # CSV keeps 6 decimals
    rate = export(judged, "winrate", "--baseline", "GPT-4", "--evaluator", "battle",
                  capsys=capsys)
    assert tuple(rate.columns) == EXPORT_COLUMNS["winrate"]
    assert sorted(rate["model"]) == ["LongAlpaca-7B", "Vicuna-13B-v1.5"]
    by_hand = (rate["wins"] + rate["ties"] / 2) / rate["n"]
    assert by_hand.tolist() == pytest.approx(rate["win_rate"].tolist(), abs=1e-6)
    tau = export(judged, "pairwise-agreement", "--reference", "gold-human", capsys=capsys)
    assert tuple(tau.columns) == EXPORT_COLUMNS["pairwise-agreement"] and len(tau) == 6
    assert (tau["n_models"] == 3).all() and tau["tau"].between(-1, 1).all()


@pytest.mark.parametrize("method", ["mle", "median"])
def test_agreement_ranks_the_printed_ratings(judged: str, method: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """``export pairwise-agreement --elo M`` = scipy's tau-b between the ratings ``export elo
    --source pairwise --elo M`` and ``export bradley-terry`` print and the gold-human means
    over the battles' questions (1e-12)."""
    from scipy import stats

    options = ("--evaluator", "battle", "--criterion", "verdict", "--elo", method)
    elo = export(judged, "elo", "--source", "pairwise", *options, capsys=capsys)
    bt = export(judged, "bradley-terry", *options, capsys=capsys)
    tau = export(judged, "pairwise-agreement", *options, capsys=capsys).set_index("ranking")
    gold = export(judged, "leaderboard", "--split", "test2", "--setting", "qa", "--mode", "st",
                  "--evaluator", "gold-human", capsys=capsys).set_index("model")["mean"]
    for ranking, table, column in (("elo", elo, "rating"), ("bradley-terry", bt, "strength")):
        rated = table.set_index("model")[column]
        expected = stats.kendalltau(rated, gold[rated.index]).statistic
        assert tau.loc[ranking, "tau"] == pytest.approx(expected, abs=1e-12), ranking


def test_win_matrix_is_complementary(judged: str) -> None:
    from elitr_core.export.pairwise import pairwise_table

    with reading(get_engine(judged)) as session:
        df = pairwise_frame(session, ScoreFilter(evaluators=("cream",)))
    matrix = win_matrix(pairwise_table("pairwise", df), "cream", "completeness")
    assert list(matrix.index) == sorted(MODELS)
    for a in MODELS:
        for b in MODELS:
            if a != b:
                assert matrix.loc[a, b] + matrix.loc[b, a] == pytest.approx(1.0)


@pytest.mark.parametrize(("argv", "message"), [
    (["export", "winrate"], "export winrate needs --baseline MODEL"),
    (["export", "winrate", "--baseline", "GPT-9"], "baseline 'GPT-9' has no judged"),
    (["export", "leaderboard", "--source", "pairwise"], "--source pairwise applies to elo"),
    (["judge", "--backend", "fake", "--judge-model", "j", "--style", "gpt4", "--evaluator",
      "x", "--baseline", "GPT-4"], "--baseline and --pairs-per-question apply to --style"),
])
def test_one_line_errors(judged: str, argv: list[str], message: str,
                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv, "--db", judged]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
