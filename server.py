"""The server entry point: the dashboard (``app.py``) plus two small HTTP routes that set and
clear the researcher's HttpOnly session cookie (a Streamlit script cannot set one itself).

``streamlit run server.py`` serves both (Streamlit finds the ``st.App`` below).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import streamlit as st
from starlette.requests import Request
from starlette.responses import RedirectResponse
from starlette.routing import Route

from elitr_core.annotation.sessions import COOKIE_NAME, redeem_ticket, revoke
from elitr_core.data.database import open_database, writing


def session_start(request: Request) -> RedirectResponse:
    """Redeem a one-time login ticket for the signed session cookie, then go home."""
    with writing(open_database(os.environ.get("DATABASE_URL"))) as session:
        cookie = redeem_ticket(session, request.query_params.get("ticket", ""))
    response = RedirectResponse("../", status_code=303)
    if cookie is not None:
        response.set_cookie(COOKIE_NAME, cookie.value, max_age=cookie.max_age, path="/",
                            httponly=True, samesite="lax",
                            secure=request.url.scheme == "https")
    return response

def session_end(request: Request) -> RedirectResponse:
    """Log out: revoke the session in the database and delete the cookie."""
    value = request.cookies.get(COOKIE_NAME)
    if value:
        with writing(open_database(os.environ.get("DATABASE_URL"))) as session:
            revoke(session, value)
    response = RedirectResponse("../", status_code=303)
    response.delete_cookie(COOKIE_NAME, path="/")
    return response

@asynccontextmanager
async def lifespan(_app: object) -> AsyncIterator[None]:
    """Once the runtime is up (its caches exist): import the statistics and figure stack and
    compute the analysis pages' default views in a background thread (``pages.warm``), so that
    the first visit of a page does not pay for them."""
    from pages.warm import start

    start()
    yield


os.environ["ELITR_SESSION_ROUTES"] = "1"  # pages/auth_ui.session_routes: the routes exist
app = st.App("app.py", lifespan=lifespan, routes=[Route("/session/start", session_start),
                                                   Route("/session/end", session_end)])
