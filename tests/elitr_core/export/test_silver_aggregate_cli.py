"""``export silver-aggregate``, ``annotator-reliability`` and ``silver-aggregate-agreement``
through the CLI on SQLite and PostgreSQL: a crowd of annotators imported as a scores CSV on the
bundled gold-scored responses, checked against crowd-kit's DawidSkene on the exported scores."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from crowdkit.aggregation import DawidSkene

from elitr_core.cli.main import main

pytestmark = pytest.mark.filterwarnings("ignore:The (copy|inplace) keyword")
FILTERS = ("--split", "test2", "--setting", "qa", "--mode", "st")
NOISE = {"ann1": 0.5, "ann2": 0.8, "ann3": 1.2, "ann4": 2.0, "careless": None}


def export(url: str, capsys: pytest.CaptureFixture[str], *args: str) -> pd.DataFrame:
    capsys.readouterr()
    assert main(["export", *args, *FILTERS, "--db", url]) == 0, capsys.readouterr().err
    return pd.read_csv(io.StringIO(capsys.readouterr().out))


def test_silver_aggregate_tables_equal_crowd_kit(bundled_db: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    gold = export(bundled_db, capsys, "scores", "--evaluator", "gold-human")
    rng = np.random.default_rng(0)
    lines = ["meeting,question_id,split,setting,mode,model,evaluator,annotator,score"]
    for r in gold.itertuples():
        for name in rng.choice(list(NOISE), 3, replace=False):
            sd = NOISE[name]
            value = (rng.integers(1, 11) if sd is None
                     else np.clip(np.rint(r.score + rng.normal(0, sd)), 1, 10))
            lines.append(f"{r.meeting},{r.question_id},test2,qa,st,{r.model},crowd,{name},"
                         f"{int(value)}")
    path = tmp_path / "crowd.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["import", str(path), "--db", bundled_db]) == 0
    aggregate = export(bundled_db, capsys, "silver-aggregate", "--evaluator", "crowd")
    reliability = export(bundled_db, capsys, "annotator-reliability", "--evaluator", "crowd")
    agreement = export(bundled_db, capsys, "silver-aggregate-agreement", "--evaluator",
                       "crowd,gold-human").set_index("aggregate")
    assert len(aggregate) == len(gold) == 390 and (aggregate["n_annotators"] == 3).all()
    # the reference: crowd-kit on the individual scores as exported
    scores = export(bundled_db, capsys, "scores", "--evaluator", "crowd")
    scores = scores[scores["annotator"].notna()]
    data = pd.DataFrame({"task": scores["meeting"] + "/" + scores["question_id"].astype(str)
                         + "/" + scores["model"], "worker": scores["annotator"],
                         "label": scores["score"].astype(int)})
    probas = DawidSkene(n_iter=100).fit_predict_proba(data)
    expected = probas.to_numpy() @ probas.columns.to_numpy(float)
    ours = (aggregate["meeting"] + "/" + aggregate["question_id"].astype(str) + "/"
            + aggregate["model"])
    got = aggregate.set_index(ours)["ds_mean"].reindex(probas.index).to_numpy()
    assert np.abs(got - expected).max() < 1e-6  # CSV keeps 6+ significant digits
    assert reliability["annotator"].iloc[-1] == "careless"
    assert agreement.loc["dawid-skene", "mae"] < agreement.loc["mean", "mae"]
    assert (agreement["n"] == 390).all()
