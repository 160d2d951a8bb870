"""Page views and imports around a PostgreSQL restart (issue 27, item 3), on a server the test
starts and restarts itself (``tests.pg_instance``) and the real ``server.py``: an open page
reruns and a new one opens after the restart (the pool checks each connection before use);
an import while the server is down is one line, and the same import goes through once it is
back."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from elitr_core.cli.main import main
from tests.browser.conftest import running_server
from tests.pg_instance import pg_instance
from tests.streamlit_ws import Session

ROOT = Path(__file__).resolve().parents[1]
HOME = "Runs per model and setting"


async def _views(url: str, restart: object) -> list[tuple[str, list[object]]]:
    seen = []
    async with await Session.open(url) as session:
        seen.append((session.page.text(), list(session.page.exceptions)))
        restart()  # type: ignore[operator]
        page = await session.rerun()
        seen.append((page.text(), list(page.exceptions)))
    async with await Session.open(url, page="leaderboard") as session:
        seen.append((session.page.text(), list(session.page.exceptions)))
    return seen


def test_pages_go_on_after_a_restart(tmp_path: Path) -> None:
    with pg_instance() as pg:
        assert main(["init", "--db", pg.url]) == 0
        with running_server(pg.url, tmp_path / "streamlit.log") as url:
            seen = asyncio.run(_views(url, pg.restart))
    for text, exceptions in seen:
        assert not exceptions and "Traceback" not in text, (text, exceptions)
    assert HOME in seen[0][0] and HOME in seen[1][0] and "Leaderboard" in seen[2][0]


def test_an_import_while_the_server_is_down_is_one_line(tmp_path: Path) -> None:
    scores = tmp_path / "scores.csv"
    scores.write_text("meeting,question_id,split,setting,mode,model,evaluator,score\n"
                      "meeting_en_test2_001,1,test2,qa,st,GPT-4,restart-judge,7\n")
    with pg_instance() as pg:
        assert main(["init", "--db", pg.url]) == 0
        pg.stop()
        args = [sys.executable, "-m", "elitr_core", "import", str(scores), "--db", pg.url]
        done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:")
        assert "Traceback" not in done.stderr and "[SQL" not in done.stderr
        pg.start()
        done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr


def test_an_annotator_s_submit_goes_on_after_a_restart() -> None:
    """The submit after a restart reconnects and is stored; nothing stored before is lost."""
    from db.transaction import writing
    from elitr_core.annotation.admin import add_annotator
    from elitr_core.annotation.studies import (
        StudySpec,
        create_study,
        enter_with_token,
        queue_view,
        submit,
    )
    from elitr_core.data.database import open_database

    with pg_instance() as pg:
        assert main(["init", "--db", pg.url]) == 0
        with writing(open_database(pg.url)) as session:
            spec = StudySpec(name="r", pool="silver", per_item=1, split="test2", setting="qa",
                             mode="st", models=("GPT-4",), meetings=("meeting_en_test2_001",))
            create_study(session, spec)
            token = add_annotator(session, "ann", "silver")
        engine = open_database(pg.url)
        entry = enter_with_token(engine, token)
        submit(engine, entry, 0, 5)
        pg.restart()
        view = submit(engine, entry, 1, 6)
        assert view.answered == 2 == queue_view(engine, entry).answered
