"""The browser's share of a first visit, paid while the researcher reads Home.

Streamlit's frontend loads the code of each kind of element the first time a page shows one
(``PlotlyChart`` alone is 4.7 MB of JavaScript, then selectbox, multiselect, number input,
radio, slider, download button...). Measured in headless Chromium on a quiet machine, the first
analysis page a session opened (the Leaderboard) took 1.5-1.8 s from the click to a finished
page against 0.3-0.4 s for the same page later: the difference was these chunks being fetched,
compiled and mounted (``bench/results/pages-2026-11-24.md``).

:func:`preload_elements` draws one of each kind the analysis pages use inside a container that
the page's CSS hides, at the end of Home and only on a session's first Home (once loaded, the
browser keeps the code for the session). The elements are inert: no label is shown, nothing
is computed, their values are never read. There is no public API to ask the frontend for an
element's code ahead of use, hence this.
"""

from __future__ import annotations

import streamlit as st

KEY = "preload-elements"
"""The hidden container's key (Streamlit gives it the CSS class ``st-key-preload-elements``)."""
DONE_KEY = "_preload.done"
_HIDDEN = f"<style>.st-key-{KEY} {{display: none !important;}}</style>"


def preload_elements() -> None:
    """Mount one element of each kind the analysis pages draw, hidden, once per session."""
    if st.session_state.get(DONE_KEY):
        return
    st.session_state[DONE_KEY] = True
    import plotly.graph_objects as go

    st.html(_HIDDEN)
    with st.container(key=KEY):
        st.plotly_chart(go.Figure(), key=f"{KEY}.plotly")
        st.selectbox("preload", ["-"], key=f"{KEY}.selectbox", label_visibility="collapsed")
        st.multiselect("preload", ["-"], key=f"{KEY}.multiselect",
                       label_visibility="collapsed")
        st.number_input("preload", 0, 1, 0, key=f"{KEY}.number", label_visibility="collapsed")
        st.text_input("preload", key=f"{KEY}.text", label_visibility="collapsed")
        st.text_area("preload", key=f"{KEY}.area", label_visibility="collapsed")
        st.radio("preload", ["-"], key=f"{KEY}.radio", label_visibility="collapsed")
        st.select_slider("preload", ["a", "b"], key=f"{KEY}.slider",
                         label_visibility="collapsed")
        st.download_button("preload", b"", file_name="preload.txt", key=f"{KEY}.download",
                           on_click="ignore")
