"""Researcher login: the password from the environment, or OIDC through ``st.login``.

Every attempt is recorded in the database before the password is checked, and the attempt
limit (per client address and overall, with a doubling wait) is read from there, so neither a
reload nor a restart resets it. A right password opens a session; the browser then fetches its
HttpOnly cookie from ``/session/start`` so the login survives reloads and new tabs.
"""

from urllib.parse import quote

import streamlit as st

from elitr_core.annotation.auth import check_researcher_password, password_configured
from elitr_core.annotation.sessions import (
    describe_wait,
    login_wait,
    mark_success,
    record_attempt,
    start_session,
)
from elitr_core.data.database import writing
from ui.auth_ui import (
    NEXT_PAGE_KEY,
    RESEARCHER,
    client_address,
    navigate,
    oidc_configured,
    session_routes,
)
from ui.data import get_engine_or_stop
from ui.messages import guarded
from ui.state import ROLE_KEY
from ui.text import plain

st.title("ELITR-Bench dashboard")
st.caption("Researchers log in here. Annotators: open the personal link you were given.")
if st.session_state.pop("auth.logged_out", False) or st.query_params.get("logged_out"):
    st.info("You are logged out.")


def _attempt(password: str) -> str | None:
    """Check a password under the attempt limit; the session's one-time ticket when right.
    An empty field is no attempt (a press of Enter too early): it is not recorded, so it
    never counts towards the lockout."""
    if not password:
        st.warning("Type the researcher password, then press Log in.")
        return None
    engine, client = get_engine_or_stop(), client_address()
    with writing(engine) as session:
        wait = login_wait(session, client)
        attempt_id = None if wait.total_seconds() > 0 else record_attempt(session, client).id
    if attempt_id is None:
        st.error(plain(describe_wait(wait)))
        return None
    right = False
    with guarded():
        right = check_researcher_password(password)
    if not right:
        st.error("Wrong password.")
        return None
    with writing(engine) as session:
        mark_success(session, attempt_id)
        ticket = start_session(session, client)
    st.session_state[ROLE_KEY] = RESEARCHER
    return ticket


if oidc_configured():
    st.button("Log in with your organisation's account", on_click=st.login, type="primary")

if password_configured():
    with st.form("login"):
        password = st.text_input("Researcher password", type="password", key="login.password")
        ticket = _attempt(password) if st.form_submit_button("Log in", type="primary") else None
    if ticket and not session_routes():  # plain `streamlit run app.py`: this tab only
        st.rerun()
    if ticket:
        # a full page load of /session/start sets the cookie, then opens the page asked for
        ticket += "&next=" + quote(str(st.session_state.get(NEXT_PAGE_KEY) or ""))
        st.success("Logged in: opening the dashboard...")
        st.link_button("Continue", f"/session/start?ticket={ticket}")
        navigate(f"/session/start?ticket={ticket}")
