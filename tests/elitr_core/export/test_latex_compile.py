"""LaTeX exports print names as written, compiled by real TeX engines from Debian (issue 27,
item 9): pdflatex for Latin names, XeLaTeX with fontspec and a CJK font (WenQuanYi Zen Hei,
``fonts-wqy-zenhei``) for names in other scripts. ``make test`` installs them (texlive-latex-
base, texlive-latex-recommended, texlive-xetex, fonts-wqy-zenhei, poppler-utils for pdftotext).
"""

from __future__ import annotations

import shutil
import subprocess
import unicodedata
from pathlib import Path

import pandas as pd
import pytest

from elitr_core.export.formats import to_latex

LATIN = [r"\input{/etc/passwd}", r"\\ \end{tabular}", "& % $ # { } ~ ^ < > | \"",
         "Müller Ångström œ ß", "a\n\nb\tc\x01d", r"$x^2$ \verb|v|"]
OTHER = ["模型-7B", "ＧＰＴ－４ ＝SUM(A1)", "日本語モデル", "한국어"]


def _compile(engine: str, tmp_path: Path, names: list[str], preamble: str = "") -> str:
    """The text of the PDF that ``engine`` makes of the export of ``names``."""
    for tool in (engine, "pdftotext"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} is required: run `make test` (it installs Debian's TeX)")
    table = to_latex(pd.DataFrame({"model": names, "mean": [5.0] * len(names)}),
                     caption="names " + " ".join(names[:2]))
    (tmp_path / "t.tex").write_text(
        "\\documentclass{article}\n\\usepackage{booktabs}\n" + preamble +
        "\\begin{document}\n" + table + "\\end{document}\n", encoding="utf-8")
    done = subprocess.run([engine, "-no-shell-escape", "-interaction=nonstopmode",
                           "-halt-on-error", "t.tex"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    text = subprocess.run(["pdftotext", "t.pdf", "-"], cwd=tmp_path, capture_output=True,
                          text=True, check=True).stdout
    return unicodedata.normalize("NFKC", " ".join(text.split()))  # ü drawn as u and ¨


def test_every_special_character_is_escaped_the_latex_way() -> None:
    latex = to_latex(pd.DataFrame({"model": [r"\input{/etc/passwd}"]}))
    assert r"\textbackslash{}input\{/etc/passwd\}" in latex  # was \{}input{/etc/passwd}


def test_latin_names_compile_with_pdflatex_as_written(tmp_path: Path) -> None:
    text = _compile("pdflatex", tmp_path, LATIN)
    for name in (r"\input{/etc/passwd}", r"\\ \end{tabular}", "Müller Ångström œ ß",
                 r"\verb|v|", "a b cd"):
        assert unicodedata.normalize("NFKC", name) in text, (name, text)
    assert "root:" not in text  # nothing was read from /etc/passwd


def test_other_scripts_compile_with_xelatex(tmp_path: Path) -> None:
    preamble = "\\usepackage{fontspec}\n\\setmainfont{WenQuanYi Zen Hei}\n"
    text = _compile("xelatex", tmp_path, OTHER + LATIN[:2], preamble)
    for name in [*OTHER, *LATIN[:2]]:
        assert unicodedata.normalize("NFKC", name) in text, (name, text)


#: names TeX's ligatures and quote glyphs changed (issue 41): GPT--4 printed as GPT–4, ``x''
#: as “x”, and so on (ff, fi and fl stay typographic ligatures: the same letters, drawn
#: joined, which T1 fonts do not map back to text for pdftotext)
LIGATURES = ["GPT--4", "a---b", "``quoted''", ",,low", "<<fr>>", "!`inv ?`inv", "it's",
             "x`y", "-1,5", "''", "--"]


@pytest.mark.parametrize("engine,preamble", [
    ("pdflatex", ""), ("pdflatex", "\\usepackage[T1]{fontenc}\n"),
    ("xelatex", "\\usepackage{fontspec}\n")])
def test_ligatures_and_quotes_print_as_written(engine: str, preamble: str,
                                               tmp_path: Path) -> None:
    text = _compile(engine, tmp_path, LIGATURES, preamble)
    for name in LIGATURES:
        assert f" {name} " in f" {text} ", (name, text)
