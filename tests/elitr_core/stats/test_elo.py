"""Elo (hand-worked matches; the maximum-likelihood Elo against FastChat's logistic regression
in scikit-learn, 1e-4 Elo points), pair construction, Bradley-Terry (closed form and MLE)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats.elo import (
    bradley_terry,
    bt_counts,
    bt_fit,
    elo,
    elo_pass,
    matches,
)
from elitr_core.vocab import EXPORT_COLUMNS
from tests.elitr_core.stats.synthetic import bundled, frame, random_scores, row


def three_matches() -> pd.DataFrame:
    """q1: A 9 beats B 5; q2: B 6 draws C 6; q3: A 2 loses to C 7 (A listed first)."""
    return frame([
        row(question_id="1", model="A", score=9.0), row(question_id="1", model="B", score=5.0),
        row(question_id="2", model="B", score=6.0), row(question_id="2", model="C", score=6.0),
        row(question_id="3", model="A", score=2.0), row(question_id="3", model="C", score=7.0),
    ])


def test_matches_in_question_order_with_outcomes() -> None:
    got = matches(three_matches())
    assert got[["model_a", "model_b", "s"]].values.tolist() == [
        ["A", "B", 1.0], ["B", "C", 0.5], ["A", "C", 0.0],
    ]


def test_elo_hand_worked_three_matches() -> None:
    # K = 32, all start at 1000; E_a = 1 / (1 + 10^((R_b - R_a) / 400))
    # 1) A-B, A wins: E_A = 0.5 -> A = 1000 + 32 * 0.5 = 1016, B = 984
    # 2) B-C draw: E_B = 1 / (1 + 10^(16/400)) = 0.476990 -> d = 32 * 0.023010 = 0.736307
    #    B = 984.736307, C = 999.263693
    # 3) A-C, C wins: E_A = 1 / (1 + 10^((999.263693 - 1016)/400)) = 0.524067
    #    d = -32 * 0.524067 = -16.770140 -> A = 999.229860, C = 1016.033833
    table = elo(three_matches(), n_bootstrap=0, point="order")
    assert tuple(table.columns) == EXPORT_COLUMNS["elo"]
    rating = table.set_index("model")["rating"]
    assert rating["A"] == pytest.approx(999.229860, abs=1e-5)
    assert rating["B"] == pytest.approx(984.736307, abs=1e-5)
    assert rating["C"] == pytest.approx(1016.033833, abs=1e-5)
    assert table["model"].tolist() == ["C", "A", "B"]  # best first
    assert table["ci_low"].isna().all() and table["ci_low"].dtype == "Float64"


def test_pairs_match_a_naive_reference() -> None:
    df = random_scores(30, ["A", "B", "C", "D"], ["gpt-4"], seed=1)
    # drop some responses so that questions have 2, 3 or 4 models
    df = df.drop(index=df.index[::7]).reset_index(drop=True)
    order = list(pd.unique(df["model"]))  # models pair up in order of first appearance
    assert order[0] == "B"  # the first A response was dropped
    expected = []
    for _, rows in df.groupby("question_id", sort=False):
        scores = dict(zip(rows["model"], rows["score"], strict=True))
        for a, b in itertools.combinations(order, 2):
            if a in scores and b in scores:
                s = 1.0 if scores[a] > scores[b] else 0.0 if scores[a] < scores[b] else 0.5
                expected.append([a, b, s])
    assert matches(df)[["model_a", "model_b", "s"]].values.tolist() == expected


def test_no_match_across_seeds_or_evaluators() -> None:
    df = frame([
        row(model="A", seed=2023.0, score=9.0), row(model="B", seed=2024.0, score=1.0),
        row(model="A", evaluator="prometheus", score=4.0),
        row(model="B", evaluator="gpt-4", question_id="2", score=4.0),
    ])
    with pytest.raises(DegenerateDataError, match="two models"):
        elo(df)


def test_bootstrap_is_seeded_permutation_percentiles() -> None:
    df = random_scores(20, ["A", "B", "C"], ["gpt-4"], seed=2)
    table = elo(df, n_bootstrap=30, seed=7, point="median").set_index("model")
    played = matches(df)
    names = pd.unique(pd.concat([played["model_a"], played["model_b"]]))
    code = {m: i for i, m in enumerate(names)}
    a, b = played["model_a"].map(code).to_numpy(), played["model_b"].map(code).to_numpy()
    s = played["s"].to_numpy()
    rng = np.random.default_rng(7)
    boot = []
    for _ in range(30):
        p = rng.permutation(len(s))
        boot.append(elo_pass(a[p].tolist(), b[p].tolist(), s[p].tolist(), 3))
    low, high = np.percentile(np.array(boot), [2.5, 97.5], axis=0)
    for m, i in code.items():
        assert table.loc[m, "ci_low"] == pytest.approx(low[i], abs=1e-9)
        assert table.loc[m, "ci_high"] == pytest.approx(high[i], abs=1e-9)
    assert (table["note"] == "").all()
    # one pass: Elo is zero-sum, the ratings always add up to n_models * initial
    order = elo(df, n_bootstrap=30, seed=7, point="order")
    assert order["rating"].sum() == pytest.approx(3000.0, abs=1e-8)
    assert elo(df, n_bootstrap=30, seed=7).equals(elo(df, n_bootstrap=30, seed=7))
    with pytest.raises(UserError, match="mle, median or order"):
        elo(df, point="mean")


@pytest.mark.parametrize("point", ["mle", "median"])
def test_all_draws_leave_every_rating_at_initial_without_a_zero_width_interval(
        point: str) -> None:
    """Every resample and every match order gives 1500: the interval [1500, 1500] would
    claim a certainty the data do not give; it is empty and the note says why."""
    df = random_scores(6, ["A", "B", "C"], ["gpt-4"]).assign(score=5.0)
    table = elo(df, n_bootstrap=5, initial=1500, point=point)
    assert np.allclose(table["rating"].to_numpy(dtype=float), 1500)
    assert table["ci_low"].isna().all() and table["ci_high"].isna().all()
    assert table["note"].str.startswith("no interval: every one of the 18 matches is a "
                                        "tie").all()


def test_elo_degenerate_inputs() -> None:
    with pytest.raises(DegenerateDataError):
        elo(frame([]))
    with pytest.raises(DegenerateDataError, match="two models"):
        elo(frame([row(question_id=str(q)) for q in range(5)]))  # a single model
    with pytest.raises(UserError, match="no score"):
        elo(three_matches(), evaluator="prometheus")
    with pytest.raises(UserError):
        elo(three_matches(), n_bootstrap=-1)
    with pytest.raises(DegenerateDataError):
        elo(frame([row(score=np.nan), row(model="B", score=np.nan)]))


def test_elo_skips_evaluators_without_matches() -> None:
    df = pd.concat([three_matches(), frame([row(evaluator="prometheus", score=4.0)])])
    table = elo(df, n_bootstrap=0)
    assert set(table["evaluator"]) == {"gpt-4"}
    assert table.attrs["skipped"] == ["prometheus"]


def two_player_frame() -> pd.DataFrame:
    """A beats B 3 times, loses once, draws once."""
    outcomes = [(9.0, 1.0), (8.0, 2.0), (7.0, 3.0), (2.0, 6.0), (5.0, 5.0)]
    return frame([
        row(question_id=str(q), model=m, score=s)
        for q, (sa, sb) in enumerate(outcomes)
        for m, s in (("A", sa), ("B", sb))
    ])


def test_bradley_terry_two_player_closed_form() -> None:
    # draws count half: wins A = 3.5, B = 1.5; MLE P(A beats B) = 3.5 / 5 = 0.7
    bt = bradley_terry(two_player_frame()).set_index("model")["strength"]
    assert bt["A"] - bt["B"] == pytest.approx(np.log(0.7 / 0.3), abs=1e-8)
    assert bt.sum() == pytest.approx(0.0, abs=1e-12)


def test_bradley_terry_cyclic_three_players_are_equal() -> None:
    # A beats B 2-1, B beats C 2-1, C beats A 2-1: by symmetry every strength is 0
    wins = np.array([[0, 2, 1], [1, 0, 2], [2, 1, 0]], dtype=float)
    assert np.allclose(bt_fit(wins, wins + wins.T), 0.0, atol=1e-9)


def test_bradley_terry_matches_direct_likelihood_maximisation() -> None:
    wins = np.array([[0, 4, 6], [2, 0, 3], [1, 5, 0]], dtype=float)
    played = wins + wins.T

    def neg_loglik(free: np.ndarray) -> float:
        theta = np.r_[free, -free.sum()]
        diff = theta[:, None] - theta[None, :]
        return float(np.sum(wins * np.logaddexp(0.0, -diff)))

    ref = optimize.minimize(neg_loglik, np.zeros(2), method="BFGS", options={"gtol": 1e-10}).x
    assert np.allclose(bt_fit(wins, played), np.r_[ref, -ref.sum()], atol=1e-5)


def test_bt_counts_from_matches() -> None:
    wins, played = bt_counts(np.array([0, 0, 1]), np.array([1, 1, 0]), np.array([1, 0.5, 1]), 2)
    # A-B: A wins, draw; B-A: B wins -> A: 1 + 0.5 = 1.5, B: 0.5 + 1 = 1.5
    assert wins.tolist() == [[0, 1.5], [1.5, 0]] and played.tolist() == [[0, 3], [3, 0]]


def test_bradley_terry_degenerate() -> None:
    with pytest.raises(DegenerateDataError, match="strongly connected"):
        bradley_terry(three_matches().query("question_id == '1'"))  # B never wins
    with pytest.raises(DegenerateDataError):
        bradley_terry(frame([row()]))


# ---- bundled ELITR-Bench data -------------------------------------------------------------

def test_bundled_rankings_put_gpt4_first() -> None:
    df = bundled().query("setting == 'qa' and mode == 'st' and split == 'test2'")
    table = elo(df, "gpt-4", n_bootstrap=20)
    assert len(table) == 9
    assert table["rating"].sum() == pytest.approx(9000.0, abs=1e-6)
    assert (table["ci_low"] <= table["ci_high"]).all()
    bt = bradley_terry(df)
    assert set(bt["evaluator"]) == {"gpt-4", "prometheus", "gold-human", "silver-human"}
    for _, strengths in bt.groupby("evaluator"):
        assert strengths.iloc[0]["model"] == "GPT-4"


def test_bradley_terry_skips_evaluators_without_matches() -> None:
    df = pd.concat([two_player_frame(), frame([row(evaluator="prometheus", score=4.0)])])
    bt = bradley_terry(df)
    assert set(bt["evaluator"]) == {"gpt-4"} and bt.attrs["skipped"] == ["prometheus"]


def test_median_point_lies_inside_its_interval() -> None:
    """The median over permutations is inside the percentile interval, unlike one pass."""
    from elitr_core.stats.elo import elo as elo_ratings

    df = bundled()
    df = df[(df["split"] == "test2") & (df["setting"] == "qa") & (df["mode"] == "st")]
    out = elo_ratings(df, "gpt-4", n_bootstrap=50, point="median")
    assert ((out["ci_low"] <= out["rating"]) & (out["rating"] <= out["ci_high"])).all()
    assert out.iloc[0]["model"] == "GPT-4"


def fastchat_mle_elo(played: pd.DataFrame) -> pd.Series:
    """FastChat's ``compute_mle_elo`` (Chatbot Arena): logistic regression on +-ln(10) with
    every match twice, a tie a win in the first copy and a loss in the second; 400 * coef +
    1000, here centred to mean 1000 (the fit leaves the mean free)."""
    from sklearn.linear_model import LogisticRegression

    models = pd.Index(pd.unique(pd.concat([played["model_a"], played["model_b"]])))
    both = pd.concat([played, played], ignore_index=True)
    x = np.zeros((len(both), len(models)))
    x[np.arange(len(both)), models.get_indexer(both["model_a"])] = np.log(10)
    x[np.arange(len(both)), models.get_indexer(both["model_b"])] = -np.log(10)
    y = (both["s"] == 1.0).to_numpy(float)
    tie = (both["s"] == 0.5).to_numpy().copy()
    tie[len(tie) // 2:] = False
    y[tie] = 1.0
    fit = LogisticRegression(fit_intercept=False, C=np.inf, tol=1e-12, max_iter=10_000)
    coef = fit.fit(x, y).coef_[0]
    return pd.Series(1000 + 400 * (coef - coef.mean()), index=models)


def test_mle_elo_equals_fastchat_and_no_seed_moves_it() -> None:
    df = bundled().query("setting == 'qa' and mode == 'st' and split == 'test2'")
    table = elo(df, "gpt-4", n_bootstrap=20, seed=1).set_index("model")
    reference = fastchat_mle_elo(matches(df, "gpt-4"))
    assert table["rating"][reference.index].to_numpy() == pytest.approx(reference.to_numpy(),
                                                                        abs=1e-4)
    assert (table["ci_low"] <= table["rating"]).all()
    assert (table["rating"] <= table["ci_high"]).all()
    # another seed moves the interval, never the rating; the median over 200 random match
    # orders moves by more than a point (why it is no longer the default)
    other = elo(df, "gpt-4", n_bootstrap=20, seed=2).set_index("model")
    assert other["rating"].equals(table["rating"]) and not other["ci_low"].equals(
        table["ci_low"])
    medians = [elo(df, "gpt-4", point="median", seed=seed).set_index("model")["rating"]
               for seed in (0, 1)]
    assert (medians[0] - medians[1][medians[0].index]).abs().max() > 1


def test_one_pass_has_no_interval_of_its_own() -> None:
    """The permutation interval belongs to the median over orders; beside one pass's rating
    it held 2 of 4 ratings outside it. ``--elo order`` leaves it empty and says why."""
    df = random_scores(20, ["A", "B", "C", "D"], ["gpt-4"], seed=3)
    table = elo(df, n_bootstrap=50, point="order")
    assert table["ci_low"].isna().all() and table["ci_high"].isna().all()
    assert table["note"].str.startswith("one pass in question order: no interval").all()


def test_median_of_a_one_question_model_has_no_interval() -> None:
    """A model scored on one question had a narrower interval over match orders than the
    models scored on 30; its interval is empty with the cause, the others keep theirs."""
    df = random_scores(30, ["A", "B", "C"], ["gpt-4"], seed=5)
    df = pd.concat([df, frame([row(question_id="4", model="D", score=6.0)])],
                   ignore_index=True)
    table = elo(df, n_bootstrap=100, point="median").set_index("model")
    assert pd.isna(table.loc["D", "ci_low"]) and pd.isna(table.loc["D", "ci_high"])
    assert table.loc["D", "note"].startswith("no interval: D played on 1 question(s)")
    assert "match orders" in table.loc["D", "note"]
    others = table.drop(index="D")
    assert others["ci_low"].notna().all() and (others["note"] == "").all()


def test_median_with_every_match_from_one_question_has_no_interval() -> None:
    df = random_scores(1, ["A", "B", "C", "D"], ["gpt-4"], seed=1).assign(
        score=[2.0, 4.0, 6.0, 8.0])
    table = elo(df, n_bootstrap=50, point="median")
    assert table["ci_low"].isna().all()
    assert table["note"].str.contains("all matches come from 1 question").all()
