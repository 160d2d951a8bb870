"""Who is using the app: the role check that ``app.py`` runs first and every page repeats.

Not a page (``app.py`` never registers it). Roles live in ``st.session_state`` on the server:
the browser only ever holds a token link or Prolific's parameters, re-checked against the
database whenever they change, so a guessed, reused or edited link gets a refusal, never data.
"""

from __future__ import annotations

import streamlit as st

from elitr_core import settings
from elitr_core.annotation.auth import StudyEnded, password_configured
from elitr_core.errors import UserError
from ui.data import get_engine_or_stop
from ui.messages import ended
from ui.state import ENTRY_KEY as ENTRY_KEY  # re-exported: the pages import it from here
from ui.state import ROLE_KEY
from ui.text import md, plain

RESEARCHER = "researcher"
ANNOTATOR = "annotator"

PARAMS_KEY = "auth.params"  # the link parameters that entry was checked against
VIA_COOKIE_KEY = "auth.via_cookie"  # the researcher role came from the session cookie
ADMIN_EMAILS_ENV = settings.ADMIN_EMAILS
NEXT_PAGE_KEY = "auth.next"  # the page address a logged-out visitor asked for (app.py)
PUBLIC_URL_ENV = settings.PUBLIC_URL  # the address annotators' links start with
ROUTES_ENV = settings.SESSION_ROUTES  # set by server.py, which serves /session/start and /end
_LINK_PARAMS = ("token", "study", "PROLIFIC_PID", "STUDY_ID", "SESSION_ID")


def oidc_configured() -> bool:
    """Whether ``st.login`` has an ``[auth]`` section in ``.streamlit/secrets.toml``."""
    try:
        return "auth" in st.secrets
    except Exception:  # no secrets file at all: Streamlit raises instead of returning empty
        return False


def auth_configured() -> bool:
    """A researcher login exists (password in the environment, or OIDC)."""
    return password_configured() or oidc_configured()


def _oidc_researcher() -> bool:
    if not oidc_configured() or not st.user.is_logged_in:
        return False
    allowed = {e.strip().lower() for e in settings.text(ADMIN_EMAILS_ENV).split(",")
               if e.strip()}
    return not allowed or str(st.user.get("email", "")).lower() in allowed


def _forget_identity() -> None:
    for key in (ROLE_KEY, ENTRY_KEY, PARAMS_KEY, VIA_COOKIE_KEY):
        st.session_state.pop(key, None)


def client_address() -> str:
    """The client's address as the server saw it (``localhost`` for a local browser)."""
    address = st.context.ip_address
    return address if isinstance(address, str) and address else "localhost"


def _session_cookie() -> str | None:
    from elitr_core.annotation.sessions import COOKIE_NAME

    try:
        value = st.context.cookies.get(COOKIE_NAME)
    except TypeError:  # no real request behind the session (AppTest)
        return None
    return value if isinstance(value, str) else None


def _cookie_researcher() -> bool:
    """The request carries a signed, unexpired session cookie whose session is not revoked."""
    from elitr_core.annotation.sessions import check_cookie
    from elitr_core.data.database import reading

    value = _session_cookie()
    if not value:
        return False
    with reading(get_engine_or_stop()) as session:
        return check_cookie(session, value)


def navigate(path: str) -> None:
    """Send the browser to ``path`` on this server (a full page load, so cookies apply)."""
    st.html(f"<script>(window.parent || window).location.assign("
            f"(window.parent || window).location.origin + {path!r});</script>",
            unsafe_allow_javascript=True)


def session_routes() -> bool:
    """Whether this process serves the cookie routes (started through ``server.py``)."""
    return settings.session_routes()


def log_out() -> None:
    """Revoke this browser's session in the database, forget the role, drop the cookie."""
    from elitr_core.annotation.sessions import revoke
    from elitr_core.data.database import writing

    value = _session_cookie()
    if value:
        with writing(get_engine_or_stop()) as session:
            revoke(session, value)
    _forget_identity()
    st.session_state["auth.logged_out"] = True
    if oidc_configured() and st.user.is_logged_in:
        st.logout()  # the OIDC identity cookie too


LOGOUT_FORM = """<form method="post" action="/session/end" class="elitr-logout">
<input type="hidden" name="token" value="{token}">
<button type="submit" class="elitr-logout">Log out</button></form>
<style>button.elitr-logout {{font: inherit; padding: 0.25rem 0.75rem; border-radius: 0.5rem;
border: 1px solid rgba(49, 51, 63, 0.2); background: white; cursor: pointer;}}</style>"""


def log_out_control() -> None:
    """The researcher's menu at the top bar's right (``ui.layout.user_menu``), holding who is
    signed in and Log out: a form POSTing the session's logout token to ``/session/end`` (which
    revokes the session and deletes the cookie) when the login came from the cookie; otherwise
    (``streamlit run app.py``, OIDC) a button that ends this tab's login. It was a sidebar of
    its own, 300 px wide on the pages that have no filters."""
    from html import escape

    from elitr_core.annotation.sessions import logout_token
    from elitr_core.data.database import reading
    from ui.layout import user_menu

    value = _session_cookie()
    token = None
    if session_routes() and value and st.session_state.get(VIA_COOKIE_KEY):
        with reading(get_engine_or_stop()) as session:
            token = logout_token(session, value)
    email = str(st.user.get("email", "")) if oidc_configured() and st.user.is_logged_in else ""

    def draw() -> None:
        st.caption(md("Signed in as {}", email) if email else
                   "Signed in with the researcher password")
        if token is not None:
            st.html(LOGOUT_FORM.format(token=escape(token)))
        else:
            st.button("Log out", on_click=log_out, icon=":material/logout:", key="auth.logout")

    user_menu("Researcher", draw)


def public_base_url() -> str:
    """Where annotators reach this app: ``ELITR_PUBLIC_URL``, else the address the researcher's
    browser used (scheme and host), else this server on localhost; no trailing slash."""
    from urllib.parse import urlsplit

    configured = settings.text(PUBLIC_URL_ENV).strip()
    if configured:
        return configured.rstrip("/")
    try:
        parts = urlsplit(st.context.url or "")
    except Exception:  # no browser behind the session (AppTest)
        parts = urlsplit("")
    if parts.scheme and parts.netloc:
        return f"{parts.scheme}://{parts.netloc}"
    return f"http://localhost:{st.get_option('server.port')}"


def link_address_warning() -> None:
    """A warning above a link to share when ``ELITR_PUBLIC_URL`` is not set (the link then
    starts with the researcher's own address, ``http://localhost:PORT`` on a laptop)."""
    from elitr_core.annotation.hosts import link_address_warning as problem

    text = problem(settings.text(PUBLIC_URL_ENV), public_base_url())
    if text:
        st.warning(plain(text), icon=":material/warning:")


def refuse(message: str) -> None:
    """Show a refusal and stop the script (nothing below it runs or reaches the browser)."""
    st.error(plain(message))
    st.stop()


def _enter_from_link(params: tuple[str | None, ...]) -> None:
    from elitr_core.annotation.studies import enter_with_token, join_prolific

    token, study, pid, prolific_study, session_id = params
    engine = get_engine_or_stop()
    try:
        if token:
            entry = enter_with_token(engine, token, study or None)
        elif not study:
            raise UserError("This Prolific link does not name a study: please open the study "
                            "again from Prolific.")
        else:
            entry = join_prolific(engine, study, pid or "", prolific_study or "",
                                  session_id or "", client=client_address())
    except StudyEnded as exc:  # closed, full, excluded, lapsed: an end state, not an error
        ended(exc)
        st.stop()
        return
    except UserError as exc:
        refuse(str(exc))
        return
    st.session_state[ENTRY_KEY] = entry
    st.session_state[ROLE_KEY] = ANNOTATOR
    st.session_state[PARAMS_KEY] = params


def resolve_role() -> str | None:
    """The role of this session: annotator (link), researcher (login or no auth) or None.

    A token or Prolific link in the URL is checked whenever it differs from the one this
    session entered with (Streamlit may drop query parameters later; the session keeps the
    identity). A refused link stops the script with the reason.
    """
    query = st.query_params
    params = tuple(query.get(name) for name in _LINK_PARAMS)
    if params[0] or params[2]:
        if st.session_state.get(PARAMS_KEY) != params:
            _forget_identity()
            _enter_from_link(params)
        return ANNOTATOR
    role = st.session_state.get(ROLE_KEY)
    if role is not None and st.session_state.get(VIA_COOKIE_KEY):
        if _cookie_researcher():  # re-checked on every run: a logout elsewhere ends it here
            return str(role)
        _forget_identity()
        return None
    if role is not None:
        return str(role)
    if auth_configured() and not st.session_state.get("auth.logged_out") and \
            _cookie_researcher():
        st.session_state[ROLE_KEY] = RESEARCHER
        st.session_state[VIA_COOKIE_KEY] = True
        return RESEARCHER
    if not auth_configured() or _oidc_researcher():
        # no login configured: the app listens on localhost and the local user is the researcher
        st.session_state[ROLE_KEY] = RESEARCHER
        return RESEARCHER
    return None


def require_role(*roles: str) -> str:
    """Stop the page unless this session's role is one of ``roles``; return the role."""
    role = st.session_state.get(ROLE_KEY)
    if role is None:
        # Streamlit also serves pages/*.py by address without running app.py (and its checks)
        refuse("This page opens through the dashboard: go to its home address (/) and sign "
               "in or use your personal link there.")
    if role not in roles:
        refuse("You do not have access to this page.")
    return str(role)
