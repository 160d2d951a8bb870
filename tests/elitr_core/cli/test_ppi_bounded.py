"""`export ppi` when a model's human scores are few and skewed, on SQLite and PostgreSQL: the
CSV's note says the t intervals are not to be trusted (fewer than 30 scores, skewness) and the
betting interval for bounded scores is there (reference: the scalar transcription of the
betting process in test_betting, on the scores in the seeded random order, 1e-6 through
CSV)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from elitr_core.cli.main import main
from tests import small_db
from tests.elitr_core.stats.test_betting import scalar_interval
from tests.live_study import TEST2, add_scores, first_items


def test_few_skewed_human_scores_get_a_note_and_a_bounded_interval(
        db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    small_db.build(db_url)
    pick = first_items(TEST2, 12)  # A's and B's QA answers of the test2 meeting
    scores = {}

    def human(model: str, meeting: str, number: int, setting: str) -> float | None:
        if not pick(model, meeting, number, setting):
            return None
        scores[model, number] = 2.0 if (model, number) in (("A", 1), ("B", 4)) else 9.0
        return scores[model, number]

    add_scores(db_url, "crowd", human, kind="human")
    code = main(["export", "ppi", "--db", db_url, "--judge", "gpt-4", "--human", "crowd",
                 "--split", "test2", "--setting", "qa"])
    out, err = capsys.readouterr()
    assert code == 0, err
    table = pd.read_csv(io.StringIO(out)).set_index("model")
    for model in ("A", "B"):
        row = table.loc[model]
        assert row["n_labelled"] == 6
        assert row["note"].startswith("6 human scores, fewer than 30: the t intervals")
        assert "human scores skewed (skewness -2.45, a long tail of low scores)" in row["note"]
        y = [scores[model, n] for n in range(1, 7)]  # the table reads them by question
        order = np.random.default_rng(0).random((1, 6)).argsort(axis=1)[0]
        low, high = scalar_interval([y[i] for i in order], 1, 10, 0.05, 400)
        assert (row["human_betting_ci_low"], row["human_betting_ci_high"]) == pytest.approx(
            (low, high), abs=1e-6)
        assert row["human_betting_ci_low"] < np.mean(y) < row["human_betting_ci_high"]
    assert pd.isna(table.loc["C", "human_betting_ci_low"])  # no human score
