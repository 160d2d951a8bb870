"""The Dawid-Skene silver aggregate against crowd-kit's DawidSkene (the independent reference)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from crowdkit.aggregation import DawidSkene

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats.dawid_skene import (
    AGGREGATE_COLUMNS,
    RELIABILITY_COLUMNS,
    agreement_with_gold,
    dawid_skene,
    silver_aggregate,
)
from tests.elitr_core.stats.synthetic import frame, row

pytestmark = pytest.mark.filterwarnings("ignore:The (copy|inplace) keyword")
#: score noise (sd) of each annotator: careful ones first, a careless one last
NOISE = {"ann1": 0.3, "ann2": 0.5, "ann3": 0.8, "ann4": 1.0, "ann5": 1.5, "careless": 4.0}


def crowd(n_items: int = 80, per_item: int = 4, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 11, n_items)
    names = list(NOISE)
    rows = []
    for t in range(n_items):
        for name in rng.choice(names, per_item, replace=False):
            rows.append((t, names.index(name), int(np.clip(
                np.rint(truth[t] + rng.normal(0, NOISE[name])), 1, 10))))
    return pd.DataFrame(rows, columns=["task", "worker", "label"]), truth


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_em_equals_crowd_kit(seed: int) -> None:
    """Posteriors within 1e-12 of crowd-kit's (which clips them at 1e-10), the same number
    of iterations, the same most probable scores and annotator error matrices."""
    data, _ = crowd(seed=seed)
    reference = DawidSkene(n_iter=100).fit(data)
    fit = dawid_skene(data["task"].to_numpy(), data["worker"].to_numpy(),
                      data["label"].to_numpy())
    theirs = reference.probas_.reindex(index=range(data["task"].max() + 1),
                                       columns=fit.classes).to_numpy()
    assert np.abs(theirs - np.clip(fit.probas, 1e-10, None)).max() < 1e-12
    assert fit.iterations == len(reference.loss_history_)
    for (worker, label), values in reference.errors_.iterrows():
        k = int(np.searchsorted(fit.classes, label))
        assert fit.errors[worker, k] == pytest.approx(
            values.reindex(fit.classes).to_numpy(), abs=1e-12)


def as_scores(data: pd.DataFrame, truth: np.ndarray) -> pd.DataFrame:
    names = list(NOISE)
    rows = [row(question_id=str(t + 1), evaluator="silver-human:s", annotator=names[w],
                score=float(label)) for t, w, label in data.itertuples(index=False)]
    rows += [row(question_id=str(t + 1), evaluator="gold-human", score=float(v))
             for t, v in enumerate(truth)]
    return frame(rows)


def test_tables_rank_the_careless_annotator_last_and_beat_the_mean_on_gold() -> None:
    data, truth = crowd(n_items=150, seed=4)
    df = as_scores(data, truth)
    aggregate, reliability = silver_aggregate(df, "silver-human:s")
    assert tuple(aggregate.columns) == AGGREGATE_COLUMNS and len(aggregate) == 150
    assert tuple(reliability.columns) == RELIABILITY_COLUMNS
    means = data.groupby("task")["label"].mean().to_numpy()
    assert aggregate["mean"].to_numpy() == pytest.approx(means)
    assert reliability["annotator"].iloc[-1] == "careless"
    assert reliability.set_index("annotator")["n"].sum() == len(data)
    gold = agreement_with_gold(df, "silver-human:s").set_index("aggregate")
    assert (gold["n"] == 150).all()
    assert gold.loc["dawid-skene", "mae"] < gold.loc["mean", "mae"]


def test_states_without_a_crowd() -> None:
    one = frame([row(question_id=str(q), evaluator="silver-human:s", annotator="only",
                     score=5.0) for q in range(1, 4)])
    with pytest.raises(DegenerateDataError, match="one annotator here"):
        silver_aggregate(one, "silver-human:s")
    with pytest.raises(UserError, match="no score of a named annotator"):
        silver_aggregate(frame([row(evaluator="silver-human")]), "silver-human")
