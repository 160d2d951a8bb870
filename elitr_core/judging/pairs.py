"""Which pairs of responses a pairwise judge pass asks about, and in which orders.

Pairs are formed within one *cell*: the responses of different runs to the same question in
the same setting, mode, split, language and seed. A run is named by its model, with its
``--variant`` in parentheses when it has one (so a full-context and a retrieval run of one
model meet like two models). Scheduling, per cell:

- ``all``: every pair (n models: n(n-1)/2 pairs);
- ``baseline``: every model against ``--baseline`` (n-1 pairs; cells without it are skipped);
- ``budget``: ``--pairs-per-question`` pairs drawn at random among all pairs, with a generator
  seeded by the pass's seed and the question, so a resumed pass draws the same pairs.

Every pair is asked in both orders (position bias) and ``--samples`` times; a pass asks only
what has no ``ok`` judgment yet, and a CREAM judgment whose key facts were read but whose
alignment was not is asked again from the alignment step only.
"""

from __future__ import annotations

import itertools
import zlib
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from sqlmodel import Session

from db.models import NO_SEED
from db.pairwise import stored_pairwise_state
from db.responses import responses_to_judge
from elitr_core.errors import UserError
from elitr_core.judging.judge_pass import JudgePassSpec
from elitr_core.passes.records import DEFAULT_SEED
from elitr_core.prompts.pairwise import DEFAULT_MAX_KEY_FACTS
from elitr_core.vocab import PAIRWISE_STYLES

ORDERS: tuple[str, ...] = ("ab", "ba")


@dataclass(frozen=True)
class PairwiseSpec(JudgePassSpec):
    """A pairwise judge pass: :class:`JudgePassSpec`'s fields, the scheduling (``baseline``
    or ``pairs_per_question``) and CREAM's ``max_key_facts``."""

    kind: ClassVar[str] = "pairwise"
    styles: ClassVar[tuple[str, ...]] = PAIRWISE_STYLES

    baseline: str | None = None
    pairs_per_question: int | None = None
    max_key_facts: int = DEFAULT_MAX_KEY_FACTS

    @property
    def scheduling(self) -> str:
        """``baseline``, ``budget`` or ``all``."""
        if self.baseline:
            return "baseline"
        return "budget" if self.pairs_per_question is not None else "all"

    def check(self) -> None:
        """Raise :class:`UserError` when the spec cannot run."""
        super().check()
        if self.baseline and self.pairs_per_question is not None:
            raise UserError("--baseline and --pairs-per-question exclude each other: choose one "
                            "scheduling")
        if self.pairs_per_question is not None and self.pairs_per_question < 1:
            raise UserError(f"--pairs-per-question must be at least 1, got "
                            f"{self.pairs_per_question}")
        if not 1 <= self.max_key_facts <= 100:
            raise UserError(f"--max-key-facts must be 1..100 (got {self.max_key_facts})")

    def filters(self) -> dict[str, Any]:
        """The response filters and the scheduling, as stored with the pass."""
        return {**super().filters(), "scheduling": self.scheduling, "baseline": self.baseline,
                "pairs_per_question": self.pairs_per_question}


@dataclass(frozen=True)
class PairItem:
    """One judgment to ask: the pair (``a`` the lower response id), order, sample, inputs.

    ``key_facts`` holds CREAM key facts already read by an earlier pass (alignment only).
    """

    response_a_id: int
    response_b_id: int
    order: str
    sample: int
    seed: int
    question: str
    reference: str
    text_a: str
    text_b: str
    key_facts: tuple[str, ...] | None = None
    raw_facts: str | None = None

    @property
    def shown(self) -> tuple[str, str]:
        """The two answers in the order the judge sees them."""
        return (self.text_a, self.text_b) if self.order == "ab" else (self.text_b, self.text_a)


@dataclass(frozen=True)
class _Entry:
    response_id: int
    label: str
    text: str
    question: str
    reference: str
    seed: int


def _cells(session: Session, spec: PairwiseSpec) -> dict[tuple[Any, ...], list[_Entry]]:
    rows = responses_to_judge(
        session=session, labels=True, by_question=True,
        filters={name: getattr(spec, name) for name in ("split", "setting", "mode", "language")})
    cells: dict[tuple[Any, ...], list[_Entry]] = {}
    for rid, text, seed, setting, lang, qid, qa, conv, ref, model, label, mode, split in rows:
        if spec.models and label not in spec.models and model not in spec.models:
            continue
        base = spec.seed if spec.seed is not None else (seed if seed != NO_SEED
                                                         else DEFAULT_SEED)
        question = (conv or qa) if setting == "conv" else qa
        cells.setdefault((qid, setting, mode, split, lang, seed), []).append(
            _Entry(rid, label, text, question, ref, base))
    if not cells:
        raise UserError(f"no stored response matches {spec.filters()}: check --model, --split, "
                        "--setting, --mode (`python -m elitr_core export scores` lists them)")
    return cells


def scheduled_pairs(spec: PairwiseSpec, key: tuple[Any, ...],
                    entries: list[_Entry]) -> list[tuple[_Entry, _Entry]]:
    """The pairs of one cell under the spec's scheduling (models in name order)."""
    ordered = sorted(entries, key=lambda e: e.label)
    pairs = list(itertools.combinations(ordered, 2))
    if spec.baseline:
        return [p for p in pairs if spec.baseline in (p[0].label, p[1].label)]
    if spec.pairs_per_question is not None and len(pairs) > spec.pairs_per_question:
        seed = spec.seed if spec.seed is not None else DEFAULT_SEED
        rng = np.random.default_rng([seed, zlib.crc32(repr(key).encode())])
        chosen = sorted(rng.choice(len(pairs), spec.pairs_per_question, replace=False))
        return [pairs[i] for i in chosen]
    return pairs


def collect_pair_items(session: Session, spec: PairwiseSpec,
                       evaluator_id: int) -> tuple[list[PairItem], int]:
    """Judgments still to ask, and how many the scheduling holds in all."""
    cells = _cells(session, spec)
    if spec.baseline and not any(e.label == spec.baseline for es in cells.values() for e in es):
        labels = sorted({e.label for es in cells.values() for e in es})
        raise UserError(f"--baseline {spec.baseline!r} has no response here; choose one of "
                        f"{labels}")
    state = stored_pairwise_state(session=session, evaluator_id=evaluator_id)
    items: list[PairItem] = []
    total = 0
    for key, entries in cells.items():
        for first, second in scheduled_pairs(spec, key, entries):
            a, b = sorted((first, second), key=lambda e: e.response_id)
            for order, sample in itertools.product(ORDERS, range(spec.samples)):
                total += 1
                status, facts, raw_facts = state.get(
                    (a.response_id, b.response_id, order, sample), ("", None, None))
                if status == "ok":
                    continue
                kept = tuple(facts) if spec.style == "cream" and facts else None
                items.append(PairItem(a.response_id, b.response_id, order, sample,
                                      a.seed + sample, a.question, a.reference, a.text, b.text,
                                      kept, raw_facts if kept else None))
    return items, total
