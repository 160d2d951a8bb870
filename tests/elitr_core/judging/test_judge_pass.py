"""What absolute and pairwise judge passes share (``judging/judge_pass.py``): one spec's
fields, checks and filters, one report's counters for the pass record, one set-up of the
evaluator and its pass record."""

from __future__ import annotations

from typing import Any

import pytest

from db.engine import get_engine
from db.evaluators import evaluator_by_id
from db.transaction import writing
from elitr_core.backends.fake import FakeBackend
from elitr_core.errors import UserError
from elitr_core.judging.judge_pass import JudgePassSpec
from elitr_core.judging.pairs import PairwiseSpec
from elitr_core.judging.pairwise_runner import PairwiseReport, prepare_pairwise_evaluator
from elitr_core.judging.runner import JudgeReport, JudgeSpec, prepare_evaluator

SPECS = {JudgeSpec: "gpt4", PairwiseSpec: "battle"}


@pytest.mark.parametrize(("change", "message"), [
    ({"judge_model": " "}, "a judge pass needs a judge model"),
    ({"evaluator": "no spaces"}, "evaluator slug 'no spaces'"),
    ({"samples": 0}, r"samples must be 1\.\.100 \(got 0\)"),
    ({"max_new_tokens": 9000}, r"max_new_tokens must be 1\.\.8192 \(got 9000\)"),
])
@pytest.mark.parametrize("kind", list(SPECS))
def test_both_judges_check_their_shared_fields_alike(kind: type[JudgePassSpec],
                                                     change: dict[str, Any],
                                                     message: str) -> None:
    spec = kind(**{"judge_model": "j", "style": SPECS[kind], "evaluator": "e", **change})
    with pytest.raises(UserError, match=message):
        spec.check()


def test_each_judge_takes_its_own_styles() -> None:
    with pytest.raises(UserError, match="unknown judge style 'cream'; use gpt4 or prometheus"):
        JudgeSpec(judge_model="j", style="cream", evaluator="e").check()
    with pytest.raises(UserError, match="unknown pairwise style 'gpt4'; use cream or battle"):
        PairwiseSpec(judge_model="j", style="gpt4", evaluator="e").check()


def test_the_pairwise_filters_add_the_scheduling_to_the_shared_ones() -> None:
    shared = {"models": ["m"], "split": "dev", "setting": "qa", "mode": "st", "language": None}
    assert JudgeSpec(judge_model="j", style="gpt4", evaluator="e", models=("m",), split="dev",
                     setting="qa", mode="st").filters() == shared
    pairwise = PairwiseSpec(judge_model="j", style="battle", evaluator="e", models=("m",),
                            split="dev", setting="qa", mode="st", baseline="m")
    assert pairwise.filters() == {**shared, "scheduling": "baseline", "baseline": "m",
                                  "pairs_per_question": None}


def test_the_pass_record_counts_done_as_stored_while_running_and_asked_at_the_end() -> None:
    for report in (JudgeReport(total=10, skipped=2), PairwiseReport(total=10, skipped=2)):
        report.asked, report.stored, report.altered = 5, 3, 1
        report.judged(True)
        report.judged(False)
        running, ended = report.counters(None), report.counters("failed")
        assert (running["todo"], running["done"], ended["done"]) == (8, 3, 5)
        assert (running["ok"], running["unparsed"], running["altered"]) == (1, 1, 1)
    assert "calls" in PairwiseReport().counters(None)
    assert "calls" not in JudgeReport().counters(None)


@pytest.mark.parametrize(("prepare", "spec", "kind", "described", "extra"), [
    (prepare_evaluator, JudgeSpec(judge_model="j", style="gpt4", evaluator="e", samples=3,
                                  seed=7, models=("M",), max_new_tokens=99),
     "llm", "LLM judge j, gpt4 prompt (1..10)", {"decoding"}),
    (prepare_pairwise_evaluator, PairwiseSpec(judge_model="j", style="battle", evaluator="e",
                                              samples=3, seed=7, models=("M",)),
     "pairwise", "pairwise judge j, battle prompt", set()),
])
def test_both_judges_open_their_evaluator_and_pass_alike(
        small_sqlite: str, prepare: Any, spec: JudgePassSpec, kind: str, described: str,
        extra: set[str]) -> None:
    """The shared set-up (``evaluator_of`` + ``open_pass``): the evaluator made with its kind
    and description, the judge's identity stored, one pass record opened with the backend, the
    filters, samples and seed (then the judge's own details), and all of it committed."""
    backend = FakeBackend()
    engine = get_engine(small_sqlite)
    for _ in range(2):  # a second pass of the same judge appends a second record
        with writing(engine) as session:
            evaluator_id = prepare(session, spec, backend)
    with writing(engine) as session:
        evaluator = evaluator_by_id(session=session, evaluator_id=evaluator_id)
        assert evaluator is not None
        assert (evaluator.slug, evaluator.kind, evaluator.description) == ("e", kind, described)
        config = dict(evaluator.config)
    assert config["judge_model"] == "j" and config["style"] == spec.style
    assert len(config["passes"]) == 2
    record = config["passes"][-1]
    assert [k for k in record if k in {"backend", "filters", "samples", "seed", *extra}] == [
        "backend", "filters", "samples", "seed", *sorted(extra)]
    assert record["backend"] == backend.describe() and record["filters"] == spec.filters()
    assert (record["samples"], record["seed"], record["status"]) == (3, 7, "running")
    if extra:
        assert record["decoding"]["max_new_tokens"] == 99 and "seed" not in record["decoding"]
