"""Battle rankings: Elo by hand, Bradley-Terry vs statsmodels' logistic fit, a simulation with
known strengths, and Kendall tau against the human ranking."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats.pairwise import outcomes
from elitr_core.stats.pairwise_rank import (
    BT_COLUMNS,
    RANKING_AGREEMENT_COLUMNS,
    RATING_COLUMNS,
    pairwise_bradley_terry,
    pairwise_elo,
    ranking_agreement,
)
from tests.elitr_core.stats.synthetic import frame, row
from tests.elitr_core.stats.synthetic_pairwise import judgment, judgments, simulate

STRENGTHS = {"M1": 1.2, "M2": 0.6, "M3": 0.0, "M4": -0.5, "M5": -1.3}


def test_elo_by_hand() -> None:
    # A beats B; B ties C; C beats A (the hand-worked sequence of the score-based Elo test)
    df = judgments([judgment(model_a="A", model_b="B", verdict="a"),
                    judgment(model_a="B", model_b="C", verdict="tie", question_id="2"),
                    judgment(model_a="A", model_b="C", verdict="b", question_id="3")])
    table = pairwise_elo(df, point="order", n_bootstrap=0)
    assert tuple(table.columns) == RATING_COLUMNS
    rating = table.set_index("model")["rating"]
    assert rating["A"] == pytest.approx(999.229860, abs=1e-5)
    assert rating["B"] == pytest.approx(984.736307, abs=1e-5)
    assert rating["C"] == pytest.approx(1016.033833, abs=1e-5)
    assert table["model"].tolist() == ["C", "A", "B"]


def test_elo_median_lies_in_its_interval_and_is_reproducible() -> None:
    df = simulate(STRENGTHS, 20, seed=4)
    table = pairwise_elo(df, n_bootstrap=100, seed=1, point="median")
    assert ((table["ci_low"] <= table["rating"]) & (table["rating"] <= table["ci_high"])).all()
    assert table.equals(pairwise_elo(df, n_bootstrap=100, seed=1, point="median"))
    with pytest.raises(UserError, match="median needs n_bootstrap > 0"):
        pairwise_elo(df, n_bootstrap=0, point="median")


def test_mle_elo_is_bradley_terry_on_the_elo_scale() -> None:
    """Ratings 1000 + 400 / ln 10 x strength (1e-9), the interval Bradley-Terry's (same
    resamples), and no seed moves the rating."""
    df = simulate(STRENGTHS, 30, seed=6, tie_share=0.2)
    elo = pairwise_elo(df, seed=2).set_index("model")
    bt = pairwise_bradley_terry(df, seed=2).set_index("model").loc[elo.index]
    for column in ("rating", "ci_low", "ci_high"):
        source = "strength" if column == "rating" else column
        expected = 1000 + 400 / np.log(10) * bt[source].astype(float)
        assert elo[column].astype(float).to_numpy() == pytest.approx(expected.to_numpy(),
                                                                     abs=1e-9)
    assert pairwise_elo(df, seed=9)["rating"].tolist() == pairwise_elo(df, seed=2)[
        "rating"].tolist()


def test_bradley_terry_matches_statsmodels_logistic_regression() -> None:
    df = simulate(STRENGTHS, 12, seed=5, tie_share=0.2)
    got = pairwise_bradley_terry(df, n_bootstrap=0).set_index("model")["strength"]
    # reference: binomial GLM with logit link, x = e_a - e_b, ties as s = 0.5, M5 as baseline
    kept = outcomes(df)
    models = list(STRENGTHS)
    design = np.zeros((len(kept), len(models)))
    design[np.arange(len(kept)), kept["model_a"].map(models.index)] += 1
    design[np.arange(len(kept)), kept["model_b"].map(models.index)] -= 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels warns on non-integer binomial counts
        fit = sm.GLM(kept["s"].to_numpy(), design[:, :-1], family=sm.families.Binomial()).fit()
    reference = np.append(fit.params, 0.0)
    reference -= reference.mean()
    assert got[models].to_numpy() == pytest.approx(reference, abs=1e-6)


def test_two_models_closed_form() -> None:
    # X wins 3, Y wins 1: log(p_X / p_Y) = log 3, centred to +-log(3)/2
    df = judgments([judgment(verdict=v, question_id=str(i)) for i, v in enumerate("aaab")])
    table = pairwise_bradley_terry(df, n_bootstrap=0).set_index("model")
    assert tuple(table.reset_index().columns) == BT_COLUMNS
    assert table.loc["X", "strength"] == pytest.approx(np.log(3) / 2, abs=1e-8)
    assert table.loc["Y", "strength"] == pytest.approx(-np.log(3) / 2, abs=1e-8)


def test_simulation_recovers_known_strengths() -> None:
    df = simulate(STRENGTHS, 120, seed=11)
    bt = pairwise_bradley_terry(df, n_bootstrap=200, seed=3).set_index("model")
    truth = pd.Series(STRENGTHS) - np.mean(list(STRENGTHS.values()))
    assert bt["strength"][truth.index].to_numpy() == pytest.approx(truth.to_numpy(), abs=0.15)
    covered = (bt["ci_low"][truth.index] <= truth) & (truth <= bt["ci_high"][truth.index])
    assert covered.sum() >= 4
    elo = pairwise_elo(df, n_bootstrap=100, seed=3)
    assert elo["model"].tolist() == list(STRENGTHS)  # best first = true order
    comp = pairwise_bradley_terry(df, "completeness", n_bootstrap=0)
    assert comp["model"].tolist() == list(STRENGTHS)


def test_bradley_terry_refuses_a_model_that_never_won() -> None:
    df = judgments([judgment(verdict="a"), judgment(verdict="a", question_id="2")])
    with pytest.raises(DegenerateDataError, match="never won nor drew"):
        pairwise_bradley_terry(df, n_bootstrap=0)


def human_scores(means: dict[str, float], n_questions: int, *, noise: float = 0.0,
                 seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return frame([row(model=m, question_id=str(q + 1), evaluator="gold-human",
                      score=mean + noise * rng.normal())
                  for m, mean in means.items() for q in range(n_questions)])


def test_ranking_agreement_perfect_and_hand_computed() -> None:
    df = simulate(STRENGTHS, 120, seed=11)
    same = human_scores({m: 5 + s for m, s in STRENGTHS.items()}, 120)
    table = ranking_agreement(df, same, n_bootstrap=50)
    assert tuple(table.columns) == RANKING_AGREEMENT_COLUMNS
    assert table["ranking"].tolist() == ["elo", "bradley-terry"]
    assert table["tau"].tolist() == pytest.approx([1.0, 1.0], abs=1e-12)
    assert (table["n_models"] == 5).all() and (table["n_questions"] == 120).all()
    # humans swap M1 and M2 and rank M5 above M4: tau-b by scipy on those means
    swapped = {"M1": 5.6, "M2": 6.2, "M3": 5.0, "M4": 4.0, "M5": 4.5}
    expected = stats.kendalltau([1.2, 0.6, 0.0, -0.5, -1.3], list(swapped.values())).statistic
    table = ranking_agreement(df, human_scores(swapped, 120), n_bootstrap=50)
    assert table["tau"].tolist() == pytest.approx([expected, expected])
    assert expected == pytest.approx(0.6)
    assert ((table["ci_low"] <= table["tau"]) & (table["tau"] <= table["ci_high"])).all()


@pytest.mark.parametrize(("point", "seed"), [("mle", 0), ("median", 0), ("median", 5),
                                             ("order", 0)])
def test_ranking_agreement_ranks_exactly_the_published_ratings(point: str, seed: int) -> None:
    """One ranking, one number: tau is scipy's between the ratings ``export elo --source
    pairwise`` / ``export bradley-terry`` print for the same options and the human means,
    also for close models whose order-based Elo depends on the random orders."""
    close = {"M1": 0.10, "M2": 0.05, "M3": 0.0, "M4": -0.05, "M5": -0.10}
    df = simulate(close, 40, seed=3, tie_share=0.3)
    means = {"M1": 6.0, "M2": 5.8, "M3": 5.6, "M4": 5.4, "M5": 5.2}
    table = ranking_agreement(df, human_scores(means, 40), n_bootstrap=0, seed=seed,
                              point=point).set_index("ranking")
    elo = pairwise_elo(df, point=point, seed=seed).set_index("model")["rating"]
    bt = pairwise_bradley_terry(df, seed=seed).set_index("model")["strength"]
    for ranking, ratings in (("elo", elo), ("bradley-terry", bt)):
        expected = stats.kendalltau(ratings[list(means)], list(means.values())).statistic
        assert table.loc[ranking, "tau"] == pytest.approx(expected, abs=1e-12), ranking


def test_ranking_agreement_needs_three_models_with_humans() -> None:
    df = simulate(STRENGTHS, 10, seed=1)
    with pytest.raises(DegenerateDataError, match="gold-human scored 2 of the models"):
        ranking_agreement(df, human_scores({"M1": 6.0, "M2": 5.0}, 10), n_bootstrap=0)
    with pytest.raises(UserError, match="no silver-human score"):
        ranking_agreement(df, human_scores({"M1": 6.0}, 10), reference="silver-human")


def test_a_model_that_almost_never_wins_loses_its_own_interval_only() -> None:
    """Weak wins exactly one battle (question 7 of 20): a question resample leaves that
    question out with probability (1 - 1/20)^20 = 0.358, and there Weak's strength is
    infinite. Weak's interval is empty with a note giving the share of resamples that rate it
    (within 4 binomial standard errors of 0.642, 200 resamples); A and B keep theirs (each
    resample rates the models it can, shifted to their full-data mean)."""
    df = simulate({"A": 1.0, "B": 0.0, "Weak": -30.0}, 20, seed=4)
    weak_a = (df["model_a"] == "Weak") & (df["verdict"] == "a")
    weak_b = (df["model_b"] == "Weak") & (df["verdict"] == "b")
    assert not (weak_a | weak_b).any()  # -30: Weak never wins by chance
    first = df.index[(df["model_b"] == "Weak") & (df["question_id"] == "7")][0]
    df.loc[first, "verdict"] = "b"
    out = pairwise_bradley_terry(df, n_bootstrap=200, seed=1).set_index("model")
    assert list(out.reset_index().columns) == list(BT_COLUMNS)
    assert np.isfinite(out["strength"]).all()
    assert out.loc["Weak", ["ci_low", "ci_high"]].isna().all()
    for model in ("A", "B"):
        row = out.loc[model]
        assert row["ci_low"] < row["strength"] < row["ci_high"] and row["note"] == ""
    note = out.loc["Weak", "note"]
    assert note.startswith("no interval: Weak played on 20 question(s)")
    share = float(note.split("finite rating in only ")[1].split("%")[0]) / 100
    expected = 1 - (1 - 1 / 20) ** 20
    assert abs(share - expected) < 4 * np.sqrt(expected * (1 - expected) / 200) + 0.005
    # with a fourth model the ranking agreement keeps its interval too (each resample ranks
    # the three or four models it rates; it used to refuse the whole table)
    four = simulate({"A": 1.0, "B": 0.0, "C": -0.5, "Weak": -30.0}, 20, seed=4)
    first = four.index[(four["model_b"] == "Weak") & (four["question_id"] == "7")][0]
    four.loc[first, "verdict"] = "b"
    humans = human_scores({"A": 7.0, "B": 6.0, "C": 5.0, "Weak": 2.0}, 20)
    tau = ranking_agreement(four, humans, n_bootstrap=100)
    assert tau["ci_low"].notna().all() and tau["note"].eq("").all()
    assert tau["tau"].tolist() == pytest.approx([1.0, 1.0])
    fine = pairwise_bradley_terry(simulate({"A": 1.0, "B": 0.0}, 20, seed=4), n_bootstrap=50)
    assert fine["note"].eq("").all() and fine["ci_low"].notna().all()


def test_elo_median_of_a_judge_that_always_answers_a_has_no_interval() -> None:
    """Every pair wins once in each order: the median over match orders spread 180 points
    although no question resample can move a rating; its interval is empty, the bias named."""
    df = simulate(STRENGTHS, 12, seed=2)
    df["verdict"] = np.where(df["order"] == "ab", "a", "b")  # the answer shown first, always
    table = pairwise_elo(df, n_bootstrap=100, point="median")
    assert table["ci_low"].isna().all() and table["ci_high"].isna().all()
    assert table["note"].str.contains("preferred the answer shown first").all()
