"""A session cookie of any bytes is "not logged in" on the real server (issue 27, item 6):
the login page, never an error. Driven over Streamlit's WebSocket (``tests.streamlit_ws``)
with the raw cookie header a client may send."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.browser.conftest import running_server
from tests.streamlit_ws import Session

PASSWORD = "correct horse battery"
ODD = ["abc.9999999999.éé", "abc.١٢٣٤٥٦٧٨٩٠." + "0" * 64, "ＡＢＣ.².ff", "\xff\xfe\x80", "é" * 3000]


async def _pages(url: str) -> list[tuple[str, list[str]]]:
    seen = []
    for value in ODD:
        for page in ("", "leaderboard"):
            raw = value.encode().decode("latin-1")  # the UTF-8 bytes a browser sends
            async with await Session.open(url, page=page, cookies={"elitr_session": raw}) as s:
                seen.append((s.page.text(), [str(e) for e in s.page.exceptions]))
    return seen


def test_an_odd_cookie_shows_the_login_on_every_page(bundled_sqlite: str,
                                                     tmp_path: Path) -> None:
    with running_server(bundled_sqlite, tmp_path / "streamlit.log",
                        {"ELITR_ADMIN_PASSWORD": PASSWORD}) as url:
        seen = asyncio.run(_pages(url))
    for text, exceptions in seen:
        assert "Researcher password" in text and not exceptions, (text, exceptions)
    assert "Traceback" not in (tmp_path / "streamlit.log").read_text()
