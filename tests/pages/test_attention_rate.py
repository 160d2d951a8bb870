"""The attention-check rate reads and defaults the same on the Studies page and the command line
(issue 28: the page said "Attention checks per item 0.10", the CLI defaulted to 0)."""

from __future__ import annotations

from elitr_core.annotation.studies import StudySpec
from elitr_core.cli.main import build_parser
from elitr_core.vocab import ATTENTION_RATE_DEFAULT, ATTENTION_RATE_LABEL
from tests.pages.test_studies import _studies_page, url  # noqa: F401 (a fixture)


def _create_parser():  # type: ignore[no-untyped-def]
    study = build_parser()._subparsers._group_actions[0].choices["study"]  # type: ignore[union-attr]
    return study._subparsers._group_actions[0].choices["create"]


def test_the_page_and_the_command_line_share_the_rate_and_its_default(url: str) -> None:  # noqa: F811
    create = _create_parser()
    (action,) = [a for a in create._actions if "--attention-rate" in a.option_strings]
    assert action.default == ATTENTION_RATE_DEFAULT == StudySpec.attention_rate
    assert "rate" in action.help and "per item" in action.help
    app = _studies_page()
    (field,) = [n for n in app.number_input if n.label == ATTENTION_RATE_LABEL]
    assert field.value == ATTENTION_RATE_DEFAULT
    assert "rate" in ATTENTION_RATE_LABEL.lower()
