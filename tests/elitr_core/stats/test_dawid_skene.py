"""Nominal Dawid-Skene (the silver aggregate's option for dense studies) against crowd-kit's
DawidSkene (the independent reference); its tables are tested in test_silver_aggregate."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from crowdkit.aggregation import DawidSkene

from elitr_core.stats.dawid_skene import dawid_skene

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
