"""Every export column has a display name (issue 43 item 3): the pages head their tables with
them, the "as shown" downloads write them, the export keeps its own names."""

from __future__ import annotations

import pytest

from elitr_core.export.column_labels import COLUMN_LABELS, column_label, column_labels
from elitr_core.export.display import interval_label
from elitr_core.export.schema import OTHER_COLUMNS
from elitr_core.vocab import EXPORT_COLUMNS

TABLES = {**EXPORT_COLUMNS, **OTHER_COLUMNS}


@pytest.mark.parametrize("table", sorted(TABLES))
def test_every_export_column_has_a_display_name(table: str) -> None:
    columns = TABLES[table]
    # an interval a page shows as one column (ppipp_ci) has its own name too
    intervals = [interval_label(c) for c in columns
                 if c == "ci_low" or (c.endswith("_ci_low") and c[:-3] + "high" in columns)]
    missing = [c for c in (*columns, *intervals) if c not in COLUMN_LABELS]
    assert not missing, f"{table}: no display name for {missing} (export/column_labels.py)"
    labels = [COLUMN_LABELS[c] for c in columns]
    assert len(set(labels)) == len(labels), f"{table}: two columns share a display name"


def test_the_raw_names_the_issue_quoted_read_as_words() -> None:
    assert column_label("ppipp_ci") == "PPI++ 95% CI"
    assert column_label("n_labelled") == "n labelled"
    assert column_label("human_betting_ci_low") == "Human betting 95% CI low"
    assert column_label("mean_abs_error") == "Mean absolute error"


def test_a_column_a_page_adds_reads_without_underscores_or_keeps_its_name() -> None:
    assert column_label("abs_difference") == "Abs difference"
    assert column_label("tokens/s") == "tokens/s"
    assert column_label("gpt-4") == "gpt-4"  # an evaluator's scores, under its name


def test_the_columns_pages_add_are_headed_like_the_export_columns() -> None:
    """The Studies page's progress and quality tables and the Runs page's jobs: one-word
    names (``unit``, ``answered``) were headed in lower case beside "Annotator", "Status"."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    names: set[str] = set()
    for path in ("pages/studies.py", "pages/runs.py", "ui/study_quality.py"):  # (a page is a
        for node in ast.parse((root / path).read_text()).body:  # script: read, not imported)
            target = node.targets[0] if isinstance(node, ast.Assign) else None
            if isinstance(target, ast.Name) and target.id.endswith("_KEYS"):
                names |= set(ast.literal_eval(node.value))  # type: ignore[union-attr]
    assert {"unit", "answered", "eta", "gold_r"} <= names
    for name in names:
        label = column_label(name)
        assert label[:1].isupper() and "_" not in label, (name, label)


def test_labels_two_columns_would_share_are_told_apart() -> None:
    assert column_labels(["question", "Question"]) == {"question": "Question text",
                                                       "Question": "Question"}
    assert column_labels(["question_id", "Question"]) == {
        "question_id": "Question (question_id)", "Question": "Question (Question)"}
