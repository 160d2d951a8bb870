"""Budget plans with the interval the ``ppi`` table prints and the assurance they print.
References: real studies drawn without replacement from a fully scored population, each
interval computed by :func:`~elitr_core.stats.ppi.classical_mean` and
:func:`~elitr_core.stats.ppi.ppipp_mean` one study at a time (a different random stream than
the planner's); the planner of main (normal quantile, CLT variances), whose plans met their
target in about half of the studies or fewer."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats.budget import BUDGET_COLUMNS, _Studies, budget_plan
from elitr_core.stats.ppi import classical_mean, ppipp_mean
from elitr_core.stats.ppi_designs import uniform_estimates
from tests.elitr_core.stats.synthetic import bundled
from tests.elitr_core.stats.test_ppi import judge_and_human


def share_met(rng: np.random.Generator, y: np.ndarray, n: int, k: int,
              half_width: float) -> float:
    """Share of ``k`` real human-only studies of ``n`` scores drawn without replacement from
    ``y`` whose 95% t interval has a half-width of at most ``half_width``. Each study is the
    first ``n`` of its own shuffle of ``y`` (a uniform ``n``-subset, as
    ``rng.choice(y, n, replace=False)`` draws; one call for all ``k``)."""
    studies = rng.permuted(np.tile(y, (k, 1)), axis=1)[:, :n]
    half = stats.t.ppf(0.975, n - 1) * studies.std(1, ddof=1) / np.sqrt(n)
    return float((half <= half_width).mean())


def realised(df: pd.DataFrame, model: str, n: int, design: str, half_width: float,
             studies: int = 600, seed: int = 99) -> float:
    """Share of real studies of ``n`` human scores meeting the target."""
    scores = df[df["model"] == model]
    judge = scores[scores["evaluator"] == "judge"].set_index("question_id")["score"]
    human = scores[scores["evaluator"] == "human"].set_index("question_id")["score"]
    y, f = human.to_numpy(), judge.loc[human.index].to_numpy()
    rng, hits = np.random.default_rng(seed), 0
    for _ in range(studies):
        order = rng.permutation(y.size)
        lab, rest = order[:n], order[n:]
        est = (classical_mean(y[lab]) if design == "human-only"
               else ppipp_mean(y[lab], f[lab], f[rest])[0])
        hits += (est.high - est.low) / 2 <= half_width
    return hits / studies


def test_the_printed_assurance_is_the_share_of_studies_that_meet_the_target() -> None:
    """Humans scored all 150 responses of each model: the plan's printed assurance equals the
    share of real studies (600) meeting the target within 0.05, at least 0.8; one score fewer
    misses 0.8 in the planner's own simulation."""
    df = judge_and_human(150, {"A": 150, "B": 150}, seed=5)
    plan = budget_plan(df, "judge", "human", half_width=0.6)
    assert list(plan.columns) == list(BUDGET_COLUMNS)
    plan = plan.set_index("model")
    for model in ("A", "B"):
        for design, n_col, a_col in (("human-only", "n_human_only", "assurance_human_only"),
                                     ("ppi++", "n_ppi", "assurance_ppi")):
            n, printed = int(plan.loc[model, n_col]), float(plan.loc[model, a_col])
            assert printed >= 0.8
            assert realised(df, model, n, design, 0.6) == pytest.approx(printed, abs=0.05)
        assert plan.loc[model, "n_ppi"] < plan.loc[model, "n_human_only"]
    group = judge_and_human(150, {"A": 150}, seed=5)
    y = group[group["evaluator"] == "human"]["score"].to_numpy()
    f = group[group["evaluator"] == "judge"]["score"].to_numpy()
    studies = _Studies(y, f, f, 1000, 0)
    n = int(plan.loc["A", "n_human_only"])
    assert studies.assurance(n - 1, "human-only", 0.6, 0.95) < 0.8


def test_the_normal_plan_of_main_met_its_target_half_the_time_or_less() -> None:
    """Main planned human-only with ceil((z sd / h)^2): with the t interval the table prints,
    such studies meet the target in at most ~55% of cases; the plan here in >= 75%."""
    df = judge_and_human(150, {"A": 150}, seed=5)
    y = df[df["evaluator"] == "human"]["score"].to_numpy()
    old = int(np.ceil((stats.norm.ppf(0.975) * y.std() / 0.6) ** 2))
    assert realised(df, "A", old, "human-only", 0.6) <= 0.55
    plan = budget_plan(df, "judge", "human", half_width=0.6)
    assert realised(df, "A", int(plan.loc[0, "n_human_only"]), "human-only", 0.6) >= 0.75


def test_an_unreachable_target_and_a_plan_on_few_scores_are_noted() -> None:
    plan = budget_plan(judge_and_human(30, {"A": 10}), "judge", "human", half_width=0.3)
    row = plan.loc[0]
    assert pd.isna(row["n_ppi"]) and pd.isna(row["n_human_only"])
    assert pd.isna(row["assurance_ppi"])
    assert "human-only cannot reach the target: even all 30 judged responses" in row["note"]
    assert "more human scores than there are responses" in row["note"]
    assert "the plan rests on 10 human scores" in row["note"]
    reachable = budget_plan(judge_and_human(300, {"A": 300}), "judge", "human", half_width=1.0)
    assert reachable.loc[0, "note"] == "" and reachable.loc[0, "n_ppi"] >= 3


def test_bad_input_is_refused() -> None:
    df = judge_and_human(30, {"A": 10})
    with pytest.raises(UserError, match="positive"):
        budget_plan(df, "judge", "human", half_width=0)
    with pytest.raises(UserError, match="assurance"):
        budget_plan(df, "judge", "human", half_width=0.5, assurance=1.0)
    with pytest.raises(DegenerateDataError, match="collect a few human scores"):
        budget_plan(judge_and_human(30, {"A": 1}), "judge", "human", half_width=0.5)


def test_a_plan_from_a_pilot_of_20_prints_the_share_of_studies_it_meets() -> None:
    """Issue 40: planned from a pilot of 20 scores, the plan printed an assurance of ~0.82
    and was met in 55-79% of studies, the pilot taken for the population. The population
    here is the bundled GPT-4 gold-human scores (test2 QA-st, 130, skewed: a few 1-3 among
    9-10s, which a pilot of 20 often misses); 30 pilots of 20 are planned with
    ``budget_plan`` (human-only, half-width 0.75) and each plan's real studies drawn without
    replacement from the 130, their t interval computed here (4,000 a plan). The mean
    printed assurance equals the mean share met within 0.07 (0.05 plus the Monte-Carlo error
    of 30 pilots), and the plans are met in at least half of the studies; the pilot taken for
    the population printed 0.2 more than it met."""
    df = bundled()
    df = df[(df["split"] == "test2") & (df["setting"] == "qa") & (df["mode"] == "st")
            & (df["model"] == "GPT-4") & df["evaluator"].isin(["gpt-4", "gold-human"])]
    key = df["meeting"].astype(str) + "/" + df["question_id"].astype(str)
    human = df[df["evaluator"] == "gold-human"]
    y = human["score"].to_numpy(float)
    assert y.size == 130
    rng = np.random.default_rng(40)
    printed, met = [], []
    for pilot in range(30):
        kept = rng.choice(key[human.index].to_numpy(), 20, replace=False)
        plan = budget_plan(df[(df["evaluator"] == "gpt-4") | key.isin(kept)],
                           "gpt-4", "gold-human", half_width=0.75, seed=pilot).loc[0]
        n = int(plan["n_human_only"])
        assert "the plan rests on 20 human scores" in plan["note"]
        printed.append(float(plan["assurance_human_only"]))
        met.append(share_met(rng, y, n, 4000, 0.75))
    assert np.mean(met) >= 0.5
    assert abs(np.mean(printed) - np.mean(met)) <= 0.07, (np.mean(printed), np.mean(met))


def test_pilots_of_scores_spread_over_the_scale_print_the_share_they_meet() -> None:
    """Issue 40: on pilots of 20 of the bundled LongAlpaca-7B and Vicuna-13B-v1.5 gold-human
    scores (spread over the whole scale), the Dirichlet-posterior planner of 28 Nov printed
    0.10 more than its human-only plans met at half-width 1.0 (300 pilots a model: +0.103,
    +0.098): its populations' variance averaged (m - 1) / (m + 1) of the pilot's and its
    studies were drawn with replacement, not as n of the N responses. 60 pilots a model are
    planned with ``budget_plan`` and each plan's real studies (2,000) drawn without
    replacement from the 130, their t interval computed here; the mean printed assurance
    equals the mean share met within 0.06 (0.05 plus about two Monte-Carlo standard errors
    of 120 pilots)."""
    df = bundled()
    df = df[(df["split"] == "test2") & (df["setting"] == "qa") & (df["mode"] == "st")
            & df["evaluator"].isin(["gpt-4", "gold-human"])]
    rng = np.random.default_rng(41)
    printed, met = [], []
    for model in ("LongAlpaca-7B", "Vicuna-13B-v1.5"):
        own = df[df["model"] == model]
        key = own["meeting"].astype(str) + "/" + own["question_id"].astype(str)
        human = own[own["evaluator"] == "gold-human"]
        y = human["score"].to_numpy(float)
        for pilot in range(60):
            kept = rng.choice(key[human.index].to_numpy(), 20, replace=False)
            plan = budget_plan(own[(own["evaluator"] == "gpt-4") | key.isin(kept)],
                               "gpt-4", "gold-human", half_width=1.0, seed=pilot).loc[0]
            n = int(plan["n_human_only"])
            printed.append(float(plan["assurance_human_only"]))
            met.append(share_met(rng, y, n, 2000, 1.0))
    assert abs(np.mean(printed) - np.mean(met)) <= 0.06, (np.mean(printed), np.mean(met))


def test_ppi_plans_from_pilots_of_a_judge_that_tracks_the_humans_print_what_they_meet() -> None:
    """Issue 40: the PPI++ plans of pilots of 20 of the bundled LongAlpaca-7B gold-human
    scores (judge gpt-4, correlation about 0.8) at half-width 0.75 printed 0.07 less than
    they met (400 pilots: 0.817 printed, 0.889 met; plans-2026-11-28b.md): the base
    measure's pair drew a judge score independent of its human score, so every population's
    correlation came out low and the plans too large. 80 pilots are planned with
    ``budget_plan`` and each plan's real studies (250) label ``n`` of the 130 without
    replacement, their interval computed here by :func:`ppipp_mean` with the judge scores of
    the other 130 - n; the mean printed assurance equals the mean share met within 0.05
    (the pooled Monte-Carlo standard error of 80 pilots is about 0.015)."""
    df = bundled()
    own = df[(df["split"] == "test2") & (df["setting"] == "qa") & (df["mode"] == "st")
             & (df["model"] == "LongAlpaca-7B") & df["evaluator"].isin(["gpt-4", "gold-human"])]
    key = own["meeting"].astype(str) + "/" + own["question_id"].astype(str)
    own = own.assign(key=key)
    wide = own.pivot_table(index="key", columns="evaluator", values="score")
    y, f = wide["gold-human"].to_numpy(float), wide["gpt-4"].to_numpy(float)
    assert y.size == 130 and np.corrcoef(y, f)[0, 1] > 0.7
    rng = np.random.default_rng(42)
    printed, met = [], []
    for pilot in range(80):
        kept = rng.choice(wide.index.to_numpy(), 20, replace=False)
        plan = budget_plan(own[(own["evaluator"] == "gpt-4") | own["key"].isin(kept)],
                           "gpt-4", "gold-human", half_width=0.75, seed=pilot).loc[0]
        n, hits = int(plan["n_ppi"]), 0
        for _ in range(250):
            order = rng.permutation(y.size)
            est = ppipp_mean(y[order[:n]], f[order[:n]], f[order[n:]])[0]
            hits += (est.high - est.low) / 2 <= 0.75
        printed.append(float(plan["assurance_ppi"]))
        met.append(hits / 250)
    assert abs(np.mean(printed) - np.mean(met)) <= 0.05, (np.mean(printed), np.mean(met))


@pytest.mark.parametrize("pilot", [150, 20])
def test_the_running_sums_give_the_table_interval_of_every_size(pilot: int) -> None:
    """The planner's half-widths of each size from running sums along its studies equal those
    of :func:`uniform_estimates` on the mask of the ``n`` labelled (1e-12, relative), for a
    population scored in full and for a pilot; all labelled is the human mean's interval."""
    rng = np.random.default_rng(3)
    y = np.clip(rng.normal(5, 2, 150), 1, 10)
    f = np.clip(y + 0.8 + rng.normal(0, 1, 150), 1, 10)
    studies = _Studies(y[:pilot], f[:pilot], f, 200, 1)
    for n in (2, 3, 17, 60, 149, 150):
        labelled = np.zeros((200, 150), bool)
        labelled[:, :n] = True
        used = studies.f if pilot == 150 else np.where(labelled, studies.f, studies.rest)
        ys, fs = studies.y, used
        if n == 150:
            ys, fs = np.c_[ys, ys[:, :1]], np.c_[fs, fs[:, :1]]
            labelled = np.c_[labelled, np.zeros((200, 1), bool)]
        for design in ("human-only", "ppi++"):
            _, se, dof = uniform_estimates(ys, fs, labelled, "human-only" if n == 150 else design)
            want = np.where(np.isnan(se), np.inf, stats.t.ppf(0.975, dof) * np.nan_to_num(se))
            got = studies.half_widths(n, design, 0.95)
            assert np.isinf(got).tolist() == np.isinf(want).tolist()
            assert got[np.isfinite(got)] == pytest.approx(want[np.isfinite(want)], rel=1e-12)
