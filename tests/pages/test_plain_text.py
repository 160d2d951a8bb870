"""No page hands imported text to a Streamlit element that renders Markdown, except through
``ui.text`` (issue 19, item 5).

An AST scan of ``app.py``, ``pages/`` and ``ui/``: every argument that Streamlit reads as Markdown
(the body of ``st.markdown``/``caption``/alerts/headers/``toast``, widget labels, ``help``,
tab and expander labels, the options and ``format_func`` of radios, pills and segmented
controls, ``st.metric``'s label, value and delta, ``st.table``) must be a constant, or built
only from constants, numbers formatted with a format spec, and calls of ``ui.text``'s
``plain``/``md``/``code_span``. The escaping itself is checked against Streamlit's Markdown in the
browser test ``tests/browser/test_plain_text_browser.py``; the helper's cases below.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ui.text import Markdown, code_span, md, message, plain

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")),
           *sorted((ROOT / "ui").rglob("*.py"))]
HELPER = ROOT / "ui" / "text.py"
SAFE_CALLS = {"plain", "md", "code_span", "message"}
# numbers are never Markdown: counts and sizes may be formatted directly
NUMERIC_CALLS = {"len", "int", "float", "round", "sum", "abs", "min", "max"}

BODY = {"markdown", "write", "caption", "info", "warning", "error", "success", "title",
        "header", "subheader", "toast", "exception", "table", "spinner"}
LABELLED = {"button", "download_button", "link_button", "page_link", "checkbox", "toggle",
            "radio", "selectbox", "multiselect", "text_input", "text_area", "number_input",
            "slider", "select_slider", "date_input", "time_input", "file_uploader",
            "color_picker", "form_submit_button", "popover", "expander", "status", "pills",
            "segmented_control", "feedback", "chat_input", "dialog", "progress"}
MARKDOWN_OPTIONS = {"radio", "pills", "segmented_control"}
METRIC = {"metric"}
KEYWORDS = {"help", "label", "body", "title", "text", "value", "delta", "captions"}


def _safe_names(tree: ast.Module, markdown_functions: set[str]) -> set[str]:
    """Names bound only to safe values: module-level constants (labels, templates, tuple
    unpacking of constants) and loop variables over them."""
    names: set[str] = set()
    for _ in range(2):  # a second pass sees names defined from names of the first
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and node in tree.body:
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node in tree.body and node.value:
                targets, value = [node.target], node.value
            elif isinstance(node, ast.For | ast.comprehension):
                targets, value = [node.target], node.iter
            else:
                continue
            if _safe(value, names, markdown_functions):
                for target in targets:
                    names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def _module(path: Path) -> str:
    """``ui/analysis/leaderboard.py`` -> ``ui.analysis.leaderboard`` (a file elsewhere: its
    stem)."""
    return ".".join(path.relative_to(ROOT).with_suffix("").parts) \
        if path.is_relative_to(ROOT) else path.stem


def _imported_safe_names(trees: dict[Path, ast.Module],
                         names: dict[Path, set[str]]) -> dict[Path, set[str]]:
    """Each module's safe names plus those it imports from a scanned module where they are
    safe (a page's tab labels, defined in ``ui.analysis``)."""
    by_module = {_module(path): path for path in trees}
    out = {path: set(found) for path, found in names.items()}
    for path, tree in trees.items():
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module in by_module:
                source = names[by_module[node.module]]
                out[path] |= {a.asname or a.name for a in node.names if a.name in source}
    return out


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _safe(node: ast.AST | None, names: set[str], markdown_functions: set[str]) -> bool:
    """Whether ``node`` can only produce constant text, numbers, or text escaped by
    ui.text (directly or through a page function declared ``-> Markdown``)."""
    return not _unsafe_leaves(node, names, markdown_functions)


def _unsafe_leaves(node: ast.AST | None, names: set[str],
                   markdown_functions: set[str]) -> list[ast.AST]:
    """The parts of ``node`` that may carry unescaped text (none: ``node`` is safe)."""
    def leaves(*children: ast.AST | None) -> list[ast.AST]:
        return [leaf for child in children
                for leaf in _unsafe_leaves(child, names, markdown_functions)]

    if node is None or isinstance(node, ast.Constant | ast.Compare | ast.UnaryOp):
        return []  # text, a number, a bool or a negated number
    if isinstance(node, ast.Name):
        safe_name = node.id in names or node.id in SAFE_CALLS | markdown_functions
        return [] if safe_name else [node]
    if isinstance(node, ast.FormattedValue):
        # a format spec (:.3f, :,, :.0%) fails on anything but a number
        return [] if node.format_spec is not None else leaves(node.value)
    if isinstance(node, ast.JoinedStr | ast.List | ast.Tuple | ast.BoolOp):
        children = {ast.JoinedStr: "values", ast.BoolOp: "values"}.get(type(node), "elts")
        return leaves(*getattr(node, children))
    if isinstance(node, ast.BinOp):
        return leaves(node.left, node.right)
    if isinstance(node, ast.IfExp):
        return leaves(node.body, node.orelse)
    if isinstance(node, ast.Lambda):
        return leaves(node.body)
    if isinstance(node, ast.Dict):  # iterated (tab labels), a dict gives its keys
        return leaves(*node.keys)
    if isinstance(node, ast.Call):
        name = _call_name(node)
        if name in {"list", "tuple", "sorted"} and len(node.args) == 1:
            return leaves(node.args[0])
        return [] if name in SAFE_CALLS | NUMERIC_CALLS | markdown_functions else [node]
    return [node]


def _markdown_functions(trees: list[ast.Module]) -> set[str]:
    """Page functions whose return annotation is ``Markdown``."""
    return {node.name for tree in trees for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef) and node.returns is not None
            and ast.unparse(node.returns).split(".")[-1] == "Markdown"}


def _parameter(node: ast.AST, function: ast.FunctionDef | None) -> tuple[int, str] | None:
    """``(position, name)`` when ``node`` is a parameter of ``function`` handed on as it is
    (or through ``list``/``str``): then its callers must pass safe text."""
    if isinstance(node, ast.Call) and _call_name(node) in {"list", "str"} and node.args:
        node = node.args[0]
    if function is None or not isinstance(node, ast.Name):
        return None
    params = [a.arg for a in function.args.posonlyargs + function.args.args]
    if node.id in params:
        return params.index(node.id), node.id
    if node.id in [a.arg for a in function.args.kwonlyargs]:
        return -1, node.id
    return None
def _markdown_arguments(call: ast.Call) -> list[tuple[str, ast.AST]]:
    """The arguments of ``call`` that Streamlit renders as Markdown (empty for other calls)."""
    name = _call_name(call)
    if not isinstance(call.func, ast.Attribute):
        return []
    out: list[tuple[str, ast.AST]] = [(f"{name}(help=)", k.value) for k in call.keywords
                                      if k.arg == "help"]
    positional = {"tabs": 1, "metric": 3, "progress": 0}.get(
        name, 1 if name in BODY | LABELLED else 0)
    if name == "write":
        positional = len(call.args)
    out += [(f"{name}(arg {i})", a) for i, a in enumerate(call.args[:positional])]
    keywords = KEYWORDS - {"help"} - ({"value"} if name in LABELLED else set())
    if name in BODY | LABELLED | METRIC | {"tabs"}:
        out += [(f"{name}({k.arg}=)", k.value) for k in call.keywords if k.arg in keywords]
    if name in MARKDOWN_OPTIONS:  # the shown option is format_func(option), or the option
        shown = [(f"{name}(format_func=)", k.value) for k in call.keywords
                 if k.arg == "format_func"]
        out += shown or [(f"{name}(options)", a) for a in call.args[1:2]] + [
            (f"{name}(options=)", k.value) for k in call.keywords if k.arg == "options"]
    return out


def _calls_with_function(tree: ast.Module) -> list[tuple[ast.Call, ast.FunctionDef | None]]:
    """Every call of a module with the function that encloses it (None at module level)."""
    out: list[tuple[ast.Call, ast.FunctionDef | None]] = []

    def visit(node: ast.AST, function: ast.FunctionDef | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Call):
                out.append((child, function))
            visit(child, child if isinstance(child, ast.FunctionDef) else function)

    visit(tree, None)
    return out


def _argument(call: ast.Call, position: int, name: str) -> ast.AST | None:
    if 0 <= position < len(call.args):
        return call.args[position]
    return next((k.value for k in call.keywords if k.arg == name), None)


def unsafe_calls(paths: list[Path]) -> list[str]:
    """``file:line: element: argument`` for every Markdown-rendering call given text that is
    neither constant nor escaped by ui.text, following parameters from function to caller
    (``open_tab(labels)`` is checked where it is called)."""
    trees = {path: ast.parse(path.read_text(), filename=str(path)) for path in paths}
    markdown_functions = _markdown_functions(list(trees.values()))
    names = _imported_safe_names(trees, {path: _safe_names(tree, markdown_functions)
                                         for path, tree in trees.items()})
    calls = {path: _calls_with_function(tree) for path, tree in trees.items()}
    found: list[str] = []
    sinks: list[tuple[str, int, str]] = []  # (function, position, parameter) fed to Markdown

    def check(path: Path, call: ast.Call, function: ast.FunctionDef | None, where: str,
              arg: ast.AST) -> None:
        unsafe = _unsafe_leaves(arg, names[path], markdown_functions)
        forwarded = [_parameter(leaf, function) for leaf in unsafe]
        if function is not None and all(forwarded):  # the caller's text: check the callers
            sinks.extend((function.name, *f) for f in forwarded if f is not None)
        elif unsafe:
            found.append(f"{path.name}:{call.lineno}: {where}: {ast.unparse(arg)[:80]}")

    for path, tree in trees.items():
        for call, function in calls[path]:
            for where, arg in _markdown_arguments(call):
                check(path, call, function, where, arg)
        for node in ast.walk(tree):  # what a `-> Markdown` function returns must be safe
            if isinstance(node, ast.FunctionDef) and node.name in markdown_functions:
                found += [f"{path.name}:{r.lineno}: return of {node.name}"
                          for r in ast.walk(node) if isinstance(r, ast.Return)
                          and not _safe(r.value, names[path], markdown_functions)]
    seen: set[tuple[str, int, str]] = set()
    while sinks:
        sink = sinks.pop()
        if sink in seen:
            continue
        seen.add(sink)
        for path in paths:
            for call, function in calls[path]:
                arg = _argument(call, sink[1], sink[2]) if _call_name(call) == sink[0] \
                    else None
                if arg is not None:
                    check(path, call, function, f"{sink[0]}({sink[2]}=)", arg)
    return found


def test_no_page_renders_unescaped_text_as_markdown() -> None:
    found = unsafe_calls([path for path in SOURCES if path != HELPER])
    assert not found, ("Markdown-rendering calls given text that did not go through "
                       "ui.text (plain/md/code_span):\n" + "\n".join(found))


UNSAFE = ['st.markdown(f"Study {name}")', "st.caption(label)", "st.error(str(exc))",
          'st.button(f"Remove {who}")', 'st.radio("Model", models)',
          'st.radio("Model", options, format_func=lambda m: m.upper())',
          'st.tabs([name, "Other"])', 'st.metric("Study", study)',
          'st.selectbox("Study", names, help=note)', "st.table(frame)",
          'col.success("Saved " + name)',
          "def note(text):\n    st.caption(text)\nnote(name)",
          "TABS = {name: 1}\nst.tabs(list(TABS))"]  # a parameter: the caller's text
SAFE = ['st.markdown("**Constant**")', 'st.markdown(md("Study {}", name))',
        "st.caption(plain(label))", 'st.metric("Items", f"{n:,}")',
        'st.selectbox("Study", names)', 'st.radio("Model", options, format_func=plain)',
        "st.text(response)", 'st.success(f"{len(rows)} rows stored")',
        'def note(text):\n    st.caption(text)\nnote("constant")',
        'A, B = ("x", "y")\nfor tab in (A, B):\n    st.subheader(tab)',
        'TABS = {"PPI": 1, "Budget": 2}\nst.tabs(list(TABS))']


@pytest.mark.parametrize(("source", "unsafe"), [(s, True) for s in UNSAFE]
                         + [(s, False) for s in SAFE])
def test_the_scan_tells_escaped_from_unescaped_text(source: str, unsafe: bool,
                                                   tmp_path: Path) -> None:
    page = tmp_path / "page.py"
    page.write_text(source + "\n")
    assert bool(unsafe_calls([page])) is unsafe, source


def test_the_scan_follows_constants_imported_from_a_scanned_module(tmp_path: Path) -> None:
    labels = tmp_path / "labels.py"
    labels.write_text('TITLE = "Battles"\nTABS: dict[str, int] = {"PPI": 1}\nname = input()\n')
    page = tmp_path / "page.py"
    page.write_text("from labels import TITLE, TABS, name\nst.title(TITLE)\n"
                    "st.tabs(list(TABS))\nst.caption(name)\n")
    assert [line.split(": ", 1)[1] for line in unsafe_calls([labels, page])] == [
        "caption(arg 0): name"]
    assert len(unsafe_calls([page])) == 3  # without the module, nothing is known of them


@pytest.mark.parametrize(("raw", "escaped"), [
    # a bare address is a code span: no link, and a copy of it is the address (no U+2060)
    ("![x](http://127.0.0.1:9/p.png)", "!\\[x\\](`http://127.0.0.1:9/p.png`)"),
    ("reach http://127.0.0.1:9/v1: start", "reach `http://127.0.0.1:9/v1`: start"),
    ("<img src=x>", r"\<img src=x\>"),
    ("<https://e.org/a>", "\\<`https://e.org/a`\\>"),
    ("see www.e.org or wwwx.org", "see `www.e.org` or wwwx.org"),
    ("GPT-4 (fine-tuned).", "GPT-4 (fine-tuned)."),
    ("line one\nline two", "line one line two"),
    (":red[x] $y$ a_b *c* `d`", r":red\[x\] \$y\$ a\_b \*c\* \`d\`"),
    ("~~e~~ |f| &amp;", r"\~\~e\~\~ \|f\| \&amp;"),
    ("# heading", r"\# heading"),
    ("- item", r"\- item"),
    ("12. item", r"12\. item"),
    ("back\\slash", r"back\\slash"),
])
def test_plain_escapes_every_markdown_construct(raw: str, escaped: str) -> None:
    assert plain(raw) == escaped
    assert isinstance(plain(raw), Markdown) and plain(plain(raw)) == plain(raw)


def test_a_message_shows_its_quoted_commands_as_code_not_backticks() -> None:
    shown = message("no transcript: run `python -m elitr_core transcripts DIR` *first*")
    assert shown == "no transcript: run `python -m elitr_core transcripts DIR` \\*first\\*"
    assert message("one ` alone") == plain("one ` alone")  # nothing quoted: escaped whole


def test_md_escapes_values_not_the_template() -> None:
    assert md("**Study** {}: {n} items", "a_b", n=3) == r"**Study** a\_b: 3 items"


@pytest.mark.parametrize(("raw", "span"), [
    ("gold-human", "`gold-human`"),
    ("a`b", "``a`b``"),
    ("`x`", "`` `x` ``"),
])
def test_code_spans_cannot_be_closed_by_the_text(raw: str, span: str) -> None:
    assert code_span(raw) == span
