"""Entry point: page config, auth, role-aware st.navigation; nothing else."""

from pathlib import Path

import streamlit as st

from ui.auth_ui import (
    NEXT_PAGE_KEY,
    RESEARCHER,
    auth_configured,
    log_out_control,
    resolve_role,
)
from ui.layout import frame, tab_title
from ui.navigation import ANNOTATOR_PAGES, LOGIN_PAGES, RESEARCHER_PAGES, section_of

# the tab's title is set per page by ui.layout.frame, once st.navigation has chosen the page;
# the icon is the emoji itself, not its shortcode: Streamlit takes a shortcode for an image to
# load, and tried (and failed) to on every run of every session (2 % of an arrival's script CPU)
st.set_page_config(page_icon="📊", layout="wide")

ROOT = Path(__file__).resolve().parent


def _pages(spec: dict[str, list[tuple[str, str, str]]]) -> dict[str, list[st.Page]]:
    out: dict[str, list[st.Page]] = {}
    for section, entries in spec.items():
        pages = [st.Page(f, title=t, icon=i) for f, t, i in entries if (ROOT / f).exists()]
        if pages:
            out[section] = pages
    return out


def _login_pages() -> dict[str, list[st.Page]]:
    """The login, also under every researcher page's address: a deep link (/leaderboard)
    opened while logged out shows the login, not "Page not found", and the login then goes
    on to that page (``NEXT_PAGE_KEY``)."""
    pages = _pages(LOGIN_PAGES)
    login = LOGIN_PAGES["Account"][0][0]
    pages["Account"] += [st.Page(login, title=title, url_path=st.Page(f).url_path,
                                 visibility="hidden")
                         for entries in RESEARCHER_PAGES.values() for f, title, _ in entries
                         if (ROOT / f).exists()]
    return pages


# The role is decided on the server (session state); a refused link stops here with the reason.
role = resolve_role()
if role is None:
    page = st.navigation(_login_pages(), position="hidden")
    st.session_state[NEXT_PAGE_KEY] = "" if page.title == "Log in" else page.url_path
    frame("Log in")  # also under a researcher page's address: the login is what shows
else:
    spec = RESEARCHER_PAGES if role == RESEARCHER else ANNOTATOR_PAGES
    menus = _pages(spec)
    page = st.navigation(menus, position="top" if role == RESEARCHER else "hidden")
    if role == RESEARCHER:
        frame(page.title, section_of(spec, page.title), list(menus))
    else:  # the annotation page keeps its own look: its tab's title only
        st.set_page_config(page_title=tab_title(page.title))
if role == RESEARCHER and auth_configured():
    log_out_control()  # the user menu at the top bar's right
page.run()
