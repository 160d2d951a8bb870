"""The layers of ARCHITECTURE.md, read from the code: who may import what, and no import circle.

Every ``import`` statement counts, including the lazy ones inside functions: a lazy import is
still a dependency, and a circle closed by one is still a circle (two modules that need each
other), so the layer rules and the circle checks, between modules and between folders, all
read every import.
"""

from __future__ import annotations

import ast
import re
import subprocess
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("elitr_core", "db", "pages", "ui")
#: Top-level scripts: ``app.py`` (navigation) and ``server.py`` (``streamlit run`` entry with
#: the session-cookie routes); they sit with the pages, above the core.
ENTRY_POINTS = ("app", "server")



def _parse(path: Path) -> ast.Module:
    """``ast.parse`` of a file, asked once more after CPython 3.11's "AST constructor recursion
    depth mismatch" SystemError (its recursion count is shared process-wide: another thread
    of the worker parsing at the same moment breaks it; seen once in a whole run)."""
    source = path.read_text()
    try:
        return ast.parse(source, filename=str(path))
    except SystemError:
        return ast.parse(source, filename=str(path))

def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources() -> dict[str, Path]:
    found = {name: ROOT / f"{name}.py" for name in ENTRY_POINTS if (ROOT / f"{name}.py").exists()}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" not in path.parts:
                found[_module_name(path)] = path
    return found


def _imports(path: Path) -> Iterator[str]:
    """Every module an ``import`` in ``path`` names, at any depth (relative ones resolved)."""
    tree = _parse(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # `from . import x` in package a.b: the package's own parts
                package = _module_name(path).split(".")
                if path.name != "__init__.py":
                    package.pop()
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, *([module] if module else [])])
            yield module
            yield from (f"{module}.{alias.name}" for alias in node.names)


SOURCES = _sources()

#: (importer prefix, forbidden import prefixes, why)
RULES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("pages", ("db", "sqlmodel", "sqlalchemy"), "pages talk to elitr_core only"),
    ("ui", ("db", "sqlmodel", "sqlalchemy"), "page helpers talk to elitr_core only"),
    ("app", ("db", "sqlmodel", "sqlalchemy"), "app.py talks to elitr_core only"),
    ("server", ("db", "sqlmodel", "sqlalchemy"), "server.py talks to elitr_core only"),
    ("elitr_core", ("streamlit", "pages", "ui", *ENTRY_POINTS),
     "the core runs headless (CLI, GPU jobs)"),
    ("db", ("elitr_core", "pages", "ui", "streamlit"), "db is the bottom layer"),
    ("elitr_core.stats", ("db", "sqlmodel", "sqlalchemy", "streamlit", "elitr_core.data",
                          "elitr_core.generation", "elitr_core.judging", "elitr_core.annotation",
                          "elitr_core.export", "elitr_core.cli", "elitr_core.backends",
                          "elitr_core.passes"),
     "statistics are pure: DataFrame in, DataFrame out"),
    ("elitr_core.backends", ("db", "sqlmodel", "sqlalchemy", "elitr_core.generation",
                             "elitr_core.judging", "elitr_core.annotation", "elitr_core.cli"),
     "backends only turn conversations into completions"),
)


#: Leaf modules every layer may import: they import nothing of the project.
SHARED_LEAVES = ("elitr_core.errors", "elitr_core.settings")


def _matches(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


@pytest.mark.parametrize("importer,forbidden,why", RULES, ids=[r[0] for r in RULES])
def test_layers(importer: str, forbidden: tuple[str, ...], why: str) -> None:
    offences = sorted(
        f"{module} imports {name}"
        for module, path in SOURCES.items() if _matches(module, importer)
        for name in set(_imports(path))
        if any(_matches(name, f) for f in forbidden)
        and not any(_matches(name, leaf) for leaf in SHARED_LEAVES)
    )
    assert not offences, f"{why}:\n" + "\n".join(offences)


def _graph() -> dict[str, set[str]]:
    """Module -> the project's modules it imports (``from pkg import module`` names the
    module; ``from module import name`` the module)."""
    graph: dict[str, set[str]] = {}
    for module, path in SOURCES.items():
        targets = {name for name in _imports(path) if name in SOURCES}
        graph[module] = targets - {module}
    return graph


def _folder(module: str) -> str:
    """The room a module lives in: ``elitr_core.export.tables`` -> ``elitr_core.export``;
    the core's top-level leaves (``vocab``, ``errors``) and the entry points are rooms alone."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "elitr_core" else parts[0]


def _folder_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    folders: dict[str, set[str]] = {}
    for module, targets in graph.items():
        here = _folder(module)
        folders.setdefault(here, set()).update(_folder(t) for t in targets)
        folders[here].discard(here)
    return folders


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle as a path, or None (depth-first search with colours)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_shared_leaves_import_nothing_of_the_project() -> None:
    """The leaves import nothing of the project, but settings the errors leaf (a setting that
    cannot be parsed is a UserError)."""
    for leaf in SHARED_LEAVES:
        own = [n for n in _imports(SOURCES[leaf]) if n.split(".")[0] in (*PACKAGES, *ENTRY_POINTS)
               and not (leaf == "elitr_core.settings" and _matches(n, "elitr_core.errors"))]
        assert not own, f"{leaf} must stay a leaf: {own}"


def test_no_import_circle_between_modules() -> None:
    circle = _cycle(_graph())
    assert circle is None, "import circle: " + " -> ".join(circle or [])


def test_no_import_circle_between_folders() -> None:
    circle = _cycle(_folder_graph(_graph()))
    assert circle is None, "folder loop: " + " -> ".join(circle or [])


#: A session's own methods: running statements, opening or ending transactions.
SESSION_METHODS = frozenset({"execute", "exec", "get", "add", "add_all", "flush", "delete",
                             "merge", "scalar", "scalars", "connection", "get_bind", "commit",
                             "rollback", "begin", "begin_nested", "refresh"})


#: An engine's ways around the unit of work.
ENGINE_METHODS = frozenset({"begin", "connect", "raw_connection"})


def _sql_in(path: Path) -> Iterator[str]:
    """Calls that build a statement or open a session (any name imported from ``sqlmodel``
    or ``sqlalchemy``: select, text, col, func, Session, ...) and calls of a session's own
    methods, in ``path``."""
    tree = _parse(path)
    sql_names = {alias.asname or alias.name for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module
                 and node.module.split(".")[0] in ("sqlmodel", "sqlalchemy")
                 for alias in node.names}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in sql_names:
            yield f"line {node.lineno}: {func.id}(...)"
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and (
                (func.value.id in ("session", "connection", "conn")
                 and func.attr in SESSION_METHODS)
                or (func.value.id == "engine" and func.attr in ENGINE_METHODS)):
            yield f"line {node.lineno}: {func.value.id}.{func.attr}(...)"


def test_statements_live_in_db() -> None:
    """The core and the pages call db's named query and write functions inside db's unit of
    work (``db.transaction``); none of them builds a statement or drives a session."""
    offences = sorted(f"{module} {what}" for module, path in SOURCES.items()
                      if _folder(module) not in ("db",) for what in _sql_in(path))
    assert not offences, "\n".join(offences)


def test_the_sql_check_sees_statements(tmp_path: Path) -> None:
    source = tmp_path / "core.py"
    source.write_text("from sqlmodel import Session, select\n"
                      "def f(session, engine):\n    engine.connect()\n"
                      "    return session.exec(select(1)).all()\n")
    assert sorted(_sql_in(source)) == ["line 3: engine.connect(...)", "line 4: select(...)",
                                       "line 4: session.exec(...)"]


#: Of the project, the rooms each room above the core may import: a page the page helpers and
#: the core, a page helper the core (and the other helpers), the entry points the same as a page.
#: Nothing imports a page: Streamlit runs it as a script (by its path, from ``ui.navigation``).
ABOVE_THE_CORE: dict[str, tuple[str, ...]] = {
    "pages": ("ui", "elitr_core"), "ui": ("ui", "elitr_core"),
    "app": ("ui", "elitr_core"), "server": ("ui", "elitr_core")}


def _imports_above(sources: dict[str, Path]) -> Iterator[str]:
    """The imports of the project's modules that :data:`ABOVE_THE_CORE` forbids, and every
    import of a page, in ``sources`` (module name -> file)."""
    project = (*PACKAGES, *ENTRY_POINTS)
    for module, path in sources.items():
        room = module.split(".")[0]
        for name in sorted(set(_imports(path))):
            top = name.split(".")[0]
            if top == "pages" or (room in ABOVE_THE_CORE and top in project
                                  and top not in ABOVE_THE_CORE[room]):
                yield f"{module} imports {name}"


def test_pages_import_only_the_page_helpers_and_the_core() -> None:
    """Pages import ``ui`` and ``elitr_core``; ``ui`` imports ``elitr_core``; nothing imports a
    page (the tests and benchmarks neither)."""
    scripts = {_module_name(path): path
               for folder in ("tests", "bench") for path in (ROOT / folder).rglob("*.py")}
    offences = sorted(_imports_above({**SOURCES, **scripts}))
    assert not offences, "\n".join(offences)


def test_the_page_check_sees_an_offence(tmp_path: Path) -> None:
    files = {"pages.home": "from pages.meeting import show\nfrom ui.data import engine\n"
                           "import elitr_core.vocab\nfrom db import scores\n",
             "ui.data": "from ui.text import plain\nfrom elitr_core import vocab\n"
                        "import streamlit\nfrom app import ROOT\n",
             "ui.warm": "def pages():\n    import pages.leaderboard\n",
             "elitr_core.x": "from pages import home\n"}
    sources = {}
    for module, text in files.items():
        sources[module] = tmp_path / f"{module}.py"
        sources[module].write_text(text)
    assert sorted(_imports_above(sources)) == [
        "elitr_core.x imports pages", "elitr_core.x imports pages.home",
        "pages.home imports db", "pages.home imports db.scores",
        "pages.home imports pages.meeting", "pages.home imports pages.meeting.show",
        "ui.data imports app", "ui.data imports app.ROOT",
        "ui.warm imports pages.leaderboard"]


def test_the_checks_see_a_circle_and_an_offence() -> None:
    # the checks themselves must be able to fail
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
    assert _matches("db.engine", "db") and not _matches("dbx", "db")
    assert _folder_graph({"elitr_core.a.x": {"elitr_core.b.y"}, "elitr_core.b.y": set(),
                          "elitr_core.b.z": {"elitr_core.a.w"}, "elitr_core.a.w": set()}) == {
        "elitr_core.a": {"elitr_core.b"}, "elitr_core.b": {"elitr_core.a"}}
    assert _cycle(_folder_graph({"elitr_core.a.x": {"elitr_core.b.y"},
                                 "elitr_core.b.z": {"elitr_core.a.w"}})) is not None


def test_function_level_imports_are_seen(tmp_path: Path) -> None:
    source = tmp_path / "lazy.py"
    source.write_text("def f():\n    from elitr_core.export import tables\n"
                      "    import db.scores\n")
    assert {"elitr_core.export", "elitr_core.export.tables", "db.scores"} <= set(
        _imports(source))
    assert any(_matches(n, "sqlmodel") for n in _imports(ROOT / "db" / "models.py"))


ARCHITECTURE = ROOT / "ARCHITECTURE.md"
#: Top-level folders that are not rooms of the code: made by running it, git-ignored.
NOT_ROOMS = frozenset({"var", "artifacts"})


def _rooms_named() -> set[str]:
    """The rooms ARCHITECTURE.md's map names: ``app.py``, ``db/``, ``elitr_core/stats/`` ...
    (a line of the first code block, its first word, indented under ``elitr_core/`` or not)."""
    text = ARCHITECTURE.read_text()
    block = text.split("## The rooms", 1)[1].split("```", 2)[1]
    named: set[str] = set()
    for line in block.splitlines():
        if not line.strip() or line.startswith(" " * 5):
            continue  # blank, or a description running on
        word = line.split()[0]
        named.add(f"elitr_core/{word}" if line.startswith("  ") else word)
    return named


def _rooms_present() -> set[str]:
    top = {p.name + "/" for p in ROOT.iterdir() if p.is_dir()
           and not p.name.startswith((".", "_")) and p.name not in NOT_ROOMS}
    core = {f"elitr_core/{p.name}" + ("/" if p.is_dir() else "")
            for p in (ROOT / "elitr_core").iterdir()
            if not p.name.startswith((".", "_")) and (p.is_dir() or p.suffix == ".py")}
    return top | core | {f"{name}.py" for name in ENTRY_POINTS}


def test_architecture_names_every_room_and_only_those() -> None:
    named, present = _rooms_named(), _rooms_present()
    assert not present - named, f"rooms ARCHITECTURE.md does not name: {sorted(present - named)}"
    assert not named - present, f"rooms ARCHITECTURE.md names, gone: {sorted(named - present)}"


def test_citations_of_architecture_name_a_section() -> None:
    """A docstring that cites ``ARCHITECTURE.md, <section>`` names a heading it has."""
    headings = {line.lstrip("#").strip().lower()
                for line in ARCHITECTURE.read_text().splitlines() if line.startswith("#")}
    offences = []
    for module, path in SOURCES.items():
        text = path.read_text()
        if "architecture.md" in text:  # the file is ARCHITECTURE.md: no lower-case one exists
            offences.append(f"{module} cites architecture.md")
        for section in re.findall(r"ARCHITECTURE\.md,\s+([^)\n]+)\)", text):
            if section.strip().lower() not in headings:
                offences.append(f"{module} cites ARCHITECTURE.md, {section}")
    assert not offences, "\n".join(offences)


#: A module of the project named in a docstring or comment (``db.scores.score_rows``,
#: ``elitr_core.data.records.ScoreRowChecker``): its first words must be a module.
DOTTED = re.compile(r"(?<![\w./-])((?:db|elitr_core)(?:\.[A-Za-z_]\w*)+)")
#: A file of the project named as a path, with a name in it (``db/admission.free_seat``) or
#: not (``db/score_staging.py``); ARCHITECTURE.md writes the core's paths below elitr_core/.
PATH_CITED = re.compile(r"(?<![\w./-])([a-z_]+(?:/\w+)*/\w+)\.([A-Za-z_]\w*)\b")


def _top_level_names(path: Path) -> set[str]:
    """What a module defines or imports at its top, and its classes' methods and fields as
    ``Class.name``."""
    names: set[str] = set()
    for node in _parse(path).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            names.update(f"{node.name}.{sub.name}" for sub in getattr(node, "body", ())
                         if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef))
            names.update(f"{node.name}.{sub.target.id}" for sub in getattr(node, "body", ())
                         if isinstance(sub, ast.AnnAssign) and isinstance(sub.target, ast.Name))
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _dotted_exists(ref: str, sources: dict[str, Path]) -> bool:
    """``ref`` names a module, or a name (``Class.method``) a module defines."""
    parts = ref.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        if module in sources:
            rest = parts[cut:]
            names = _top_level_names(sources[module]) if rest else set()
            return not rest or rest[0] in names or ".".join(rest[:2]) in names
    return False


def _project_folder(root: Path, base: str) -> bool:
    """The first folder of ``base`` below ``root`` holds files of the project: git tracks
    some. A folder the project's runs leave behind (``var/``, git-ignored, made by the page
    tests) is not ours to check: ``var/elitr.db`` is a default, not a file of the tree."""
    folder = root / base.split("/")[0]
    return folder.is_dir() and folder.relative_to(ROOT).as_posix() in _TRACKED_FOLDERS


#: Every folder that holds a file git tracks, relative to the root.
_TRACKED_FOLDERS: frozenset[str] = frozenset(
    str(PurePosixPath(file).parents[depth])
    for file in subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                               check=True).stdout.splitlines()
    for depth in range(len(PurePosixPath(file).parents) - 1))


def _path_exists(base: str, tail: str) -> bool:
    """``base.tail`` is a file below the root or elitr_core/, or ``tail`` a name its module
    defines; a path whose first folder is not one of the project's is not ours to check."""
    for root in (ROOT, ROOT / "elitr_core"):
        if not _project_folder(root, base):
            continue
        if (root / f"{base}.{tail}").exists():
            return True
        module = root / f"{base}.py"
        if module.exists():
            return tail in _top_level_names(module)
    return not any(_project_folder(root, base) for root in (ROOT, ROOT / "elitr_core"))


def _stale_pointers(text: str, sources: dict[str, Path]) -> Iterator[str]:
    """Modules, names and files that ``text`` cites and that do not exist."""
    for ref in DOTTED.findall(text):
        if not _dotted_exists(ref.rstrip("."), sources):
            yield ref
    for base, tail in PATH_CITED.findall(text):
        if not _path_exists(base, tail):
            yield f"{base}.{tail}"


def test_cited_modules_names_and_files_exist() -> None:
    """A docstring, comment or ARCHITECTURE.md that names a module (``db.scores``), a name in
    it (``db.queue.record_answer``, ``db/admission.free_seat``) or a file
    (``db/score_staging.py``) names one that exists: a moved or renamed one leaves none."""
    texts = {module: path.read_text() for module, path in SOURCES.items()}
    texts["ARCHITECTURE.md"] = ARCHITECTURE.read_text()
    offences = sorted(f"{where} cites {ref}" for where, text in texts.items()
                      for ref in _stale_pointers(text, SOURCES))
    assert not offences, "\n".join(offences)


def test_the_pointer_check_sees_a_stale_one() -> None:
    (ROOT / "var").mkdir(exist_ok=True)  # what the page tests leave: git-ignored, not ours
    text = ("``var/elitr.db`` is a default, "
            "``db.crud.save``, :func:`db.scores.score_nothing`, ``columns.SCORE_COLUMNS`` is "
            "not ours, ``db.scores.score_rows`` and `db/keyed.py` are, `db/bulk.py` and "
            "`data/importers.upsert_nothing` are gone, `eval/eval_gpt.py` is upstream's")
    assert sorted(_stale_pointers(text, SOURCES)) == [
        "data/importers.upsert_nothing", "db.crud.save", "db.scores.score_nothing",
        "db/bulk.py"]


def test_citations_of_the_protocol_name_a_section() -> None:
    """``docs/protocol.md §N`` names a section the protocol has (its headings are ``## §N``)."""
    sections = set(re.findall(r"^## (§\d+)", (ROOT / "docs" / "protocol.md").read_text(), re.M))
    offences = sorted(f"{module} cites protocol.md {cited}" for module, path in SOURCES.items()
                      for cited in re.findall(r"protocol\.md,? (§\d+)", path.read_text())
                      if cited not in sections)
    assert sections and not offences, "\n".join(offences)


def _score_range_typed(path: Path) -> Iterator[str]:
    """Comparisons or ranges that type the rubric's 1..10 again (``1 <= v <= 10``,
    ``v < 1 or v > 10``, ``range(1, 11)``) instead of ``vocab.SCORE_MIN``/``SCORE_MAX``."""
    def numbers(node: ast.AST) -> set[object]:
        return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant)
                and isinstance(n.value, int | float) and not isinstance(n.value, bool)}
    for node in ast.walk(_parse(path)):
        compares = isinstance(node, ast.Compare | ast.BoolOp) and {1, 10} <= numbers(node)
        ranges = (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                  and node.func.id == "range" and {1, 11} <= numbers(node))
        if compares or ranges:
            yield f"line {node.lineno}: {ast.unparse(node)}"


def _found_outside(home: str, check: Callable[[Path], Iterator[str]]) -> list[str]:
    """What ``check`` finds in every module but ``home`` (the one allowed to do it)."""
    return sorted(f"{module} {what}" for module, path in SOURCES.items()
                  if module != home for what in check(path))


def test_the_score_range_is_typed_once() -> None:
    offences = _found_outside("elitr_core.vocab", _score_range_typed)
    assert not offences, "use elitr_core.vocab.SCORE_MIN/SCORE_MAX:\n" + "\n".join(offences)


def test_the_score_range_check_sees_one(tmp_path: Path) -> None:
    source = tmp_path / "page.py"
    source.write_text("SCALE = list(range(1, 11))\nok = 1 <= v <= 10\nbad = v < 1 or v > 10\n"
                      "fine = 1 <= v <= n\n")
    assert {line.split(":")[0] for line in _score_range_typed(source)} == {
        "line 1", "line 2", "line 3"}


def _environment_reads(path: Path) -> Iterator[str]:
    """Reads or writes of the environment: ``os.environ``, ``os.getenv``, ``os.putenv``, a name
    imported from ``os`` as ``environ``/``getenv``."""
    tree = _parse(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (
                node.value.id == "os" and node.attr in ("environ", "environb", "getenv",
                                                        "putenv", "unsetenv")):
            yield f"line {node.lineno}: os.{node.attr}"
        elif isinstance(node, ast.ImportFrom) and node.module == "os" and any(
                alias.name in ("environ", "environb", "getenv", "putenv")
                for alias in node.names):
            yield f"line {node.lineno}: from os import ..."


def test_only_settings_reads_the_environment() -> None:
    """Every environment variable is read in ``elitr_core.settings`` and documented there and
    in docs/deployment.md; nothing else of the app touches ``os.environ``. (Tests and
    benchmarks do, to set up a server; migrations read their URL from Alembic's config.)"""
    offences = _found_outside("elitr_core.settings", _environment_reads)
    assert not offences, "read it through elitr_core.settings:\n" + "\n".join(offences)


def test_the_environment_check_sees_a_read(tmp_path: Path) -> None:
    source = tmp_path / "page.py"
    source.write_text("import os\nfrom os import getenv\nurl = os.environ.get('X')\n"
                      "os.environ['Y'] = '1'\nz = os.getenv('Z')\nok = os.path.join('a')\n")
    assert sorted(_environment_reads(source)) == [
        "line 2: from os import ...", "line 3: os.environ", "line 4: os.environ",
        "line 5: os.getenv"]


def test_settings_are_documented_in_one_table() -> None:
    """docs/deployment.md's settings table lists exactly ``settings.VARIABLES``."""
    from elitr_core import settings

    text = (ROOT / "docs" / "deployment.md").read_text()
    table = text.split("## Settings", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `([A-Z_]+)` \|", table, re.M))
    assert listed == set(settings.VARIABLES)


#: The most lines a module may have (ARCHITECTURE.md, The rooms): past it, a module mixes
#: concerns and is split where they part. Migrations are generated and excepted.
MODULE_LINES = 400


def test_modules_stay_under_the_size_limit() -> None:
    sizes = {module: len(path.read_text().splitlines()) for module, path in SOURCES.items()}
    over = sorted(f"{module}: {lines} lines" for module, lines in sizes.items()
                  if lines > MODULE_LINES)
    assert not over, f"modules over {MODULE_LINES} lines (split at a seam):\n" + "\n".join(over)


#: A backend's name as a word of a string: ``"hf"``, ``"hf: ..."``, ``"--backend hf"``, not
#: ``"hf_home"``, ``"openai-compatible"`` or ``"api.openai.com"``.
BACKEND_WORD = r"(?<![\w.-])({})(?![\w-]|\.\w)"
#: Strings equal to a backend's name that mean something else: (module, string) -> what.
NOT_A_BACKEND = {("elitr_core.passes.records", "openai"): "the package whose version a run keeps"}


def docstring_ids(tree: ast.AST) -> set[int]:
    """The ``id`` of each docstring's node in ``tree`` (module, class and function ones)."""
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef
                          | ast.AsyncFunctionDef)
            and node.body and isinstance(node.body[0], ast.Expr)}


def _owner(module: str, names: Sequence[str]) -> str | None:
    """The backend whose own module ``module`` is (``elitr_core.backends.hf_cache``: hf)."""
    if not module.startswith("elitr_core.backends."):
        return None
    stem = module.split(".")[2]
    return next((name for name in names if stem == name or stem.startswith(name + "_")), None)


def _backend_names_in(path: Path, names: Sequence[str]) -> Iterator[tuple[str, str]]:
    """(backend, where) for each string naming a backend as a word (docstrings aside: they
    describe, the code decides) and each import of a backend's own module."""
    tree = _parse(path)
    docstrings = docstring_ids(tree)
    word = re.compile(BACKEND_WORD.format("|".join(map(re.escape, names))))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                id(node) not in docstrings):
            for match in word.finditer(node.value):
                yield match.group(1), f"line {node.lineno}: {node.value[:70]!r}"
    for module in sorted({".".join(m.split(".")[:3]) for m in _imports(path)}):
        if (owner := _owner(module, names)) is not None:
            yield owner, f"imports {module}"


def test_a_backend_is_named_only_in_its_own_modules_and_the_registry() -> None:
    """The command line, the Runs page and the dashboard's checks are built from what each
    backend declares (``Backend.options``, ``Backend.preflight``): nothing else of the
    project asks which backend it holds by name."""
    from elitr_core.backends.registry import BACKENDS

    offences = sorted(
        f"{module} names {name}: {where}" for module, path in SOURCES.items()
        if module != "elitr_core.backends.registry"
        for name, where in _backend_names_in(path, tuple(BACKENDS))
        if _owner(module, tuple(BACKENDS)) != name
        and not (where.endswith(f"{name!r}") and (module, name) in NOT_A_BACKEND))
    assert not offences, "declare it on the backend instead:\n" + "\n".join(offences)


def test_the_backend_name_check_sees_one(tmp_path: Path) -> None:
    source = tmp_path / "page.py"
    source.write_text('"""The hf backend, in a docstring."""\nimport openai\n'
                      "from elitr_core.backends.openai_backend import public_url\n"
                      'BACKEND = "fake"\nHELP = "hf: a local model directory"\n'
                      'if backend == "openai":\n    pass\n'
                      'fine = "api.openai.com, hf_home, openai-compatible, fakes"\n')
    assert sorted(_backend_names_in(source, ("hf", "openai", "fake"))) == [
        ("fake", "line 4: 'fake'"), ("hf", "line 5: 'hf: a local model directory'"),
        ("openai", "imports elitr_core.backends.openai_backend"),
        ("openai", "line 6: 'openai'")]
    assert _owner("elitr_core.backends.hf_cache", ("hf",)) == "hf"
    assert _owner("elitr_core.backends.hfx", ("hf",)) is None
