"""``export silver-aggregate``, ``annotator-reliability`` and ``silver-aggregate-agreement``
through the CLI on SQLite and PostgreSQL: a crowd of annotators imported as a scores CSV on the
bundled gold-scored responses. The default aggregate (each annotator's offset and precision)
equals the Python fit on the exported scores and beats the mean on gold; ``--aggregate
dawid-skene`` equals crowd-kit's DawidSkene on the exported scores, and is refused, in one
sentence, on a study where annotators gave few scores."""

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


def import_crowd(url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                 names: list[str], per: int = 3) -> pd.DataFrame:
    """``per`` of the annotators ``names`` score each gold-scored response (noise by the
    name's NOISE entry, ``careless*`` at random); the gold scores."""
    gold = export(url, capsys, "scores", "--evaluator", "gold-human")
    rng = np.random.default_rng(0)
    lines = ["meeting,question_id,split,setting,mode,model,evaluator,annotator,score"]
    for r in gold.itertuples():
        for name in rng.choice(names, per, replace=False):
            sd = NOISE.get(name, 1.0 if not name.startswith("careless") else None)
            value = (rng.integers(1, 11) if sd is None
                     else np.clip(np.rint(r.score + rng.normal(0, sd)), 1, 10))
            lines.append(f"{r.meeting},{r.question_id},test2,qa,st,{r.model},crowd,{name},"
                         f"{int(value)}")
    path = tmp_path / "crowd.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["import", str(path), "--db", url]) == 0
    return gold


def test_the_default_aggregate_beats_the_mean_and_equals_its_fit(
        bundled_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from elitr_core.stats.annotator_offsets import gaussian_aggregate

    gold = import_crowd(bundled_db, tmp_path, capsys, list(NOISE))
    aggregate = export(bundled_db, capsys, "silver-aggregate", "--evaluator", "crowd")
    reliability = export(bundled_db, capsys, "annotator-reliability", "--evaluator", "crowd")
    agreement = export(bundled_db, capsys, "silver-aggregate-agreement", "--evaluator",
                       "crowd,gold-human").set_index("aggregate")
    assert len(aggregate) == len(gold) == 390 and (aggregate["n_annotators"] == 3).all()
    assert (reliability["method"] == "gaussian").all()
    scores = export(bundled_db, capsys, "scores", "--evaluator", "crowd")
    scores = scores[scores["annotator"].notna()]
    key = scores["meeting"] + "/" + scores["question_id"].astype(str) + "/" + scores["model"]
    tasks, task = np.unique(key, return_inverse=True)
    names, worker = np.unique(scores["annotator"], return_inverse=True)
    fit = gaussian_aggregate(task, worker, scores["score"].to_numpy(float))
    ours = (aggregate["meeting"] + "/" + aggregate["question_id"].astype(str) + "/"
            + aggregate["model"])
    got = aggregate.set_index(ours)["aggregate"].reindex(tasks).to_numpy()
    assert np.abs(got - fit.mu).max() < 1e-6  # CSV keeps 6+ significant digits
    assert reliability["annotator"].iloc[-1] == "careless"
    assert agreement.loc["gaussian", "mae"] < agreement.loc["mean", "mae"]
    assert agreement.loc["gaussian", "mae"] < agreement.loc["median", "mae"]


def test_dawid_skene_equals_crowd_kit_on_a_dense_study(
        bundled_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """5 annotators, 3 a response: 234 scores each, dense enough for Dawid-Skene."""
    import_crowd(bundled_db, tmp_path, capsys, list(NOISE))
    aggregate = export(bundled_db, capsys, "silver-aggregate", "--evaluator", "crowd",
                       "--aggregate", "dawid-skene")
    reliability = export(bundled_db, capsys, "annotator-reliability", "--evaluator", "crowd",
                         "--aggregate", "dawid-skene")
    agreement = export(bundled_db, capsys, "silver-aggregate-agreement", "--evaluator",
                       "crowd,gold-human", "--aggregate", "dawid-skene").set_index("aggregate")
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
    got = aggregate.set_index(ours)["aggregate"].reindex(probas.index).to_numpy()
    assert np.abs(got - expected).max() < 1e-6  # CSV keeps 6+ significant digits
    assert reliability["annotator"].iloc[-1] == "careless"
    assert reliability["accuracy"].between(0, 1).all()
    assert agreement.loc["dawid-skene", "mae"] < agreement.loc["mean", "mae"]
    assert (agreement["n"] == 390).all()


def test_dawid_skene_is_refused_on_a_sparse_study(
        bundled_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """30 annotators, 3 a response: about 39 scores each, 90 parameters each for Dawid-Skene;
    refused in one sentence (exit 2), the default still answers."""
    import_crowd(bundled_db, tmp_path, capsys, [f"a{i}" for i in range(30)])
    capsys.readouterr()
    code = main(["export", "silver-aggregate", "--evaluator", "crowd", "--aggregate",
                 "dawid-skene", *FILTERS, "--db", bundled_db])
    err = capsys.readouterr().err
    assert code == 2 and "Dawid-Skene is for dense studies only" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert len(export(bundled_db, capsys, "silver-aggregate", "--evaluator", "crowd")) == 390
