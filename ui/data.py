"""The app's database and its read caches: the engine, the scores frame, export tables,
computed statistics, figures, the drilldown's question table, transcript excerpts, and the one
write the analysis pages make (n-gram metric scores).

Only ``app.py``, ``ui/`` and ``pages/`` import streamlit; the core computes, these functions cache.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

import streamlit as st

from elitr_core import settings
from elitr_core.errors import UserError
from ui.text import plain

if TYPE_CHECKING:
    import pandas as pd

    from elitr_core.data.browse import ScoreFilter
    from elitr_core.data.database import Engine
    from elitr_core.export.judge_audit import AuditOptions

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

CACHE_TTL_S = 300
"""Read caches live five minutes: imports and new scores show up without a restart."""


@st.cache_resource(show_spinner="Opening the database...")
def _engine_for(url: str | None) -> Engine:
    from elitr_core.data.database import ensure_bundled_data, open_database

    eng = open_database(url)
    ensure_bundled_data(eng)
    return eng


def database_url() -> str | None:
    """The database URL the app uses (``DATABASE_URL``; None means the default SQLite file)."""
    return settings.database_url()


def engine() -> Engine:
    """The app's engine (``DATABASE_URL``); the first start creates the schema and imports
    the bundled data."""
    return _engine_for(database_url())


def get_engine_or_stop() -> Engine:
    """The engine, or an error message and ``st.stop()`` when the database is unreachable."""
    try:
        return engine()
    except UserError as exc:
        st.error(plain(exc))
        st.stop()
        raise  # unreachable: st.stop() raises


#: the cached reads that hold scores, by the code that defines them (a page registers its own
#: each time it runs; the latest registration stands for the same cache)
class _Cache(Protocol):
    """A function cached by Streamlit, as :func:`forget_scores` uses it."""

    def clear(self) -> None: ...


_SCORE_CACHES: dict[str, _Cache] = {}


def score_cache(*, ttl: float = CACHE_TTL_S, **options: Any) -> Callable[[F], F]:
    """``st.cache_data(ttl=..., **options)`` for a read that holds scores (or anything computed
    from them): :func:`forget_scores` clears it when a page stores scores."""
    def decorate(func: F) -> F:
        cached = st.cache_data(ttl=ttl, **options)(func)
        _SCORE_CACHES[f"{func.__code__.co_filename}:{func.__qualname__}"] = cached
        return cast(F, cached)

    return decorate


# cache_resource, not cache_data: every page reads this frame, and cache_data would unpickle a
# copy on each call (0.05 s for the bundled 8,000 scores); no caller modifies it
@st.cache_resource(ttl=CACHE_TTL_S, max_entries=32, show_spinner="Loading scores...")
def _scores_frame(url: str | None, flt: ScoreFilter) -> pd.DataFrame:
    from elitr_core.data.database import reading
    from elitr_core.data.scores import scores_table

    with reading(_engine_for(url)) as session:
        return scores_table(session, flt)


def forget_scores() -> None:
    """Forget the cached reads that hold scores, so that every page shows scores a page has
    just stored (a study closed, its aggregate updated, an annotator excluded) on its next run
    instead of after the caches' ``CACHE_TTL_S``; the caches that hold none (the engine,
    transcript excerpts, a study's agreement keyed by its answers) stay."""
    for cached in list(_SCORE_CACHES.values()):
        cached.clear()
    _scores_frame.clear()
    _figure.clear()


def clear_caches() -> None:
    """Forget every cached read (after new scores or runs were stored)."""
    st.cache_data.clear()
    _scores_frame.clear()
    _figure.clear()


def scores_frame(flt: ScoreFilter) -> pd.DataFrame:
    """The long ``scores`` table for the filters (a ``db.runs.ScoreFilter``), cached per
    database and filter values."""
    return _scores_frame(database_url(), flt)


@score_cache(show_spinner="Computing...")
def _export_table(url: str | None, name: str, flt: ScoreFilter, reference: str,
                  groups: tuple[tuple[str, tuple[str, ...]], ...],
                  audit: AuditOptions | None) -> pd.DataFrame:
    from elitr_core.data.database import reading
    from elitr_core.export.tables import build_table

    with reading(_engine_for(url)) as session:
        return build_table(name, session, flt, reference=reference, groups=groups,
                           scores=_scores_frame(url, flt), audit=audit)


def export_table(name: str, flt: ScoreFilter, *, reference: str = "gold-human",
                 groups: tuple[tuple[str, tuple[str, ...]], ...] = (),
                 audit: AuditOptions | None = None) -> pd.DataFrame:
    """A table of the export contract for the filters: the very frame
    ``python -m elitr_core export NAME`` builds for the same filters (cached). ``audit``: the
    judge-audit options (``elitr_core.export.judge_audit.AuditOptions``)."""
    return _export_table(database_url(), name, flt, reference, groups, audit)


@score_cache(show_spinner="Computing...")
def _computed(url: str | None, flt: ScoreFilter, name: str,
              kwargs: tuple[tuple[str, Any], ...], _func: Callable[..., Any]) -> Any:
    return _func(_scores_frame(url, flt), **dict(kwargs))


def computed(func: Callable[..., T], flt: ScoreFilter, **kwargs: Any) -> T:
    """``func(scores_frame(flt), **kwargs)``, cached by the function's name, the filters and
    the keyword values (which must be hashable by Streamlit)."""
    name = f"{func.__module__}.{func.__qualname__}"
    return cast(T, _computed(database_url(), flt, name, tuple(sorted(kwargs.items())), func))


@score_cache(show_spinner="Loading responses...")
def _question_table(url: str | None, flt: ScoreFilter) -> pd.DataFrame:
    import pandas as pd

    from elitr_core.data.browse import feedback_rows, response_rows
    from elitr_core.data.database import reading
    from elitr_core.export.views import question_table

    with reading(_engine_for(url)) as session:
        responses = pd.DataFrame(response_rows(session, flt))
        feedback = pd.DataFrame(feedback_rows(session, flt))
    if responses.empty:
        return responses
    return question_table(responses, _scores_frame(url, flt), feedback)


def question_table_frame(flt: ScoreFilter) -> pd.DataFrame:
    """The drilldown question table (texts, every evaluator's score, feedback), cached."""
    return _question_table(database_url(), flt)


@st.cache_data(ttl=CACHE_TTL_S, show_spinner=False)
def _transcript_excerpt(url: str | None, meeting: str, question: str) -> str | None:
    from elitr_core.data.browse import meeting_transcript
    from elitr_core.data.database import reading
    from elitr_core.generation.retrieval import transcript_excerpt as excerpt

    with reading(_engine_for(url)) as session:
        transcript = meeting_transcript(session, meeting)
    return excerpt(transcript, question) if transcript else None


def transcript_excerpt(meeting: str, question: str) -> str | None:
    """The transcript passage most relevant to a question (cached), None without a transcript."""
    return _transcript_excerpt(database_url(), meeting, question)


@st.cache_resource(ttl=CACHE_TTL_S, max_entries=64, show_spinner=False)
def _figure(name: str, args: tuple[Any, ...], kwargs: tuple[tuple[str, Any], ...],
            _build: Callable[..., Any]) -> Any:
    # cache_resource: the very figure object is reused (never mutated after it is built), so
    # a rerun neither rebuilds it (plotly validation costs 0.1-0.5 s) nor unpickles a copy.
    # Every figure a page draws or downloads comes from here: its names become plain text.
    from elitr_core.export.figure_text import plain_figure

    return plain_figure(_build(*args, **dict(kwargs)))


def cached_figure(build: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``build(*args, **kwargs)``, cached by the builder and the argument values."""
    qualified = f"{build.__module__}.{build.__qualname__}"
    return cast(T, _figure(qualified, args, tuple(sorted(kwargs.items())), build))


def store_metrics(flt: ScoreFilter) -> dict[str, int]:
    """Compute and store ROUGE-L and token F1 for the filtered responses (cached in the db)."""
    from elitr_core.data.database import writing
    from elitr_core.judging.metric_scores import compute_metrics

    with writing(engine()) as session:
        return compute_metrics(session, ["rouge-l", "token-f1"], flt)
