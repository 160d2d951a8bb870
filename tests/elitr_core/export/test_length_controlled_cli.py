"""``export length-controlled`` / ``length-controlled-tau`` on the bundled data through the CLI,
on SQLite and PostgreSQL, against statsmodels' OLS of the exported scores and stored texts."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from elitr_core.cli.main import main
from elitr_core.vocab import EXPORT_COLUMNS
from tests.elitr_core.run_helpers import rows

FILTERS = ("--split", "test2", "--setting", "qa", "--mode", "st")


def export(url: str, capsys: pytest.CaptureFixture[str], *args: str) -> pd.DataFrame:
    capsys.readouterr()
    assert main(["export", *args, *FILTERS, "--db", url]) == 0
    return pd.read_csv(io.StringIO(capsys.readouterr().out))


def test_length_controlled_equals_statsmodels_on_the_bundled_data(
        bundled_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    table = export(bundled_db, capsys, "length-controlled", "--replicates", "200")
    assert tuple(table.columns) == EXPORT_COLUMNS["length-controlled"] and len(table) == 9
    scores = export(bundled_db, capsys, "scores", "--evaluator", "gpt-4")
    texts = rows(bundled_db, "SELECT m.external_id, q.number, u.model, r.text FROM response r "
                         "JOIN run u ON u.id = r.run_id JOIN question q ON q.id = r.question_id "
                         "JOIN meeting m ON m.id = q.meeting_id WHERE u.split = 'test2' AND "
                         "u.setting = 'qa' AND u.mode = 'st'")
    words = {(m, int(q), model): len((t or "").split()) for m, q, model, t in texts}
    length = np.array([words[m, int(q), model] for m, q, model in
                       zip(scores["meeting"], scores["question_id"], scores["model"],
                           strict=True)], float)
    models = list(pd.unique(scores["model"]))
    x = pd.get_dummies(scores["model"])[models].astype(float)
    x["length"] = (length - length.mean()) / 100
    fit = sm.OLS(scores["score"].to_numpy(float), x.to_numpy(float)).fit()
    by_model = table.set_index("model")
    for i, model in enumerate(models):
        assert by_model.loc[model, "lc_mean"] == pytest.approx(fit.params[i], abs=1e-6)
    assert table["slope"].iloc[0] == pytest.approx(fit.params[-1], abs=1e-6)
    assert (table["ci_low"] < table["lc_mean"]).all()
    assert (table["lc_mean"] < table["ci_high"]).all()
    # the human scored three models: tau over them, raw and length-controlled
    tau = export(bundled_db, capsys, "length-controlled-tau", "--replicates", "200")
    assert tau["ranking"].tolist() == ["judge mean", "length-controlled"]
    assert (tau["n_models"] == 3).all() and (tau["tau"] == 1).all()
