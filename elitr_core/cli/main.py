"""The command line: ``python -m elitr_core COMMAND`` (``--help`` on every command).

Errors a user can cause print one line, ``error: ...``, and exit with status 2; nothing is
written when an import fails (one transaction per command). Each command group lives in its own
module with a ``register(subparsers)`` function; their heavy imports happen inside the command
handlers, so ``--help`` starts fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from elitr_core.cli import annotation, data, export, runs, startup
from elitr_core.errors import UserError

Handler = Callable[[argparse.Namespace], int]

#: Command groups in the order ``--help`` lists them.
COMMAND_GROUPS = (data, export, annotation, runs)


def build_parser() -> argparse.ArgumentParser:
    """The argparse tree: every command group adds its commands through ``register``."""
    parser = argparse.ArgumentParser(
        prog="python -m elitr_core",
        description="ELITR-Bench dashboard core: data, runs, judging, analyses and exports.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in COMMAND_GROUPS:
        group.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    startup.starting()
    try:
        return handler(args)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "interrupted: what was written so far is kept; run the same command to resume",
            file=sys.stderr,
        )
        return 130
    finally:
        startup.started()
