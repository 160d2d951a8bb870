"""Options shared by the commands: the database URL, the score filters, and the one style
of every option taking several values (:class:`ListOption`)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from elitr_core.cli.boundary import valid_text
from elitr_core.vocab import INTERLEAVED_MODES, MODES, SETTINGS, SPLITS

if TYPE_CHECKING:
    from elitr_core.data.browse import ScoreFilter


#: Said in the help of every option taking several values.
SEVERAL = "repeat, or separate values by a comma"
#: Said in the help of an option whose values are whole names (a model name may hold a comma).
WHOLE = "the name is taken whole, commas included"


class ListOption(argparse.Action):
    """The one style of an option taking several values: repeatable, and each occurrence a
    comma list too, so ``--model A --model B`` and ``--model A,B`` mean the same. Values are
    trimmed; an empty one (``--model A,``) is a usage error. ``allowed`` checks each value
    (argparse's ``choices`` would check the whole comma list). The value is ``None`` when the
    option is not given, else the list in the order given.

    ``whole`` names the option strings whose values are free-text names taken whole (a model
    name may hold a comma: ``--model 'A, v2'``), so only repeating gives several of them."""

    def __init__(self, option_strings: Sequence[str], dest: str,
                 allowed: Sequence[str] | None = None, whole: Sequence[str] = (),
                 **kwargs: Any) -> None:
        self.allowed = tuple(allowed) if allowed is not None else None
        self.whole = frozenset(whole)
        if self.allowed and "metavar" not in kwargs:
            kwargs["metavar"] = "{" + ",".join(self.allowed) + "}"
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        text = str(values)
        items = [text.strip()] if option_string in self.whole else [
            item.strip() for item in text.split(",")]
        if not all(items):
            raise argparse.ArgumentError(self, f"empty value in {values!r}: give one value, or "
                                         "several separated by commas (A,B)")
        wrong = [item for item in items if self.allowed and item not in self.allowed]
        if wrong:
            raise argparse.ArgumentError(self, f"invalid choice: {wrong[0]!r} (choose from "
                                         f"{', '.join(self.allowed or ())})")
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), *items])


def db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        metavar="URL",
        default=None,
        type=valid_text("database URL"),
        help="database URL (default: $DATABASE_URL, else var/elitr.db SQLite)",
    )


def run_filter_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--split", choices=SPLITS)
    parser.add_argument("--setting", choices=SETTINGS)
    parser.add_argument("--mode", choices=[*MODES, *INTERLEAVED_MODES],
                        help="st, mt, or an interleaved run's int2/int3")
    parser.add_argument("--model", action=ListOption, whole=["--model"], metavar="NAME",
                        help=f"keep this model (repeat for several; {WHOLE})")


def filter_options(parser: argparse.ArgumentParser) -> None:
    run_filter_options(parser)
    parser.add_argument("--evaluator", action=ListOption, metavar="SLUG",
                        help=f"keep these evaluators ({SEVERAL})")


def score_filter(args: argparse.Namespace) -> ScoreFilter:
    """The filters given on the command line (``--evaluator`` only where the command has it)."""
    from elitr_core.data.browse import ScoreFilter

    evaluators = getattr(args, "evaluator", None)
    return ScoreFilter(split=args.split, setting=args.setting, mode=args.mode,
                       evaluators=tuple(evaluators) if evaluators else None,
                       models=tuple(args.model) if args.model else None)
