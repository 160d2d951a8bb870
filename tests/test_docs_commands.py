"""Every shell command quoted in a fenced block of README.md and docs/*.md runs as quoted
(issue 43), or is on :data:`NOT_RUN` with the reason it cannot run in a test.

Each document's commands run in order, in a temporary folder (so ``export dataset
elitr-scores`` and ``--out FILE`` write there; ``data/`` is linked to the repository's, so
``transcripts data/demo`` reads the shipped demo corpus) against a fresh copy of the bundled
database, through the CLI's ``main`` in this process (``python -m elitr_core ARGS`` is
``main(ARGS)``). The meetings carry short synthetic transcripts, so generation runs on any
split. A ``generate`` or ``judge`` naming a model server or a local model (``--backend openai``
/ ``hf``) runs with ``--backend fake`` in place of its backend and that backend's own options,
every other option as quoted: the steps of a guide (the interleaving guide's generate, judge,
export) are checked to follow one another, not the model.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from elitr_core.backends.registry import backend_class
from elitr_core.cli.main import main
from tests.elitr_core.run_helpers import set_transcripts

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
#: a fenced line is a command when it starts with one of these (others: tables, output)
PROGRAMS = ("python", ".venv/bin/python", "elitr", ".venv/bin/elitr", "make", "export",
            "inspect", "lm_eval", "vllm", "transformers")
CLI = (("python", "-m", "elitr_core"), (".venv/bin/python", "-m", "elitr_core"),
       ("elitr",), (".venv/bin/elitr",))

#: quoted commands a test cannot run as quoted, by a pattern, with the reason (each pattern
#: must match a quoted command: a stale entry fails :func:`test_not_run_entries_are_quoted`)
NOT_RUN = {
    r"^make (run|test|quick)\b": "builds the venv and starts the server, or runs the whole "
                                 "test suite (this test is part of it)",
    r"-m pytest ": "runs the test suite (this test is part of it)",
    r"-m tests\.schedule ": "reads the JUnit XML of a whole test run (var/run.xml)",
    r"^export DATABASE_URL=postgresql://user:password@host": "the reader's own PostgreSQL "
                                                             "server (placeholders)",
    r"streamlit run server\.py$": "starts the app server (tests/test_server.py starts it)",
    r"^(vllm|transformers) serve ": "a GPU model server",
    r"^inspect eval ": "inspect_ai is an optional install and asks a model's API "
                       "(tests/elitr_core/integrations run it on SmolLM2, tier model)",
    r"^lm_eval ": "lm-evaluation-harness is an optional install and downloads a model "
                  "(tests/elitr_core/integrations run it on SmolLM2, tier model)",
    r"import (logs|out)/": "the log the harness wrote in the previous step (named by its date)",
    r"--annotator prolific-<PID>": "a participant's Prolific id goes in place of <PID>",
    r"import project-\d+-at-": "the JSON export of a Label Studio project its annotators "
                               "scored (tests/elitr_core/integrations/test_label_studio)",
}


def quoted_commands() -> list[tuple[str, str]]:
    """(document, command) of every fenced command line, continuation lines joined and a
    trailing ``# comment`` cut, in document order."""
    found = []
    for path in DOCS:
        for block in FENCE.findall(path.read_text(encoding="utf-8")):
            for line in re.sub(r"\\\n\s*", " ", block).splitlines():
                command = re.split(r"\s+#", line.strip())[0].strip()
                if command.split(" ")[0] in PROGRAMS:
                    found.append((path.name, command))
    return found


def not_run(command: str) -> str | None:
    """The reason ``command`` is not run, None when it is."""
    return next((why for pattern, why in NOT_RUN.items() if re.search(pattern, command)), None)


def cli_args(command: str) -> list[str]:
    """The CLI's arguments of a quoted ``python -m elitr_core`` / ``elitr`` command, a model
    server or local model swapped for the fake backend (see the module)."""
    words = shlex.split(command)
    prefix = next((p for p in CLI if tuple(words[:len(p)]) == p), None)
    assert prefix is not None, f"not a command of the project: {command!r}"
    args = words[len(prefix):]
    if "--backend" in args:
        at = args.index("--backend")
        backend = args[at + 1]
        if backend != "fake":
            flags = {option.flag or "--" + option.name.replace("_", "-")
                     for option in backend_class(backend).options}
            kept, skip = [], False
            for i, word in enumerate(args):
                if skip:
                    skip = False
                    continue
                if i == at + 1:
                    kept.append("fake")
                elif word.split("=")[0] in flags:
                    skip = "=" not in word and i + 1 < len(args) and \
                        not args[i + 1].startswith("--")
                else:
                    kept.append(word)
            args = kept
    return args


def test_not_run_entries_are_quoted() -> None:
    commands = [c for _, c in quoted_commands()]
    stale = [p for p in NOT_RUN if not any(re.search(p, c) for c in commands)]
    assert not stale, f"NOT_RUN entries that match no quoted command: {stale}"


DOCS_WITH_COMMANDS = sorted({doc for doc, command in quoted_commands() if not not_run(command)})


@pytest.mark.timeout(1800)  # a guide's generate and judge steps over a whole split (fake)
@pytest.mark.parametrize("doc", DOCS_WITH_COMMANDS)
def test_every_quoted_command_runs(doc: str, bundled_sqlite: str, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A document's commands, in order, on a fresh copy of the bundled database."""
    from sqlalchemy import text

    from elitr_core.data.database import get_engine

    with get_engine(bundled_sqlite).connect() as conn:
        every = tuple(r[0] for r in conn.execute(text("SELECT external_id FROM meeting")))
    set_transcripts(bundled_sqlite, meetings=every)
    monkeypatch.setenv("DATABASE_URL", bundled_sqlite)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    (tmp_path / "data").symlink_to(ROOT / "data")
    monkeypatch.chdir(tmp_path)
    failed = []
    for _, command in [(d, c) for d, c in quoted_commands() if d == doc]:
        if not_run(command):
            continue
        code = main(cli_args(command))
        said = capsys.readouterr()
        if code != 0:
            failed.append(f"{command}\n  exit {code}: {said.err.strip()[-400:]}")
    assert not failed, "\n".join(failed)


def test_the_guides_commands_are_found() -> None:
    """The parser finds the guides' commands (not a pattern that finds none)."""
    run = [c for _, c in quoted_commands() if not not_run(c)]
    assert len(run) >= 30 and {"crowd-study.md", "generation-and-judging.md",
                                "pairwise-battles.md"} <= set(DOCS_WITH_COMMANDS)


def test_the_demo_corpus_says_it_is_synthetic() -> None:
    """Every demo transcript opens with the label that it is invented, not ELITR data, and
    the folder's README says so (a reader or a model shown one cannot mistake it)."""
    transcripts = sorted((ROOT / "data" / "demo").rglob("transcript_MAN*.txt"))
    assert len(transcripts) == 2
    for path in transcripts:
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert "[SYNTHETIC DEMO TRANSCRIPT" in first and "not ELITR data" in first
    assert "SYNTHETIC, not ELITR data" in (ROOT / "data" / "demo" / "README.md").read_text(
        encoding="utf-8")
