"""The typed gate: every record that enters the database is validated here, once.

Benchmark JSON, response JSON, scores CSV rows, transcripts and the stored options of a study
or a run are checked against typed record models (pydantic ``TypedDict`` adapters) whose
bounds come from the schema in :mod:`db.models`, so SQLite and PostgreSQL accept and refuse
exactly the same inputs:

- integers fit the column's type on both backends (``Integer`` is 32 bits on PostgreSQL:
  -2**31..2**31-1), are written as JSON integers or ASCII digits, never as a float (``3.0``), a
  boolean or ``1_000``;
- strings fit the column's length (SQLite ignores ``VARCHAR(n)``, PostgreSQL refuses longer
  text); ``Text`` columns hold at most :data:`MAX_TEXT_CHARS` characters;
- text holds no NUL, lone surrogate (PostgreSQL refuses both) or C0 control other than tab and
  newline; ``\\r\\n`` and a lone ``\\r`` are normalised to ``\\n``;
- names (model, evaluator, meeting, annotator, study, variant) are NFC-normalised, stripped of
  surrounding spaces, runs of inner spaces collapsed to one, and refused when they hold an
  invisible, format or bidirectional character (U+200B, U+202E, U+FEFF, ...), a control, a
  separator other than the plain space, or start with ``'=`` / ``'+`` / ``'-`` / ``'@`` (the
  spelling the CSV export gives a name that a spreadsheet would run as a formula);
- scores are finite numbers in ``vocab.SCORE_MIN..SCORE_MAX`` (a numeric string is accepted).

The field checks themselves are pure functions in :mod:`elitr_core.data.fields`, the bounds
read from the schema in :mod:`elitr_core.data.bounds`. Text a model or a server made is not
refused: it is stored by the policy of :mod:`elitr_core.data.model_text`. A refusal
raises :class:`DataFileError` with one line naming the place, the field, the value
and what to do. :func:`check_score_rows` validates tidy scores-CSV rows in bulk (a few
microseconds a row): the streaming importer calls it per batch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, NotRequired, get_args, get_origin

from pydantic import BeforeValidator, Field, TypeAdapter, ValidationError
from pydantic_core import PydanticCustomError

# pydantic needs typing_extensions' TypedDict before Python 3.12
from typing_extensions import TypedDict, get_type_hints

from db import models
from elitr_core.data.bounds import MAX_TEXT_CHARS, integer_bounds, string_length
from elitr_core.data.fields import (
    as_name,
    blank_as,
    choice,
    clean_name,
    clean_text,
    csv_name,
    name_or_blank,
    score_number,
    whole_number,
)
from elitr_core.errors import DataFileError, UserError
from elitr_core.vocab import (
    ANSWER_POSITIONS,
    INTERLEAVED_MODES,
    MODES,
    QUESTION_TYPES,
    SETTINGS,
    SPLITS,
)

# ---------------------------------------------------------------------------------------------
# Field types, bounds read from the tables


def length_of(table: type[Any], column: str) -> Any:
    """The ``Field`` bounding a string to ``table.column``'s length."""
    return Field(max_length=string_length(table, column))


def range_of(table: type[Any], column: str, minimum: int | None = None) -> Any:
    """The ``Field`` bounding an integer to ``table.column``'s range, at least ``minimum``."""
    low, high = integer_bounds(table, column)
    return Field(ge=low if minimum is None else max(low, minimum), le=high)


NAME = BeforeValidator(as_name)
WHOLE = BeforeValidator(whole_number)
TEXT = BeforeValidator(clean_text)
BLANK_NONE = BeforeValidator(blank_as(None))
CSV_NAME = BeforeValidator(csv_name)

MeetingId = Annotated[str, length_of(models.Meeting, "external_id"), NAME]
ModelName = Annotated[str, length_of(models.Run, "model"), NAME]
EvaluatorSlug = Annotated[str, length_of(models.Evaluator, "slug"), NAME]
AnnotatorName = Annotated[str, length_of(models.Annotator, "name"), NAME]
QuestionNumber = Annotated[int, range_of(models.Question, "number", 0), WHOLE]
#: A seed a user gives: 0 or more (``models.NO_SEED``, -1, marks a run that recorded none).
Seed = Annotated[int, range_of(models.Run, "seed", 0), WHOLE]
Sample = Annotated[int, range_of(models.Score, "sample", 0), WHOLE]
Score = Annotated[float, BeforeValidator(score_number)]
QuestionType = Annotated[str, BeforeValidator(choice(QUESTION_TYPES))]
AnswerPosition = Annotated[str, BeforeValidator(choice(ANSWER_POSITIONS))]
QuestionText = Annotated[str, length_of(models.Question, "qa_text"), TEXT]


class QuestionIn(TypedDict):
    """One question of a benchmark file (QA or Conv phrasing, English or a translation)."""

    meeting: MeetingId
    number: QuestionNumber
    question_type: QuestionType
    answer_position: AnswerPosition
    text: QuestionText
    reference: Annotated[str, length_of(models.Question, "reference"), TEXT]


class ResponseIn(TypedDict):
    """One generated response of a responses file and the scores it carries (slug -> score)."""

    model: ModelName
    text: Annotated[str, length_of(models.Response, "text"), TEXT]
    scores: dict[EvaluatorSlug, Score]


class ScoreRowIn(TypedDict):
    """One row of a tidy scores CSV (the columns of ``export scores``,
    ``elitr_core.vocab.SCORE_COLUMNS``); blank optional cells: no seed, no annotator, sample 0,
    question facets not checked. A name written with the export's formula escape (``'=x``)
    reads back as the name (``=x``)."""

    meeting: Annotated[str, length_of(models.Meeting, "external_id"), CSV_NAME]
    question_id: QuestionNumber
    split: Annotated[str, BeforeValidator(choice(SPLITS))]
    setting: Annotated[str, BeforeValidator(choice(SETTINGS))]
    mode: Annotated[str, BeforeValidator(choice((*MODES, *INTERLEAVED_MODES)))]
    model: Annotated[str, length_of(models.Run, "model"), CSV_NAME]
    evaluator: Annotated[str, length_of(models.Evaluator, "slug"), CSV_NAME]
    score: Score
    seed: NotRequired[Annotated[Seed | None, BLANK_NONE]]
    annotator: NotRequired[Annotated[
        Annotated[str, length_of(models.Annotator, "name"), CSV_NAME] | None, BLANK_NONE]]
    sample: NotRequired[Annotated[Sample, BeforeValidator(blank_as(0))]]
    question_type: NotRequired[Annotated[QuestionType | None, BLANK_NONE]]
    answer_position: NotRequired[Annotated[AnswerPosition | None, BLANK_NONE]]


class TranscriptIn(TypedDict):
    """A meeting's transcript (or minutes) read from the corpus folder."""

    text: Annotated[str, length_of(models.Meeting, "transcript"), TEXT]
    source: Annotated[str, length_of(models.Meeting, "transcript_source"), TEXT]


class StudyIn(TypedDict):
    """The stored options of a new human scoring study."""

    name: Annotated[str, length_of(models.Study, "name"), NAME]
    order_seed: Annotated[int, range_of(models.Study, "order_seed", 0), WHOLE]
    per_item: Annotated[int, range_of(models.Study, "per_item", 1), WHOLE]
    batch_size: Annotated[Annotated[int, range_of(models.Study, "batch_size", 1), WHOLE] | None,
                          BLANK_NONE]
    max_concurrent: Annotated[
        Annotated[int, range_of(models.Study, "max_concurrent", 1), WHOLE] | None, BLANK_NONE]
    prolific_code: Annotated[
        Annotated[str, length_of(models.Study, "prolific_code"), NAME] | None, BLANK_NONE]
    prolific_study_id: Annotated[
        Annotated[str, length_of(models.Study, "prolific_study_id"), NAME] | None, BLANK_NONE]


class StudyNamesIn(TypedDict):
    """The names a study stores in its filters (models and meetings it scores)."""

    models: list[ModelName] | None
    meetings: list[MeetingId] | None


class RunIn(TypedDict):
    """The stored key of a generation run a user starts (model name, seed, variant)."""

    model: ModelName
    seed: Seed
    variant: NotRequired[Annotated[str, length_of(models.Run, "variant"),
                                   BeforeValidator(name_or_blank)]]


# The adapters are built once at import (pydantic-core compiles them into a Rust validator).
QUESTION = TypeAdapter(QuestionIn)
QUESTION_NUMBER = TypeAdapter(QuestionNumber)
MEETING_ID = TypeAdapter(MeetingId)
RESPONSE = TypeAdapter(ResponseIn)
SCORE_ROW = TypeAdapter(ScoreRowIn)
TRANSCRIPT = TypeAdapter(TranscriptIn)
STUDY = TypeAdapter(StudyIn)
RUN = TypeAdapter(RunIn)
STUDY_NAMES = TypeAdapter(StudyNamesIn)
EVALUATOR_SLUG = TypeAdapter(EvaluatorSlug)
ANNOTATOR_NAME = TypeAdapter(AnnotatorName)
#: An annotator's comment on a score (stored in ``Score.raw``).
COMMENT = TypeAdapter(Annotated[str, length_of(models.Score, "raw"), TEXT])
#: Why a researcher excluded an annotator (``Participation.reason``).
EXCLUSION_REASON = TypeAdapter(Annotated[str, length_of(models.Participation, "reason"), TEXT])


# ---------------------------------------------------------------------------------------------
# Validation with one-line errors


def _shown(value: Any) -> str:
    text = repr(value)  # repr escapes newlines, controls and invisible characters
    return text if len(text) <= 60 else text[:45] + "..." + text[-10:]


def describe(error: Mapping[str, Any], labels: Mapping[str, str] | None = None,
             offset: int = 0, what: str = "") -> tuple[str, str]:
    """``(place, problem)`` of one pydantic error: the field (with ``labels`` mapping field
    names to the file's own words) and what is wrong; a leading list index becomes
    ``line N`` (``N = index + offset``)."""
    loc = list(error["loc"])
    place = ""
    if loc and isinstance(loc[0], int):
        place = f"line {loc.pop(0) + offset}"
    names = ((labels or {}).get(str(part), str(part)) for part in loc
             if not isinstance(part, int))
    field = " ".join(name for name in names if name) or what
    kind = error["type"]
    if kind == "missing":
        return place, f"missing {field}"
    if kind in ("string_too_long",):
        limit = error.get("ctx", {}).get("max_length")
        return place, f"{field} is {len(error['input']):,} characters, more than the " \
                      f"{limit:,} stored: shorten it"
    if kind in ("greater_than_equal", "less_than_equal"):
        ctx = error.get("ctx", {})
        if kind == "greater_than_equal":
            return place, f"{field} {_shown(error['input'])} is below {ctx.get('ge')}"
        return place, f"{field} {_shown(error['input'])} is above {ctx.get('le'):,}, the " \
                      "largest number stored"
    message = error["msg"]
    return place, f"{field} {_shown(error['input'])} {message[0].lower()}{message[1:]}"


def validate(adapter: TypeAdapter[Any], data: Any, *, path: object, where: str = "",
             labels: Mapping[str, str] | None = None, what: str = "") -> Any:
    """``data`` checked by ``adapter``; the first problem as :class:`DataFileError`.

    ``labels`` maps field names to the file's own words; ``what`` names a bare value.
    """
    try:
        return adapter.validate_python(data)
    except ValidationError as exc:
        place, problem = describe(exc.errors(include_url=False)[0], labels, what=what)
        raise DataFileError(path, ": ".join(p for p in (where, place, problem) if p)) from None


def check_options(adapter: TypeAdapter[Any], data: Any, *, what: str) -> Any:
    """Options a user gave (CLI flags, page widgets) that will be stored, checked by
    ``adapter``; the first problem as a one-line :class:`UserError` (``what``: "study"...)."""
    try:
        return adapter.validate_python(data)
    except ValidationError as exc:
        _, problem = describe(exc.errors(include_url=False)[0], what=what)
        raise UserError(f"{what}: {problem}" if not problem.startswith(what) else problem
                        ) from None


class ScoreRowChecker:
    """Checks tidy scores-CSV rows against :class:`ScoreRowIn`'s own field types, in batches.

    A scores CSV repeats few values per column (meetings, models, evaluators, question ids,
    scores), so a batch is checked column by column: each distinct raw cell is validated once
    by the field's pydantic type and remembered (at most ``cache_size`` per column, so a file
    of junk stays bounded in memory); a repeated cell costs one dict lookup. Same answers as
    ``SCORE_ROW`` (tested), several times faster (``bench/bench_records.py``). Cells are the
    CSV reader's strings (or None for an absent optional column).
    """

    def __init__(self, *, path: object, cache_size: int = 1 << 16) -> None:
        hints = get_type_hints(ScoreRowIn, include_extras=True)
        self.path = path
        self.cache_size = cache_size
        # with postponed annotations, NotRequired is only seen in the resolved hints
        self.required = {name for name, hint in hints.items()
                         if get_origin(hint) is not NotRequired}
        self.columns = tuple(hints)
        self._fields: dict[str, tuple[TypeAdapter[Any], dict[Any, Any]]] = {
            name: (TypeAdapter(_unwrap_not_required(hint)), {}) for name, hint in hints.items()}

    def check_columns(self, rows: Sequence[Mapping[str, Any]], first_line: int
                      ) -> dict[str, list[Any]]:
        """The checked values of ``rows``, column by column (``ScoreRowIn``'s fields); the
        earliest refused line (``first_line`` is ``rows[0]``'s) raises :class:`DataFileError`."""
        return self.check_table({name: [row.get(name) for row in rows]
                                 for name in self.columns}, len(rows), first_line)

    def check_table(self, cells: Mapping[str, Sequence[Any]], count: int, first_line: int
                    ) -> dict[str, list[Any]]:
        """:meth:`check_columns` of ``count`` rows given as columns (name -> the rows' cells;
        a field without a column is None in every row), as a CSV reader's batch transposes."""
        out: dict[str, list[Any]] = {}
        errors: list[tuple[int, int, str]] = []
        for order, name in enumerate(self.columns):
            raws = cells.get(name)
            checked, problem = self._column(name, [None] if raws is None else raws)
            if problem is not None:
                index, text = problem
                errors.append((index, order, text))
            out[name] = checked * count if raws is None else checked
        if errors:
            index, _, text = min(errors)
            raise DataFileError(self.path, f"line {index + first_line}: {text}")
        return out

    def check(self, row: Mapping[str, Any], line: int) -> dict[str, Any]:
        """One checked row (a ``ScoreRowIn`` dict); ``line`` is named when it is refused."""
        return {name: values[0] for name, values in self.check_columns([row], line).items()}

    def _column(self, name: str, raws: Sequence[Any]
                ) -> tuple[list[Any], tuple[int, str] | None]:
        adapter, cache = self._fields[name]
        local: dict[Any, Any] = {}
        bad: dict[Any, str] = {}
        for raw in set(raws).difference(cache):
            if raw is None and name in self.required:
                bad[raw] = f"missing {name}"
                continue
            try:
                # the score's type is its before-validator alone: call it without pydantic
                value = score_number(raw) if name == "score" else adapter.validate_python(raw)
            except PydanticCustomError as exc:
                bad[raw] = f"{name} {_shown(raw)} {exc.message()}"
                continue
            except ValidationError as exc:
                error = exc.errors(include_url=False)[0]
                bad[raw] = describe({**error, "loc": (name, *error["loc"])})[1]
                continue
            (cache if len(cache) < self.cache_size else local)[raw] = value
        if bad:
            index = min(raws.index(raw) for raw in bad)
            return [], (index, bad[raws[index]])
        if local:
            return [local[raw] if raw in local else cache[raw] for raw in raws], None
        return list(map(cache.__getitem__, raws)), None  # map: a third of a comprehension's time


def _unwrap_not_required(hint: Any) -> Any:
    return get_args(hint)[0] if get_origin(hint) is NotRequired else hint


def check_score_rows(rows: Sequence[Mapping[str, Any]], *, path: object, first_line: int = 2
                     ) -> list[dict[str, Any]]:
    """Checked scores-CSV rows (``ScoreRowIn`` dicts); ``first_line`` is the file line of
    ``rows[0]`` (2: the line after the header), so a refusal names the file's line."""
    columns = ScoreRowChecker(path=path).check_columns(rows, first_line)
    names = list(columns)
    return [dict(zip(names, values, strict=True))
            for values in zip(*columns.values(), strict=True)]


__all__ = [
    "MAX_TEXT_CHARS",
    "MEETING_ID",
    "QUESTION",
    "QUESTION_NUMBER",
    "RESPONSE",
    "RUN",
    "SCORE_ROW",
    "ANNOTATOR_NAME",
    "COMMENT",
    "EXCLUSION_REASON",
    "EVALUATOR_SLUG",
    "STUDY_NAMES",
    "ScoreRowChecker",
    "STUDY",
    "TRANSCRIPT",
    "QuestionIn",
    "ResponseIn",
    "RunIn",
    "ScoreRowIn",
    "StudyIn",
    "TranscriptIn",
    "check_options",
    "check_score_rows",
    "clean_name",
    "clean_text",
    "integer_bounds",
    "score_number",
    "string_length",
    "validate",
    "whole_number",
]
