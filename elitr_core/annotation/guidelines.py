"""What an annotator reads before scoring: the rubric as clean text and worked examples.

The rubric is the benchmark's 10-point one (``prompts/texts/rubric_10.txt``), shown without the
prompt's "[...]" brackets. The worked examples are set by the researcher per study
(``Study.guidelines``); a study without its own uses :data:`DEFAULT_EXAMPLES`, written from the
paper's instructions to annotators (the rubric's levels applied to one ELITR-Bench-style
question: a response equivalent to the reference, a correct but padded one, a partial one and
one claiming the transcript does not say).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from functools import cache

from sqlmodel import Session

from db.keyed import save
from db.studies import study_by_id
from elitr_core.errors import UserError
from elitr_core.prompts.assembly import rubric_text
from elitr_core.vocab import SCORE_MAX, SCORE_MIN

_LEVEL = re.compile(r"^Score (\d+(?:-\d+)?): (.*)$")


@dataclass(frozen=True)
class Example:
    """A worked example: a question, its reference, a response, the right score and why."""

    question: str
    reference: str
    response: str
    score: int
    why: str


_Q = "Who will send the updated schedule to the partners?"
_REF = "Martin will send it by Friday."
DEFAULT_EXAMPLES: tuple[Example, ...] = (
    Example(_Q, _REF, "Martin is going to send the schedule by Friday.", 10,
            "Says exactly what the reference says: essentially equivalent."),
    Example(_Q, _REF, "According to the meeting, several people discussed the schedule at "
            "length. In the end it was agreed that Martin will send it, by Friday, after "
            "checking it with the team.", 9,
            "Contains the reference answer but adds unnecessary elements."),
    Example(_Q, _REF, "Martin will send it.", 6,
            "Partially correct: the person is right, the deadline is missing."),
    Example(_Q, _REF, "The transcript does not say who will send the schedule.", 2,
            "Claims the information is not there although the reference gives it."),
)


def rubric_criterion() -> str:
    """The rubric's question to the annotator, without the prompt's brackets."""
    return rubric_text(10).splitlines()[0].strip().removeprefix("[").removesuffix("]")


def rubric_levels() -> list[tuple[str, str]]:
    """``(scores, meaning)`` per rubric level, e.g. ``("7-8", "The response ...")``."""
    levels = []
    for line in rubric_text(10).splitlines()[1:]:
        match = _LEVEL.match(line.strip())
        if match:
            levels.append((match.group(1), match.group(2)))
    return levels


@cache
def rubric_shown() -> str:
    """The rubric as the annotation page shows it, built once per process: the criterion,
    then ``scores: meaning`` per level, one a line (one text element, where one per line
    cost the page's every rerun a dozen elements)."""
    return "\n".join([rubric_criterion(), *(f"{s}: {m}" for s, m in rubric_levels())])


def score_meaning(value: int) -> str:
    """The rubric level text of one score 1..10."""
    for scores, meaning in rubric_levels():
        low, _, high = scores.partition("-")
        if int(low) <= value <= int(high or low):
            return meaning
    raise UserError(f"a score must be an integer from {SCORE_MIN:.0f} to {SCORE_MAX:.0f}, "
                    f"not {value!r}")


def _example(raw: object) -> Example:
    if not isinstance(raw, dict):
        raise UserError("each worked example needs question, reference, response, score, why")
    try:
        example = Example(question=str(raw["question"]).strip(),
                          reference=str(raw["reference"]).strip(),
                          response=str(raw["response"]).strip(), score=int(raw["score"]),
                          why=str(raw.get("why") or "").strip())
    except (KeyError, TypeError, ValueError):
        raise UserError("each worked example needs question, reference, response and an "
                        "integer score") from None
    if not SCORE_MIN <= example.score <= SCORE_MAX:
        raise UserError(f"a worked example's score must be {SCORE_MIN:.0f}..{SCORE_MAX:.0f}, "
                        f"not {example.score}")
    if not (example.question and example.reference and example.response):
        raise UserError("a worked example needs a question, a reference and a response")
    return example


def study_examples(session: Session, study_id: int) -> list[Example]:
    """The study's worked examples (the defaults when the researcher set none)."""
    study = study_by_id(session=session, study_id=study_id)
    stored = (study.guidelines or {}).get("examples") if study else None
    if not stored:
        return list(DEFAULT_EXAMPLES)
    return [_example(raw) for raw in stored]


def examples_of(session: Session, name: str) -> list[Example]:
    """The worked examples of the study called ``name``."""
    from elitr_core.annotation.quality import get_study

    study = get_study(session, name)
    assert study.id is not None
    return study_examples(session, study.id)


def set_study_examples(session: Session, name: str, examples: list[dict[str, object]]) -> int:
    """Replace the worked examples of the study ``name`` (an empty list restores the defaults);
    return how many are stored. Refuses an incomplete example, naming what is missing."""
    from elitr_core.annotation.quality import get_study

    study = get_study(session, name)
    checked = [asdict(_example(raw)) for raw in examples]
    study.guidelines = {"examples": checked} if checked else None
    save(session=session, rows=[study])
    return len(checked)
