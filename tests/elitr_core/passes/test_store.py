"""The store step of a pass (``passes/store.py``): what it guarantees on its own, and that a
generation run, a judge pass and a pairwise pass (battle and CREAM) all store through it, so
the same unstorable text is stored, counted as altered and shown on the progress bar the same
way by each."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import keyed
from db.engine import get_engine
from db.models import Evaluator, PairwiseJudgment, Response, Score
from elitr_core.backends.base import Completion, DecodingConfig, Message
from elitr_core.backends.fake import FakeBackend
from elitr_core.data.bounds import MAX_TEXT_CHARS
from elitr_core.data.database import open_database
from elitr_core.data.model_text import IN_WORDS
from elitr_core.generation.runs import GenerationSpec, generate_run
from elitr_core.judging.pairs import PairwiseSpec
from elitr_core.judging.pairwise_runner import pairwise_judge_run
from elitr_core.judging.runner import JudgeSpec, judge_run
from elitr_core.passes.lifecycle import PassReport
from elitr_core.passes.records import NullProgress
from elitr_core.passes.store import Store, Storing
from tests.elitr_core.run_helpers import MEETINGS, Events, rows, set_transcripts


def _evaluators(*, session: Session, rows: Sequence[dict[str, Any]]) -> None:
    keyed.upsert(session=session, table=Evaluator, keys=["slug"], rows=rows,
                 update=["description", "config"])


def _evaluator(slug: str, description: str) -> dict[str, Any]:
    return {"slug": slug, "kind": "llm", "description": description, "config": {"n": 1}}


def _store(engine: Engine, report: PassReport, **changes: Any) -> tuple[Store, Events]:
    progress = Events()
    storing = Storing(Evaluator, _evaluators, key=("slug",), note="config")
    return Store(engine, replace(storing, **changes), report, progress), progress


def test_an_output_stored_twice_is_counted_once_and_shown_when_finished(
        sqlite_url: str) -> None:
    engine = open_database(sqlite_url)
    report = PassReport()
    store, progress = _store(engine, report)
    store.put(_evaluator("e", "step\x00"), finished=False)  # a step the pass revisits
    assert (report.altered, report.asked, progress.calls) == (1, 0, [])
    store.put(_evaluator("e", "final\x00"), original="final\x00")
    store.put(_evaluator("clean", "ok"), original="ok")
    store.close()
    assert (report.altered, report.asked, report.stored) == (1, 2, 2)
    assert progress.calls == [("advance", 1), ("advance", 1)]
    stored = dict(rows(sqlite_url, "SELECT slug, description FROM evaluator"))
    assert stored == {"e": "final\ufffd", "clean": "ok"}
    (config,), = rows(sqlite_url, "SELECT config FROM evaluator WHERE slug = 'e'")
    assert json.loads(config) == {"n": 1, "altered": {"replaced": 1, "cut": 0,
                                                      "original": '"final\\u0000"'}}
    (config,), = rows(sqlite_url, "SELECT config FROM evaluator WHERE slug = 'clean'")
    assert json.loads(config) == {"n": 1}  # an output stored as said notes nothing


def test_an_altered_output_notes_its_original_only_where_the_pass_asks(
        sqlite_url: str) -> None:
    engine = open_database(sqlite_url)
    store, _ = _store(engine, PassReport(), note=None)  # a judge's output: the policy's form
    store.put(_evaluator("j", "said\x00"), original="said\x00")
    store.close()
    (config,), = rows(sqlite_url, "SELECT config FROM evaluator WHERE slug = 'j'")
    assert json.loads(config) == {"n": 1}


def test_after_batch_runs_in_the_batch_transaction(sqlite_url: str) -> None:
    engine = open_database(sqlite_url)
    seen: list[int] = []

    def after(session: Session) -> None:
        seen.append(report.stored)  # counted before, in the same transaction
        raise RuntimeError("the pass record could not be written")

    report = PassReport()
    store, _ = _store(engine, report, after_batch=after)
    store.put(_evaluator("a", "x"))
    with pytest.raises(RuntimeError, match="pass record"):
        store.close()
    assert seen == [1] and store.written == 0
    assert rows(sqlite_url, "SELECT slug FROM evaluator") == []  # rolled back together


#: What the model says, whatever it is asked: a NUL, and more than any column holds.
SAID = "said\x00 " + "y" * (MAX_TEXT_CHARS + 100)


class Unstorable(FakeBackend):
    """Says :data:`SAID` to every question and judge prompt; CREAM's key facts and alignment
    are the fake backend's with a NUL in every key fact, so each CREAM judgment is stored
    altered after both of its steps."""

    def _answer(self, conversation: list[Message], decoding: DecodingConfig,
                cache_key: str | None) -> Completion:
        done = super()._answer(conversation, decoding, cache_key)
        if "ALIGNMENT:" in conversation[-1]["content"] or "KEY FACTS:" in done.text:
            return replace(done, text=done.text.replace("Key fact", "Key\x00 fact"))
        return replace(done, text=SAID)


@pytest.fixture
def puts(monkeypatch: pytest.MonkeyPatch) -> list[tuple[type[Any], bool]]:
    """Every row given to the store step: its table and whether the output was finished."""
    seen: list[tuple[type[Any], bool]] = []
    put = Store.put

    def spy(self: Store, values: dict[str, Any], *, original: str | None = None,
            finished: bool = True) -> None:
        seen.append((self.storing.table, finished))
        put(self, values, original=original, finished=finished)

    monkeypatch.setattr(Store, "put", spy)
    return seen


def _generate(url: str, model: str, progress: Any) -> Any:
    spec = GenerationSpec(model=model, setting="qa", mode="st", split="test2",
                          meetings=MEETINGS[:1], decoding=DecodingConfig(max_new_tokens=8))
    return generate_run(get_engine(url), spec, Unstorable(), progress=progress)


def _config(url: str, sql: str, **params: Any) -> dict[str, Any]:
    (config,), = rows(url, sql, **params)
    return json.loads(config) if isinstance(config, str) else dict(config)


@pytest.mark.parametrize("kind", ["generation", "judge", "battle", "cream"])
def test_every_pass_stores_counts_and_shows_unstorable_text_the_same_way(
        bundled_sqlite: str, puts: list[tuple[type[Any], bool]], kind: str) -> None:
    url, engine, progress = bundled_sqlite, get_engine(bundled_sqlite), Events()
    set_transcripts(url, MEETINGS[:1])
    if kind == "generation":
        report: Any = _generate(url, "m", progress)
        table, label = Response, report.label
        recorded = _config(url, "SELECT config FROM run WHERE id = :r", r=report.run_id)
        altered, done = recorded["altered_answers"], report.asked
        texts = [t for t, in rows(url, "SELECT text FROM response WHERE run_id = :r",
                                  r=report.run_id)]
    else:
        _generate(url, "m", NullProgress())
        _generate(url, "m2", NullProgress())
        puts.clear()
        if kind == "judge":
            report = judge_run(engine, JudgeSpec(judge_model="j", style="gpt4", evaluator=kind,
                                                 models=("m",)), Unstorable(), progress=progress)
            table, label = Score, f"judge {kind}"
            sql = "SELECT raw FROM score s JOIN evaluator e ON e.id = s.evaluator_id"
        else:
            report = pairwise_judge_run(engine, PairwiseSpec(
                judge_model="j", style=kind, evaluator=kind, models=("m", "m2"),
                max_key_facts=4), Unstorable(), progress=progress)
            table, label = PairwiseJudgment, f"pairwise {kind}"
            sql = ("SELECT coalesce(raw, '') || coalesce(raw_facts, '') FROM pairwisejudgment p "
                   "JOIN evaluator e ON e.id = p.evaluator_id")
        texts = [t for t, in rows(url, f"{sql} WHERE e.slug = :e", e=kind)]
        recorded = _config(url, "SELECT config FROM evaluator WHERE slug = :e",
                           e=kind)["passes"][-1]
        altered, done = recorded["altered"], recorded["done"]
    n = report.asked
    assert n == len(texts) > 0 and report.status == "done"
    # every output altered, counted once (CREAM stores each twice), and written
    assert (report.altered, report.stored, altered, done) == (n, n, n, n)
    assert all("\x00" not in t and "\ufffd" in t for t in texts)
    if kind != "cream":
        assert all(t.endswith(" characters not stored]") for t in texts)
    # the progress bar: the outputs to ask, then one step per finished output
    assert progress.calls == [("start", n, label), *[("advance", 1)] * n, ("close",)]
    # every row went through the store step: a pass writing past it fails here
    assert [f for t, f in puts if t is table and f] == [True] * n
    assert len(puts) == n + (n if kind == "cream" else 0)
    assert report.altered_line() == (f"{n:,} {report.outputs} stored altered by the storage "
                                     f"policy for model text ({IN_WORDS})")
