"""The frame around every page: the top bar (the product's name, where you are, the user
menu), the browser tab's title, and the compact spacing that puts a page's data on the first
screen of a 1366x768 laptop.

Streamlit's top navigation shows the sections as menus and never which one holds the open
page, and every tab had the title that ``st.set_page_config`` gave once. ``app.py`` calls
:func:`frame` after ``st.navigation`` has chosen the page: the title ``PAGE · ELITR-Bench``,
the logo (the product's name and the page's, drawn as a small SVG: ``st.logo`` is what
Streamlit puts in the top bar's left corner), the open section's menu underlined, and the
spacing below. :func:`user_menu` is the researcher's menu at the top bar's right.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape

import streamlit as st

PRODUCT = "ELITR-Bench"
USER_MENU_KEY = "elitr-user-menu"  # the container's CSS class is st-key-<key>
PRIMARY = "#1f5fa8"  # .streamlit/config.toml's primaryColor
MUTED = "#5c5f6b"

#: Streamlit's default spacing (6 rem above the first element, 5 rem left and right, a 2.75 rem
#: title) put the Leaderboard's table at y = 620 of a 625 px window; these put a page's first
#: line of data under its title, a row of controls and one line of context.
STYLE = """<style>
[data-testid="stMainBlockContainer"] {padding: 4.25rem 2rem 3rem 2rem;}
[data-testid="stMainBlockContainer"] h1 {font-size: 1.75rem; padding: 0 0 0.25rem 0;}
[data-testid="stMainBlockContainer"] h2 {font-size: 1.3rem; padding: 0.5rem 0 0.25rem 0;}
[data-testid="stMainBlockContainer"] h3 {font-size: 1.1rem; padding: 0.25rem 0 0.25rem 0;}
[data-testid="stMetricValue"] {font-size: 1.75rem;}
[data-testid="stSidebarUserContent"] {padding-top: 0.25rem;}
[data-testid="stSidebarHeader"] {padding-top: 1rem; padding-bottom: 0.5rem; height: auto;}
.st-key-elitr-user-menu {position: fixed; top: 0.55rem; right: 1rem; z-index: 999991;
  width: auto !important;}
.st-key-elitr-user-menu button {padding: 0.2rem 0.6rem; min-height: 2.25rem;}
</style>"""
#: the open section's menu in the top bar, underlined (``{n}``: its place, from 1)
SECTION_STYLE = """<style>
[data-testid="stTopNav"] > :nth-child({n} of :has([data-testid="stTopNavSection"]))
  [data-testid="stTopNavSection"] {{box-shadow: inset 0 -2px 0 #1f5fa8; font-weight: 600;}}
</style>"""


def tab_title(page: str) -> str:
    """The browser tab's title of ``page``: the page first, the product after it."""
    return f"{page} · {PRODUCT}"


def breadcrumb(page: str) -> str:
    """The top bar's product name and where you are, as SVG markup for ``st.logo``.

    An image cannot use the page's web font: its width is estimated for a wide sans-serif
    (0.6 em a character), so that no font the browser falls back on cuts it."""
    size = 17
    parts = [(PRODUCT, PRIMARY, 700)]
    parts.append((f" › {page}", MUTED, 400))
    spans = "".join(f'<tspan fill="{colour}" font-weight="{weight}">{escape(text)}</tspan>'
                    for text, colour, weight in parts)
    width = round(sum(len(text) for text, _, _ in parts) * size * 0.6) + 8
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="32" '
            f'viewBox="0 0 {width} 32"><text x="2" y="22" font-size="{size}" '
            f'font-family="Source Sans Pro, DejaVu Sans, Arial, sans-serif">{spans}</text>'
            f'</svg>')


def frame(page: str, section: str | None = None, sections: list[str] | None = None) -> None:
    """The tab title, top bar and spacing of the page ``page`` (of ``section``, whose place
    among the top bar's ``sections`` is underlined)."""
    st.set_page_config(page_title=tab_title(page))
    st.logo(breadcrumb(page), size="large")
    style = STYLE
    if section and sections and section in sections:
        style += SECTION_STYLE.format(n=sections.index(section) + 1)
    st.html(style)


def user_menu(label: str, draw: Callable[[], None]) -> None:
    """The researcher's menu at the top bar's right: a button showing ``label`` that opens
    what ``draw`` draws (who is signed in, Log out)."""
    with st.container(key=USER_MENU_KEY), st.popover(label, icon=":material/account_circle:"):
        draw()
