"""Data commands: ``init``, ``import``, ``transcripts``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from elitr_core.cli.boundary import valid_text
from elitr_core.cli.options import db_option


def cmd_init(args: argparse.Namespace) -> int:
    from elitr_core.data.browse import overview_counts
    from elitr_core.data.database import open_database, writing
    from elitr_core.data.importers import import_bundled

    engine = open_database(args.db)
    with writing(engine) as session:
        report = import_bundled(session)
        counts = overview_counts(session)
    print(f"database ready: {engine.url.render_as_string(hide_password=True)}")
    print(f"bundled ELITR-Bench data: {report.summary()}")
    print("  (records as listed in the files: the release repeats meetings, questions, "
          "responses and scores across its files)")
    print("database holds: " + ", ".join(f"{n:,} {what}" for what, n in counts.items()))
    print("  (each stored once, duplicates merged; running init again changes nothing)")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from elitr_core.data.database import open_database, writing
    from elitr_core.data.importers import import_paths
    from elitr_core.data.report import ImportReport
    from elitr_core.integrations.label_studio_import import (
        import_label_studio_paths,
        is_label_studio_export,
    )
    from elitr_core.integrations.store import import_harness_paths, is_harness_file

    paths = [Path(p) for p in args.paths]
    labelled = [p for p in paths if is_label_studio_export(p)]
    harness = [p for p in paths if p not in labelled and is_harness_file(p)]
    engine = open_database(args.db)
    skipped: list[str] = []
    with writing(engine) as session:  # one transaction: a refused file leaves nothing written
        report = ImportReport()
        if len(harness) + len(labelled) < len(paths):
            report = import_paths(
                session, [p for p in paths if p not in harness and p not in labelled],
                password=args.password.encode(), replace=args.replace,
            )
        if harness:
            skipped = import_harness_paths(session, harness, report, replace=args.replace,
                                           partial=args.partial, variant=args.variant)
        if labelled:  # last: their scores are of responses the other files may bring
            skipped += import_label_studio_paths(session, labelled, report,
                                                 replace=args.replace, variant=args.variant)
    print(f"imported {report.summary()}")
    if skipped:
        print(f"left out {len(skipped)}:")
        for line in skipped:
            print(f"  {line}")
    if report.replaced:
        print(f"replaced {len(report.replaced)} stored value(s):")
        for line in report.replaced:
            print(f"  {line}")
    return 0


def cmd_transcripts(args: argparse.Namespace) -> int:
    from elitr_core.data.database import open_database, writing
    from elitr_core.data.summaries import import_minutes
    from elitr_core.data.transcripts import import_transcripts

    engine = open_database(args.db)
    with writing(engine) as session:
        report = import_transcripts(session, Path(args.folder))
        minutes = import_minutes(session, Path(args.folder))
    print(report.summary())
    if minutes.stored:
        print(minutes.summary())
    return 0


def register(sub: Any) -> None:
    """Add ``init``, ``import`` and ``transcripts`` to the CLI's subparsers."""
    p = sub.add_parser(
        "init",
        help="create the schema and import the bundled data (idempotent)",
        description="Create or upgrade the schema and import the bundled "
        "ELITR-Bench archives. Running it again changes nothing.",
    )
    db_option(p)
    p.set_defaults(handler=cmd_init)

    p = sub.add_parser(
        "import",
        help="import benchmark/response JSON, ZIPs, a scores CSV or a harness's log",
        description="Import ELITR-Bench question or generated-response JSON "
        "files, ZIP archives of them (password 'utter'), a tidy scores CSV "
        "with the columns of `export scores`, inspect_ai logs of the ELITR-Bench task "
        "(.eval, .json) or lm-evaluation-harness samples (samples_elitr_bench_*.jsonl, "
        "read with the results_*.json beside them): each log is a run, its numeric "
        "scorers evaluators; a Label Studio JSON export of a project made from `export "
        "label-studio`: its annotations become the evaluator label-studio:PROJECT. All "
        "files in one transaction. Files that "
        "disagree with each other, or with what is stored, are refused; --replace lets an "
        "import change stored values and lists each one it replaced.",
    )
    p.add_argument("--replace", action="store_true",
                   help="replace stored questions, references, responses or scores that the "
                   "files change (each replaced value is printed)")
    p.add_argument("--partial", action="store_true",
                   help="import the answered samples of an unfinished or errored inspect_ai "
                   "log and list the others (refused without it)")
    p.add_argument("--variant", default="", metavar="NAME",
                   help="harness logs: store them as runs of this variant (tells apart two "
                   "runs of one model and settings, e.g. with and without the LIE option); a "
                   "Label Studio export: its evaluator is label-studio:PROJECT~NAME")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--password", default="utter", type=valid_text("password"),
                   help="password of encrypted ZIP archives (ELITR-Bench's: utter)")
    db_option(p)
    p.set_defaults(handler=cmd_import)

    p = sub.add_parser(
        "transcripts",
        help="import transcripts (and minutes) from an ELITR Minuting Corpus folder",
        description="Store each benchmark meeting's transcript from "
        "elitr-minuting-corpus-en/{dev,test2}/MEETING/transcript_MAN*.txt, and its minutes "
        "(minutes*.txt, the first in name order) as the reference of its summary question.",
    )
    p.add_argument("folder", metavar="DIR")
    db_option(p)
    p.set_defaults(handler=cmd_transcripts)
