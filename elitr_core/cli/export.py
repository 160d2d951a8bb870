"""Analysis commands: ``export`` (the export contract's tables) and ``metrics``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from elitr_core.cli.options import (
    SEVERAL,
    ListOption,
    db_option,
    filter_options,
    run_filter_options,
    score_filter,
)
from elitr_core.errors import UserError


def cmd_export(args: argparse.Namespace) -> int:
    from elitr_core.data.database import open_database, reading
    from elitr_core.export.formats import render, write
    from elitr_core.export.groups import parse_groups
    from elitr_core.export.tables import build_table
    from elitr_core.vocab import PAIRWISE_TABLES

    if args.table == "benchmark":
        return export_benchmark(args)
    if args.table == "label-studio":
        return export_label_studio(args)
    if args.project is not None:
        raise UserError("--project applies to export label-studio DIR only")
    if args.table == "dataset" or args.folder is not None:
        return export_dataset(args)
    if args.include_minutes:
        raise UserError("--include-minutes applies to export dataset DIR only")
    engine = open_database(args.db, write=False)
    flt = score_filter(args)
    pairwise = args.table in PAIRWISE_TABLES or (args.table == "elo" and args.source == "pairwise")
    if args.source == "pairwise" and not pairwise:
        raise UserError(f"--source pairwise applies to elo, not {args.table}")
    with reading(engine) as session:
        if pairwise:  # its statistics (scipy) imported only here: ``export scores`` starts faster
            from elitr_core.export.pairwise import build_pairwise_table

            frame = build_pairwise_table(args.table, session, flt, criterion=args.criterion,
                                         baseline=args.baseline, reference=args.reference,
                                         elo=args.elo)
        else:
            frame = build_table(args.table, session, flt, reference=args.reference,
                                groups=parse_groups(args.group or []), audit=audit_options(args),
                                elo=args.elo, rank_by=args.rank_by, aggregate=args.aggregate)
    name = "elo-pairwise" if pairwise and args.table == "elo" else args.table
    write(render(frame, args.format, name), args.out)
    return 0


def export_benchmark(args: argparse.Namespace) -> int:
    """``export benchmark --format jsonl``: the questions as the lm-evaluation-harness task
    reads them (single-turn, the benchmark's prompts, transcripts from the database)."""
    from elitr_core.data.database import open_database, reading
    from elitr_core.export.formats import write
    from elitr_core.integrations.items import benchmark_items, jsonl_text

    if args.format != "jsonl":
        raise UserError("export benchmark writes --format jsonl (one question a line)")
    with reading(open_database(args.db, write=False)) as session:
        items = benchmark_items(
            session, split=args.split or "test2", setting=args.setting or "qa",
            mode=args.mode or "st", meetings=tuple(args.meetings or ()),
            language=args.language, length_instruction=args.length_instruction,
            system_prompt=args.system_prompt, qa_markers=args.qa_markers)
    write(jsonl_text(items), args.out)
    return 0


def export_dataset(args: argparse.Namespace) -> int:
    """``export dataset DIR``: scores, responses, questions and studies as Parquet with a
    dataset card (annotators pseudonymised)."""
    from elitr_core.data.database import open_database, reading
    from elitr_core.export.dataset import dataset_tables, write_dataset

    if args.table != "dataset" or args.folder is None:
        raise UserError("a folder goes with `export dataset DIR` only; other tables take "
                        "--out FILE" if args.table != "dataset" else
                        "export dataset needs the folder to write: export dataset DIR")
    with reading(open_database(args.db, write=False)) as session:
        tables = dataset_tables(session, score_filter(args), include_minutes=args.include_minutes)
    written = write_dataset(tables, args.folder, include_minutes=args.include_minutes)
    print(f"wrote {len(written)} files to {args.folder}: "
          + ", ".join(f"{name} ({len(frame):,} rows)" if len(frame) else
                      f"{name} (no row: left out)" for name, frame in tables.items())
          + "; annotators pseudonymised"
          + ("; corpus minutes included (their licence is on the card)" if args.include_minutes
             else "; corpus minutes left out (--include-minutes puts them in)"))
    return 0


def export_label_studio(args: argparse.Namespace) -> int:
    """``export label-studio DIR``: the responses as blind Label Studio tasks and the
    labelling config with the 10-point rubric."""
    from elitr_core.data.database import open_database, reading
    from elitr_core.integrations.label_studio import (
        checked_project,
        evaluator_slug,
        task_table,
        write_label_studio,
    )

    if args.folder is None:
        raise UserError("export label-studio needs the folder to write: export label-studio "
                        "DIR")
    if args.evaluator:
        raise UserError("--evaluator does not apply to export label-studio (it writes "
                        "responses, whoever scored them)")
    project = checked_project(args.project or Path(args.folder).absolute().name)
    with reading(open_database(args.db, write=False)) as session:
        frame = task_table(session, score_filter(args))
    written = write_label_studio(frame, args.folder, project)
    print(f"wrote {', '.join(p.name for p in written)} to {args.folder}: {len(frame):,} "
          f"tasks, blind (no model name); their annotations import back as the evaluator "
          f"{evaluator_slug(project)} (docs/harnesses-and-datasets.md, Label Studio)")
    return 0


def benchmark_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``export benchmark`` (the questions for lm-evaluation-harness)."""
    from elitr_core.vocab import LANGUAGES

    g = p.add_argument_group("benchmark (--format jsonl: the questions for "
                             "elitr_core/integrations/lm_eval/elitr_bench.yaml)")
    g.add_argument("--meeting", "--meetings", dest="meetings", action=ListOption,
                   metavar="ID", help=f"only these meetings ({SEVERAL})")
    g.add_argument("--language", choices=LANGUAGES, default="en")
    g.add_argument("--length-instruction", action="store_true",
                   help="add \"Answer this question with N words.\" (the LIE option)")
    g.add_argument("--qa-markers", action="store_true", help="QUESTION: ... ANSWER:")
    g.add_argument("--system-prompt", action="store_true",
                   help="the answer prompt in the rows' system field, not in prompt")


def audit_options(args: argparse.Namespace) -> Any:
    """The judge-audit options given on the command line."""
    from elitr_core.export.judge_audit import AuditOptions

    return AuditOptions(judge=args.judge, human=args.human, confidence=args.confidence,
                        half_width=args.half_width, budget=args.budget,
                        replicates=args.replicates, folds=args.folds, seed=args.seed,
                        judge_family=args.judge_family or "")


def audit_arguments(p: argparse.ArgumentParser) -> None:
    """Options of the judge-audit tables (ppi, recalibration, judge-effects, ...)."""
    g = p.add_argument_group("judge audit (ppi, ppi-budget, ppi-designs, recalibration, "
                             "judge-effects, self-consistency, turn-effect, st-vs-mt)")
    g.add_argument("--judge", default="gpt-4", metavar="SLUG",
                   help="judge evaluator scored on all responses (default gpt-4)")
    g.add_argument("--human", default="gold-human", metavar="SLUG",
                   help="human evaluator scored on a subset (default gold-human)")
    g.add_argument("--confidence", type=float, default=0.95, help="interval coverage")
    g.add_argument("--half-width", type=float, default=0.5,
                   help="ppi-budget: target half-width of the interval (default 0.5)")
    g.add_argument("--budget", type=int, default=100,
                   help="ppi-designs: human scores per simulated study (default 100)")
    g.add_argument("--replicates", type=int, default=1000,
                   help="bootstrap replicates / simulated studies (default 1000)")
    g.add_argument("--folds", type=int, default=5,
                   help="recalibration: folds of questions for cross-fitting (default 5)")
    g.add_argument("--seed", type=int, default=0, help="seed of resampling and folds")
    g.add_argument("--judge-family", metavar="NAME",
                   help="judge-effects: the judge's model family (default: the --group "
                        "holding a model named like the judge)")


def cmd_metrics(args: argparse.Namespace) -> int:
    from elitr_core.data.database import open_database, writing
    from elitr_core.judging.metric_scores import compute_metrics

    flt = score_filter(args)
    with writing(open_database(args.db)) as session:
        computed = compute_metrics(session, args.metric or ["rouge-l", "token-f1"], flt)
    print("; ".join(f"{slug}: {n} response(s) scored" for slug, n in computed.items())
          + " (responses scored before are kept)")
    return 0


def register(sub: Any) -> None:
    """Add ``export`` and ``metrics`` to the CLI's subparsers."""
    from elitr_core.vocab import PAIRWISE_TABLES, PROVENANCE_TABLES, TABLE_NAMES

    names = (*TABLE_NAMES, *PAIRWISE_TABLES, *PROVENANCE_TABLES, "benchmark", "dataset",
             "label-studio")
    p = sub.add_parser(
        "export",
        help="export a table (CSV, JSON, LaTeX, Parquet) or the scores as a dataset",
        description="Export one table of the export contract to stdout or --out (Parquet: "
        "--out only); `export dataset DIR` writes scores, responses, questions and studies "
        "as Parquet with a dataset card (annotators pseudonymised; datasets.load_dataset(DIR) "
        "opens it); `export label-studio DIR` the responses as blind Label Studio tasks with "
        "a labelling config of the 10-point rubric; `export benchmark --format jsonl` the "
        "questions for lm-evaluation-harness.",
    )
    p.add_argument(
        "table", choices=names, metavar="TABLE", help="one of: " + ", ".join(names)
    )
    p.add_argument("folder", nargs="?", metavar="DIR",
                   help="dataset, label-studio: the folder to write")
    p.add_argument("--project", metavar="NAME",
                   help="label-studio: the project's name, which its annotations are imported "
                   "under as the evaluator label-studio:NAME (default: the folder's name)")
    p.add_argument("--include-minutes", action="store_true",
                   help="dataset: keep the reference answers of summary questions (the ELITR "
                        "Minuting Corpus's minutes, under its own licence; default: left out)")
    db_option(p)
    filter_options(p)
    p.add_argument("--rank-by", metavar="COLUMN",
                   help="main-table: the column that ranks the models (default 'QA-st mean'); "
                   "its evaluator is the first --evaluator (default gpt-4)")
    p.add_argument(
        "--reference",
        default="gold-human",
        metavar="SLUG",
        help="reference evaluator of calibration and bias (default gold-human)",
    )
    p.add_argument("--group", action="append", metavar="NAME=MODEL,MODEL",
                   help="breakdown: a model family, e.g. GPT=GPT-4,GPT-3.5 (repeat for several)")
    audit_arguments(p)
    benchmark_arguments(p)
    p.add_argument("--source", choices=["scores", "pairwise"], default="scores",
                   help="elo: from per-question score matches (default) or pairwise judgments")
    p.add_argument("--elo", choices=["mle", "median", "order"], default="mle",
                   help="elo, pairwise-agreement: maximum-likelihood Elo (Bradley-Terry on the "
                   "Elo scale, default), CREAM's update as the median over 200 random match "
                   "orders (seed 0), or one pass in question order")
    p.add_argument("--aggregate", choices=["gaussian", "dawid-skene"], default="gaussian",
                   help="silver-aggregate, annotator-reliability, silver-aggregate-agreement: "
                   "each annotator's offset and precision (default), or nominal Dawid-Skene "
                   "(dense studies only: every annotator 100 scores or more)")
    p.add_argument("--baseline", metavar="MODEL", help="winrate: the model battled against")
    p.add_argument("--criterion", choices=["verdict", "completeness", "conciseness"],
                   help="pairwise tables: one criterion (default: each one the judges define)")
    p.add_argument("--format", choices=["csv", "json", "latex", "parquet", "jsonl"],
                   default="csv", help="parquet: with --out; jsonl: the benchmark only")
    p.add_argument("--out", metavar="FILE", help="write here instead of stdout")
    p.set_defaults(handler=cmd_export)

    p = sub.add_parser("metrics", help="score responses with ROUGE-L / token F1 (as evaluators)",
                       description="Store ROUGE-L and token F1 against the reference as "
                       "evaluators rouge-l and token-f1 (1 + 9 x value), so they enter every "
                       "comparison. Responses already scored are skipped.")
    p.add_argument("--metric", action=ListOption, allowed=["rouge-l", "token-f1"],
                   help=f"default: both ({SEVERAL})")
    run_filter_options(p)
    db_option(p)
    p.set_defaults(handler=cmd_metrics)
