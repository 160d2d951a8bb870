"""The annotate page's worked examples, cached across its participants.

A cached function defined in the page itself is decorated anew on every script run, and
Streamlit then hashes its source (``inspect.getsource`` and the tokenizer) each time: defined
here, once per process (bench/bench_launch.py: the first page's and every rerun's CPU).
"""

from __future__ import annotations

import streamlit as st

from elitr_core.annotation.guidelines import Example, study_examples
from elitr_core.annotation.submit_faults import READ_FULL, READ_GONE, with_database_faults
from elitr_core.data.database import reading
from ui.data import engine

EXAMPLES_TTL_S = 60  # a researcher's new worked examples reach open pages within a minute


@st.cache_data(ttl=EXAMPLES_TTL_S, show_spinner=False)
def examples(url: str, study_id: int) -> list[Example]:
    """The worked examples of study ``study_id`` in the database at ``url``, read once a
    minute for all its participants (every rerun of every participant draws them in the
    Guidelines popover). A failed read raises as :func:`with_database_faults` says."""
    del url  # a key only: the same study id in another database is another study

    def read() -> list[Example]:
        with reading(engine()) as session:
            return study_examples(session, study_id)
    return with_database_faults(read, READ_FULL, READ_GONE)
