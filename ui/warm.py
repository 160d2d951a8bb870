"""The analysis pages' views under the default filters, computed once at server start.

A user's first visit of Leaderboard, Agreement, Calibration, Model drilldown or Judge audit
then finds the statistics and figures of its first tab in the caches instead of computing them
(1-2 s each on a small machine, more under load); the other tabs' tables follow. ``server.py``
calls :func:`start` once Streamlit's runtime is up (the caches are the runtime's). The views are
each page's ``default_views`` (:mod:`ui.analysis`, listed in :func:`page_views`), computed
with the very functions and default choices the page imports from there, so that the cache
keys match; a page that opens meanwhile waits for the value being computed instead of
computing it twice.

It runs again each time the read caches expire (every ``CACHE_TTL_S``, about 5 s of work every
5 minutes), so the default views stay computed for a visit after an idle spell.
``ELITR_WARM=0`` turns it off (the browser tests do: fifteen servers each computing every page
in the background would compete with the browser they test).

A step that fails (an evaluator the database lacks, degenerate data) is skipped and logged:
the page computes it on a visit and explains the problem there.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator

from elitr_core import settings
from ui.defaults import Defaults, View, Views
from ui.warm_progress import PROGRESS as PROGRESS  # re-exported
from ui.warm_progress import page_title as page_title  # re-exported
from ui.warm_progress import warming_line as warming_line  # re-exported

_LOG = logging.getLogger(__name__)
_STARTED = threading.Event()
THREAD_NAME = "elitr-warm-pages"


class _NotFromTheWarmUp(logging.Filter):
    """Drops Streamlit's "missing ScriptRunContext" warnings of the warm-up thread (one per
    cached call: its spinner has no page to show on, which is expected)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.threadName != THREAD_NAME


def start() -> threading.Thread | None:
    """Warm the caches in a background thread, once per process (None when already started or
    turned off with ``ELITR_WARM=0``)."""
    if _STARTED.is_set() or not settings.warm():
        return None
    _STARTED.set()
    logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").addFilter(
        _NotFromTheWarmUp())
    thread = threading.Thread(target=keep_warm, name=THREAD_NAME, daemon=True)
    thread.start()
    return thread


_AGAIN = threading.Lock()


def again() -> threading.Thread | None:
    """Warm the caches once more in the background, at once (after :func:`clear_caches
    <ui.data.clear_caches>`: new runs or scores), unless a warm-up started so is still going
    or ``ELITR_WARM=0``. A page opened meanwhile waits for a view being computed."""
    if not settings.warm() or not _AGAIN.acquire(blocking=False):
        return None

    def run() -> None:
        try:
            warm()
        finally:
            _AGAIN.release()

    thread = threading.Thread(target=run, name=THREAD_NAME, daemon=True)
    thread.start()
    return thread


def keep_warm(every: float | None = None, rounds: int | None = None) -> None:
    """:func:`warm` now and again each ``every`` seconds (default: just after the read caches
    expire, ``CACHE_TTL_S``), so that a visit after an idle spell finds the default views
    computed too, with data stored meanwhile; ``rounds`` bounds the loop (tests)."""
    if every is None:
        from ui.data import CACHE_TTL_S

        every = CACHE_TTL_S + 5.0
    done = 0
    while rounds is None or done < rounds:
        warm()
        done += 1
        if rounds is None or done < rounds:
            time.sleep(every)


def warm() -> int:
    """Compute every page's declared default views in turn: first each page's first tab, then
    the other tabs, page by page; returns how many succeeded."""
    began = time.perf_counter()
    done = 0
    PROGRESS.running = True
    try:
        pages = [(name, iter(views)) for name, views in declared_views(defaults())]
        PROGRESS.pending = [name for name, _views in pages]
        # the first tab of every page first: a visit soon after the start shows it at once
        rounds: list[list[tuple[str, Iterator[View], int | None]]] = [
            [(name, views, 1) for name, views in pages],
            [(name, views, None) for name, views in pages]]
        for steps in rounds:
            for name, views, limit in steps:
                done += _run(name, views, limit)
                if name in PROGRESS.pending:
                    PROGRESS.pending.remove(name)
    except Exception as exc:  # noqa: BLE001 - no database, say: the pages will say so
        _LOG.warning("warm-up stopped: %s", exc)
    finally:
        PROGRESS.running, PROGRESS.pending = False, []
    _LOG.info("warm-up: %d views in %.1f s", done, time.perf_counter() - began)
    return done


def _run(page: str, views: Iterator[View], limit: int | None) -> int:
    """Compute up to ``limit`` (None: all) of a page's remaining views; how many succeeded.
    A failing view is skipped; a failing declaration ends the page's views."""
    taken = succeeded = 0
    while limit is None or taken < limit:
        try:
            tab, step = next(views)
        except StopIteration:
            break
        except Exception as exc:  # noqa: BLE001 - a warm-up never stops the server
            _LOG.info("warm-up: %s skipped: %s", page, exc)
            break
        taken += 1
        try:
            step()
        except Exception as exc:  # noqa: BLE001 - the page explains the problem on a visit
            _LOG.info("warm-up: %s / %s skipped: %s", page, tab, exc)
        else:
            succeeded += 1
    return succeeded


def defaults() -> Defaults:
    """A first visit's choices: the sidebar's default filters and the evaluators they keep."""
    from elitr_core.export import views
    from ui.data import scores_frame
    from ui.filters import default_filters

    flt = default_filters()
    return Defaults(flt=flt, evaluators=views.evaluators_in(scores_frame(flt)))


def page_views() -> dict[str, Views]:
    """Each analysis page's default views, by the page's file (as ``ui.navigation`` lists it).
    Imported here, in the warm-up's thread, so that the server starts without the statistics
    and figure stack."""
    from ui.analysis import agreement, battles, calibration, drilldown, judge_audit, leaderboard

    return {"pages/leaderboard.py": leaderboard.default_views,
            "pages/agreement.py": agreement.default_views,
            "pages/calibration.py": calibration.default_views,
            "pages/drilldown.py": drilldown.default_views,
            "pages/judge_audit.py": judge_audit.default_views,
            "pages/battles.py": battles.default_views}


def declared_views(d: Defaults) -> list[tuple[str, Iterator[View]]]:
    """(page file, its default views under ``d``) for every researcher page that has them, in
    menu order."""
    from ui.navigation import researcher_page_files

    views = page_views()
    return [(file, iter(views[file](d))) for file in researcher_page_files() if file in views]
