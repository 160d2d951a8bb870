"""CLI commands for human scoring: ``annotator add``, ``study create|status|close|exclude``,
``password-hash``. Registered by :func:`elitr_core.cli.main.build_parser` through ``register``."""

from __future__ import annotations

import argparse
import getpass
import sys

from elitr_core.cli.options import SEVERAL, WHOLE, ListOption, db_option
from elitr_core.vocab import ATTENTION_RATE_DEFAULT, MODES, SETTINGS, SPLITS


def cmd_annotator_add(args: argparse.Namespace) -> int:
    from elitr_core.annotation.admin import add_annotator, add_study_annotator
    from elitr_core.annotation.auth import annotator_link
    from elitr_core.data.database import open_database, writing
    from elitr_core.errors import UserError

    with writing(open_database(args.db)) as session:
        if args.study:
            token, pool = add_study_annotator(session, args.name, args.study)
            if args.pool and args.pool != pool:
                raise UserError(f"study {args.study} is a {pool} study: leave out --pool or "
                                f"give --pool {pool}")
        elif args.pool:
            token, pool = add_annotator(session, args.name, args.pool), args.pool
        else:
            raise UserError("give --study NAME (the study the link opens) or --pool gold|silver")
    opens = f"study {args.study}" if args.study else f"the open {pool} study"
    print(f"annotator {args.name} ({pool} pool) created; personal link to {opens} (shown "
          "once, keep it private):")
    print(annotator_link(token, args.base_url, args.study))
    return 0


def _several(values: list[str] | None) -> tuple[str, ...] | None:
    return tuple(values) if values else None


def cmd_study_create(args: argparse.Namespace) -> int:
    from elitr_core.annotation.studies import StudySpec, create_study, prolific_url
    from elitr_core.data.database import open_database, writing

    spec = StudySpec(
        name=args.name, pool=args.pool, per_item=args.per_item, split=args.split,
        setting=args.setting, mode=args.mode, models=_several(args.models),
        meetings=_several(args.meetings),
        assignment=args.assignment, batch=args.batch, seed=args.seed,
        prolific_code=args.prolific_code, prolific_study_id=args.prolific_study_id,
        attention_rate=args.attention_rate, max_concurrent=args.max_concurrent,
        sample=args.sample, selection=args.selection, judge=args.judge,
        lease_minutes=args.lease_minutes, join_limit=args.join_limit,
        join_window_minutes=args.join_window_minutes, stop_when=tuple(args.stop_when or ()))
    with writing(open_database(args.db)) as session:
        summary = create_study(session, spec)
    print(f"study {summary['study']} created: {summary['items']} items in {summary['units']} "
          f"unit(s), {summary['per_item']} annotator(s) per item; scores go to evaluator "
          f"{summary['evaluator']}")
    if spec.stop_when:
        print("it admits nobody new once every model's 95% confidence sequence meets: "
              + "; ".join(spec.stop_when) + " (export study-monitor --human "
              + f"{summary['evaluator']} shows where they stand)")
    if spec.pool == "silver":
        print(f"Prolific URL: {prolific_url(spec.name)}")
    else:  # a gold study takes personal links only (Prolific joins are refused)
        print(f"gold study: no Prolific URL (gold studies take personal links only); give "
              f"each expert one with `annotator add --name NAME --study {spec.name}`")
    return 0


def cmd_study_status(args: argparse.Namespace) -> int:
    from elitr_core.annotation.admin import study_status
    from elitr_core.data.database import open_database, reading

    with reading(open_database(args.db, write=False)) as session:
        status = study_status(session, args.name)
    for key, value in status.summary.items():
        print(f"{key}: {value}")
    print("\nprogress per annotator:")
    print(status.progress.to_string(index=False) if len(status.progress) else "  (nobody yet)")
    print("\nunits short of annotators:")
    print(status.short.to_string(index=False) if len(status.short) else "  (none)")
    return 0


def cmd_study_close(args: argparse.Namespace) -> int:
    from elitr_core.annotation.admin import close_study
    from elitr_core.data.database import open_database, writing

    with writing(open_database(args.db)) as session:
        n = close_study(session, args.name)
    print(f"study {args.name} closed; {n} aggregate score(s) stored")
    return 0


def cmd_study_exclude(args: argparse.Namespace) -> int:
    from elitr_core.annotation.quality import exclude_annotator, exclusion_report
    from elitr_core.data.database import open_database, writing

    with writing(open_database(args.db)) as session:
        n = exclude_annotator(session, args.name, args.annotator, args.reason)
        print(exclusion_report(session, args.name, args.annotator, n))
    return 0


def cmd_password_hash(_args: argparse.Namespace) -> int:
    from elitr_core.annotation.auth import PASSWORD_HASH_ENV, hash_password

    password = (sys.stdin.readline().rstrip("\n") if not sys.stdin.isatty()
                else getpass.getpass("researcher password: "))
    print(f"{PASSWORD_HASH_ENV}='{hash_password(password)}'")
    return 0


def _study_create_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("create", help="create a study",
                       description="Pick responses, cut them into task units and open the study.")
    p.add_argument("--name", required=True)
    p.add_argument("--pool", choices=["gold", "silver"], required=True)
    p.add_argument("--per-item", type=int, required=True, metavar="K",
                   help="annotators per item")
    p.add_argument("--split", choices=SPLITS)
    p.add_argument("--setting", choices=SETTINGS)
    p.add_argument("--mode", choices=MODES)
    p.add_argument("--model", "--models", dest="models", action=ListOption, whole=["--model"],
                   metavar="NAME", help=f"only these models (repeat --model, {WHOLE}; the "
                   "older --models A,B takes a comma list)")
    p.add_argument("--meeting", "--meetings", dest="meetings", action=ListOption, metavar="ID",
                   help=f"only these meetings ({SEVERAL})")
    p.add_argument("--assignment", choices=["meeting", "random"], default="meeting",
                   help="one meeting per annotator (the paper's task) or random batches")
    p.add_argument("--batch", type=int, metavar="N", help="items per random batch")
    p.add_argument("--seed", type=int, default=0, help="seed of batches and item order")
    p.add_argument("--prolific-code", metavar="CODE", help="Prolific completion code")
    p.add_argument("--prolific-study-id", metavar="ID",
                   help="Prolific STUDY_ID links must carry (default: any)")
    p.add_argument("--attention-rate", type=float, default=ATTENTION_RATE_DEFAULT,
                   metavar="R", help="attention-check rate: checks per item, 0..0.5 (default "
                   f"{ATTENTION_RATE_DEFAULT:g}; 0.1 is one check per ten items)")
    p.add_argument("--max-concurrent", type=int, metavar="N",
                   help="cap on participants working at the same time")
    p.add_argument("--lease-minutes", type=int, metavar="M",
                   help="a participant without an answer for M minutes loses their task to "
                        "the next arrival, answers kept and marked lapsed (default: 60 for "
                        "silver, none for gold; 0 = never)")
    p.add_argument("--join-limit", type=int, metavar="N",
                   help="at most N new participants per client address per window (default: "
                        "3 for silver, none for gold; 0 = no limit)")
    p.add_argument("--join-window-minutes", type=int, default=60, metavar="M",
                   help="the join limit's window (default 60)")
    p.add_argument("--sample", type=int, metavar="N",
                   help="draw about N of the matching responses instead of all (each with a "
                        "stored probability; see export ppi-active)")
    p.add_argument("--selection", choices=["uniform", "active"], default="uniform",
                   help="with --sample: uniform, or active (favours responses the judge is "
                        "unsure about: mid-scale scores, or samples that spread)")
    p.add_argument("--judge", default="gpt-4", metavar="SLUG",
                   help="with --selection active: the judge whose uncertainty counts; with a "
                        "bias or ppi --stop-when: the judge they compare with")
    p.add_argument("--stop-when", action=ListOption, metavar="RULE",
                   help="stop admitting new participants once every model's 95%% confidence "
                        "sequence is this narrow: \"half-width <= 0.5\" (human mean), \"bias "
                        "half-width <= 0.5\" or \"ppi half-width <= 0.5\" (several rules: "
                        f"{SEVERAL}; needs --assignment random; see export study-monitor)")
    db_option(p)
    p.set_defaults(handler=cmd_study_create)


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``annotator``, ``study`` and ``password-hash`` to the CLI."""
    p = subparsers.add_parser("annotator", help="manage annotators (add)")
    sub = p.add_subparsers(dest="annotator_command", required=True, metavar="ACTION")
    a = sub.add_parser("add", help="create an annotator and print their personal link")
    a.add_argument("--name", required=True)
    a.add_argument("--study", metavar="NAME",
                   help="the study the link opens (the annotator joins its pool)")
    a.add_argument("--pool", choices=["gold", "silver"],
                   help="the annotator's pool (without --study: the link opens an open "
                        "study of this pool)")
    a.add_argument("--base-url", default="", metavar="URL",
                   help="prefix of the printed link, e.g. https://elitr.example.org")
    db_option(a)
    a.set_defaults(handler=cmd_annotator_add)

    p = subparsers.add_parser("study", help="human scoring studies (create, status, close, "
                                            "exclude)")
    sub = p.add_subparsers(dest="study_command", required=True, metavar="ACTION")
    _study_create_parser(sub)
    for action, handler, text in (("status", cmd_study_status, "progress and short units"),
                                  ("close", cmd_study_close, "close and store the aggregate")):
        s = sub.add_parser(action, help=text)
        s.add_argument("name", metavar="NAME")
        db_option(s)
        s.set_defaults(handler=handler)
    s = sub.add_parser("exclude", help="exclude an annotator (scores kept, task re-opened)")
    s.add_argument("name", metavar="NAME")
    s.add_argument("--annotator", required=True)
    s.add_argument("--reason", default="excluded by the researcher")
    db_option(s)
    s.set_defaults(handler=cmd_study_exclude)

    p = subparsers.add_parser("password-hash",
                              help="hash a researcher password for ELITR_ADMIN_PASSWORD_HASH")
    p.set_defaults(handler=cmd_password_hash)
