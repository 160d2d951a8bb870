"""The ICC of a random-assignment study (``--assignment random --batch 8``: every response
scored by three annotators drawn at random, no two annotators sharing a second response) and
Krippendorff's alpha beside every ICC block of ``export icc``.

References: the one-way ICC(1,k) from the hand ANOVA of ``test_icc.hand_icc`` on the
responses x slots table built here the obvious way (each response's ratings in annotator-name
order), 1e-10; alpha from the coincidence-matrix formula for the interval metric written out
with numpy (Krippendorff 2011, section C), 1e-10.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from elitr_core.errors import DegenerateDataError
from elitr_core.export.tables import stat_table
from elitr_core.stats.icc import annotator_icc_overall
from elitr_core.vocab import EXPORT_COLUMNS, SCORE_COLUMNS
from tests.elitr_core.stats.test_icc import hand_icc

MEETINGS = [f"meeting_en_test2_{i:03d}" for i in range(1, 5)]


def random_study(seed: int = 0, per_response: int = 3, batch: int = 8) -> pd.DataFrame:
    """48 responses (4 meetings x 12 questions), each scored by ``per_response`` annotators;
    annotators take batches of ``batch`` responses drawn at random, as the study's random
    assignment does, so no meeting has two annotators on two common responses."""
    rng = np.random.default_rng(seed)
    responses = [(m, q) for m in MEETINGS for q in range(1, 13)]
    quality = rng.normal(5.5, 1.5, len(responses))
    seats = np.array([r for r in range(len(responses)) for _ in range(per_response)])
    while True:  # a batch never holds one response twice
        order = rng.permutation(seats)
        batches = order.reshape(-1, batch)
        if all(len(set(b)) == batch for b in batches):
            break
    records = []
    for a, batch_of in enumerate(batches):
        for r in batch_of:
            meeting, question = responses[r]
            score = float(np.clip(np.rint(quality[r] + rng.normal(0, 1.0)), 1, 10))
            records.append({"meeting": meeting, "question_id": question, "split": "test2",
                            "setting": "qa", "mode": "st", "seed": np.nan, "model": "M",
                            "question_type": "what", "answer_position": "B",
                            "evaluator": "silver-human", "annotator": f"p{a:02d}",
                            "sample": 0, "score": score})
    return pd.DataFrame(records, columns=list(SCORE_COLUMNS))


def slot_table(scores: pd.DataFrame, k: int) -> np.ndarray:
    """Responses x k slots: each response's ratings ordered by annotator name."""
    rows = []
    for _, part in scores.groupby(["meeting", "question_id"]):
        ordered = part.sort_values("annotator")["score"].to_numpy(float)
        if len(ordered) >= k:
            rows.append(ordered[:k])
    return np.array(rows)


def interval_alpha(scores: pd.DataFrame, unit: list[str], coder: str) -> float:
    """Krippendorff's alpha (interval) from the coincidence formula, pairable values only."""
    units = [part["score"].to_numpy(float) for _, part in scores.groupby(unit)]
    units = [u for u in units if u.size >= 2]
    values = np.concatenate(units)
    n = values.size
    observed = sum(sum((a - b) ** 2 for a, b in itertools.permutations(u, 2)) / (u.size - 1)
                   for u in units) / n
    expected = sum((a - b) ** 2 for a, b in itertools.permutations(values, 2)) / (n * (n - 1))
    return 1 - observed / expected


def test_random_assignment_gets_the_one_way_icc_from_response_slots() -> None:
    scores = random_study()
    table = annotator_icc_overall(scores)
    row = table.iloc[0]
    assert row["icc_type"] == "ICC(1,k)" and row["n_targets"] == 48 and row["n_raters"] == 3
    assert row["icc"] == pytest.approx(hand_icc(slot_table(scores, 3))["ICC(1,k)"], abs=1e-10)
    assert row["ci_low"] < row["icc"] < row["ci_high"]
    assert "slots per response" in row["note"] and "no meeting" not in row["note"]
    assert row["alpha"] == pytest.approx(
        interval_alpha(scores, ["meeting", "question_id"], "annotator"), abs=1e-10)


def test_a_response_short_of_ratings_is_left_out_and_said() -> None:
    scores = random_study(seed=1)
    first = scores.sort_values("annotator").drop_duplicates(["meeting", "question_id"])
    short = scores.drop(first.index[:5])  # five responses keep two ratings
    row = annotator_icc_overall(short).iloc[0]
    assert row["n_targets"] == 43 and row["n_raters"] == 3
    assert row["icc"] == pytest.approx(hand_icc(slot_table(short, 3))["ICC(1,k)"], abs=1e-10)
    assert "left out 5 response(s) with fewer than 3 ratings" in row["note"]


def test_export_icc_has_alpha_beside_every_block() -> None:
    scores = random_study(seed=2)
    table = stat_table("icc", scores)
    assert tuple(table.columns) == EXPORT_COLUMNS["icc"]
    overall = table[(table["group"] == "all")].iloc[0]
    assert overall["icc_type"] == "ICC(1,k)" and pd.notna(overall["icc"])
    assert overall["alpha"] == pytest.approx(
        interval_alpha(scores, ["meeting", "question_id"], "annotator"), abs=1e-10)
    per_meeting = table[table["group"] != "all"].set_index("group")
    for meeting in MEETINGS:  # no complete table in a meeting, but alpha needs none
        part = scores[scores["meeting"] == meeting]
        assert pd.isna(per_meeting.loc[meeting, "icc"])
        assert per_meeting.loc[meeting, "alpha"] == pytest.approx(
            interval_alpha(part, ["question_id"], "annotator"), abs=1e-10)


def test_complete_disagreement_reads_the_same_in_every_block() -> None:
    """Two annotators (and two judges) who disagree completely on three responses: every block
    leaves its mean-of-k ICC empty with the same cause, and alpha (defined) is below 0."""
    base = random_study().iloc[:0]
    rows = []
    for question, (a, b) in enumerate([(1.0, 9.0), (9.0, 1.0), (3.0, 7.0)], start=1):
        common = {"meeting": MEETINGS[0], "question_id": question, "split": "test2",
                  "setting": "qa", "mode": "st", "seed": np.nan, "model": "M",
                  "question_type": "what", "answer_position": "B", "sample": 0}
        rows += [{**common, "evaluator": "silver-human", "annotator": "p1", "score": a},
                 {**common, "evaluator": "silver-human", "annotator": "p2", "score": b},
                 {**common, "evaluator": "judge-a", "annotator": None, "score": a},
                 {**common, "evaluator": "judge-b", "annotator": None, "score": b}]
    scores = pd.concat([base, pd.DataFrame(rows)], ignore_index=True)
    table = stat_table("icc", scores[scores["evaluator"] != "silver-human"])
    k_forms = table[table["icc_type"].str.endswith(",k)")]
    assert k_forms["icc"].isna().all()
    assert k_forms["note"].str.startswith("complete disagreement").all()
    assert (table["alpha"] < 0).all()
    humans = stat_table("icc", scores[scores["evaluator"] == "silver-human"])
    assert humans["icc"].isna().all() and (humans["alpha"] < 0).all()
    assert humans["note"].str.contains("complete disagreement").all()


def test_a_table_too_small_for_the_anova_is_said() -> None:
    scores = random_study().iloc[:0]
    rows = [{"meeting": MEETINGS[0], "question_id": q, "split": "test2", "setting": "qa",
             "mode": "st", "seed": np.nan, "model": "M", "question_type": "what",
             "answer_position": "B", "sample": 0, "evaluator": judge, "annotator": None,
             "score": float(q + (judge == "judge-b"))}
            for q in (1, 2) for judge in ("judge-a", "judge-b")]
    scores = pd.concat([scores, pd.DataFrame(rows)], ignore_index=True)
    with pytest.raises(DegenerateDataError, match="at least 5 ratings"):
        stat_table("icc", scores)
