"""The ``generate`` and ``judge`` commands (registered by :mod:`elitr_core.cli.main`).

Imports here stay light: the runs, the backends and (for ``hf``) torch are imported only when
a command runs, so ``python -m elitr_core --help`` starts fast.
"""

from __future__ import annotations

import argparse
import logging
import sys
from functools import partial
from typing import Any

from elitr_core.cli import startup
from elitr_core.cli.backend_flags import (
    add_backend_flags,
    backend_values,
    refuse_foreign_options,
)
from elitr_core.cli.options import SEVERAL, WHOLE, ListOption, db_option
from elitr_core.errors import UserError
from elitr_core.passes.records import DEFAULT_SEED
from elitr_core.vocab import (
    INTERLEAVE_KS,
    JUDGE_STYLES,
    LANGUAGES,
    MODES,
    PAIRWISE_STYLES,
    SETTINGS,
    SPLITS,
    TASKS,
)

#: Protocol nucleus sampling (docs/protocol.md §2): used when only --temperature is given.
NUCLEUS_TOP_P = 0.9


class TqdmProgress:
    """A tqdm bar with ETA on stderr (sparser updates when stderr is a log file)."""

    def __init__(self, unit: str) -> None:
        self.unit = unit
        self.bar: Any = None

    def start(self, total: int, label: str) -> None:
        from tqdm import tqdm

        interactive = sys.stderr.isatty()
        self.bar = tqdm(total=total, desc=label, unit=self.unit, file=sys.stderr,
                        dynamic_ncols=interactive, mininterval=0.2 if interactive else 5.0,
                        ascii=not interactive)

    def advance(self, count: int = 1) -> None:
        if self.bar is not None:
            self.bar.update(count)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _common(p: argparse.ArgumentParser, *, generation: bool) -> None:
    add_backend_flags(p, generation=generation)  # as each backend declares them
    db_option(p)
    p.add_argument("--log", metavar="FILE", help="also write the run's events to FILE")


def register(sub: Any) -> None:
    """Add ``generate`` and ``judge`` to the CLI's subparsers."""
    p = sub.add_parser(
        "generate", help="generate a model's answers (resumable)",
        description="Answer every question of a split with the ELITR-Bench protocol. Each "
        "answer is stored as it arrives; running the same command again finishes the run "
        "without asking any question twice.")
    p.add_argument("--model", required=True, metavar="NAME",
                   help="model name stored with the run (and given to the backend: the "
                   "server's name for it, or a hub name)")
    p.add_argument("--setting", choices=SETTINGS, help="qa or conv (required unless --task "
                   "summary)")
    p.add_argument("--mode", choices=MODES, help="st or mt (required unless --task summary)")
    p.add_argument("--split", choices=SPLITS, required=True)
    p.add_argument("--task", choices=TASKS, default="qa",
                   help="qa: the benchmark's questions (default); summary: one summary of each "
                   "whole meeting (CREAM's setting; the request is stored with the run)")
    p.add_argument("--language", choices=LANGUAGES, default="en",
                   help="cs: English transcript, Czech questions (default en)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"default {DEFAULT_SEED}")
    p.add_argument("--meeting", "--meetings", dest="meetings", action=ListOption, metavar="ID",
                   help=f"only these meetings ({SEVERAL})")
    p.add_argument("--variant", default="", metavar="NAME",
                   help="name that tells two runs of the same model apart (other settings)")
    p.add_argument("--temperature", type=float, default=0.0,
                   help="0 = greedy (default); the protocol's nucleus sampling is 0.6")
    p.add_argument("--top-p", type=float, metavar="P",
                   help=f"nucleus top-p (default {NUCLEUS_TOP_P} when sampling, 1 when greedy)")
    p.add_argument("--repetition-penalty", type=float, default=1.0, metavar="X",
                   help="1.0 (default) or 1.1 in the protocol")
    p.add_argument("--max-new-tokens", type=int, default=512, metavar="N", help="default 512")
    p.add_argument("--qa-markers", action="store_true",
                   help="ask 'QUESTION: <question> ANSWER:'")
    p.add_argument("--length-instruction", action="store_true",
                   help="L-Eval's length instruction: answer in N words (N from the reference)")
    p.add_argument("--system-prompt", action="store_true",
                   help="answer prompt in a system message (the reference code, OpenAI models)")
    p.add_argument("--context", choices=["full", "bm25"], default="full",
                   help="full: the whole transcript (default); bm25: only the --top-k chunks "
                   "of whole utterances most relevant to the question, in transcript order "
                   "(single-turn; recorded with the run)")
    p.add_argument("--top-k", type=int, default=4, metavar="N",
                   help="bm25: chunks kept per question (default 4)")
    p.add_argument("--chunk-tokens", type=int, default=500, metavar="M",
                   help="bm25: at most M words per chunk (default 500)")
    _interleave_options(p)
    _common(p, generation=True)
    p.set_defaults(handler=cmd_generate)

    p = sub.add_parser(
        "judge", help="score stored responses with an LLM judge (resumable)",
        description="Judge stored responses with the GPT-4-style 10-point prompt or the "
        "Prometheus 5-point prompt (x2), or compare them in pairs: CREAM's key facts and "
        "alignment (--style cream) or L-Eval battles against the reference (--style battle), "
        "each pair in both orders. Unparsable judge outputs are stored unscored with "
        "their reason; running the command again asks only missing or unparsable items.")
    p.add_argument("--judge-model", required=True, metavar="NAME")
    p.add_argument("--style", choices=[*JUDGE_STYLES, *PAIRWISE_STYLES], required=True)
    p.add_argument("--evaluator", required=True, metavar="SLUG",
                   help="name of this judge's scores in the analyses (e.g. qwen-judge)")
    p.add_argument("--model", action=ListOption, whole=["--model"], metavar="NAME",
                   help=f"judge this model's responses (repeat for several; {WHOLE}; "
                   "default all)")
    p.add_argument("--split", choices=SPLITS)
    p.add_argument("--setting", choices=SETTINGS)
    p.add_argument("--mode", choices=MODES)
    p.add_argument("--language", choices=LANGUAGES)
    p.add_argument("--samples", type=int, default=1, metavar="K",
                   help="judgments per response (self-consistency; default 1)")
    p.add_argument("--seed", type=int,
                   help="seed of sample 0 (default: each judged run's seed, else 2023)")
    p.add_argument("--max-new-tokens", type=int, default=1024, metavar="N", help="default 1024")
    p.add_argument("--baseline", metavar="MODEL",
                   help="cream/battle: every model against this one (default: all pairs)")
    p.add_argument("--pairs-per-question", type=int, metavar="N",
                   help="cream/battle: N random pairs per question (default: all pairs)")
    p.add_argument("--max-key-facts", type=int, default=16, metavar="K",
                   help="cream: at most K key facts per comparison (default 16)")
    _common(p, generation=False)
    p.set_defaults(handler=cmd_judge)


def _interleave_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--interleave", type=int, choices=INTERLEAVE_KS, metavar="K",
                   help="the LTM benchmark's method: K (2 or 3) meetings' transcripts in one "
                   "conversation (grouped from --seed), their questions interleaved (mode "
                   "intK, with --mode mt or none)")
    p.add_argument("--span", type=int, default=0, metavar="TOKENS",
                   help="interleave: memory span, the tokens between a transcript and its "
                   "questions, set with filler question/answer pairs (default 0: none)")
    p.add_argument("--switch-every", type=int, default=1, metavar="N",
                   help="interleave: switch meeting every N questions (default 1)")
    p.add_argument("--name-meetings", action="store_true",
                   help="interleave: each question names its meeting (Meeting A, B, C)")
    p.add_argument("--answered-filler", action="store_true",
                   help="interleave: the model answers the fillers (blocks of sums made from "
                   "--seed, a turn each; replies checked and stored apart, never scored)")
    p.add_argument("--plan-only", action="store_true",
                   help="interleave: print the span plan (each question's target and planned "
                   "span) and stop: nothing is asked or stored")


def _interleaving(args: argparse.Namespace) -> Any:
    """The run's interleaving settings (None without --interleave)."""
    from elitr_core.generation.spec import Interleaving

    if args.interleave is None:
        if (args.span or args.switch_every != 1 or args.name_meetings or args.answered_filler
                or args.plan_only):
            raise UserError("--span, --switch-every, --name-meetings, --answered-filler and "
                            "--plan-only shape an interleaved run: add --interleave 2 or 3")
        return None
    return Interleaving(args.interleave, args.span, args.switch_every, args.name_meetings,
                        args.answered_filler)


def _setup_logging(path: str | None) -> None:
    logging.getLogger().setLevel(logging.INFO)
    if path:
        handler = logging.FileHandler(path, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logging.getLogger().addHandler(handler)
    if not any(isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
               for h in logging.getLogger().handlers):
        stderr = logging.StreamHandler(sys.stderr)
        stderr.setLevel(logging.WARNING)  # retries and failures; progress is the bar
        logging.getLogger().addHandler(stderr)


def _backend(args: argparse.Namespace, model: str) -> Any:
    """The command's backend: every backend gets the same options and takes its own."""
    from elitr_core.backends.registry import get_backend

    return get_backend(args.backend, model=model, **backend_values(args))


def _close(backend: Any, log: str | None) -> None:
    backend.close()
    if log:
        for handler in list(logging.getLogger().handlers):
            if isinstance(handler, logging.FileHandler):
                handler.close()
                logging.getLogger().removeHandler(handler)


def cmd_generate(args: argparse.Namespace) -> int:
    """Run or resume one generation run; print a summary."""
    from elitr_core.backends.base import DecodingConfig
    from elitr_core.generation.runs import GenerationSpec, generate_run

    refuse_foreign_options(args)
    top_p = args.top_p if args.top_p is not None else (
        NUCLEUS_TOP_P if args.temperature > 0 else 1.0)
    decoding = DecodingConfig(temperature=args.temperature, top_p=top_p,
                              repetition_penalty=args.repetition_penalty,
                              max_new_tokens=args.max_new_tokens)
    meetings = tuple(args.meetings or ())
    setting, mode = args.setting, args.mode
    if args.task == "summary":
        if setting is not None or mode not in (None, "st"):
            raise UserError("--task summary takes no --setting and only --mode st: one summary "
                            "per meeting, asked alone")
        setting, mode = "summary", "st"
    elif args.interleave is not None and mode is None:
        mode = "mt"
    if setting is None or mode is None:
        raise UserError("generate needs --setting qa|conv and --mode st|mt (or --task summary)")
    spec = GenerationSpec(
        model=args.model, setting=setting, mode=mode, split=args.split, task=args.task,
        seed=args.seed, language=args.language, variant=args.variant, meetings=meetings,
        decoding=decoding, chat_template=getattr(args, "use_chat_template", None) is not False,
        system_prompt=args.system_prompt, qa_markers=args.qa_markers,
        length_instruction=args.length_instruction,
        truncation=getattr(args, "truncation", None),
        context=args.context, top_k=args.top_k, chunk_tokens=args.chunk_tokens,
        interleave=_interleaving(args),
    ).checked()
    if args.plan_only:
        return _plan_only(args, spec)
    run = generate_run if spec.interleave is None else partial(
        generate_run, on_plan=partial(_print_plan, spec.interleave.span))
    return _run_pass(args, args.model, run, spec, "answer")


def _print_plan(target: int, asked: Any, unit: str) -> None:
    from elitr_core.generation.span_plan import plan_lines

    print("\n".join(plan_lines(asked, target, unit)), flush=True)


def _plan_only(args: argparse.Namespace, spec: Any) -> int:
    """Print an interleaved run's span plan; nothing is asked or stored."""
    from elitr_core.data.database import open_database
    from elitr_core.generation.span_plan import span_plan

    engine = open_database(args.db)
    backend = _backend(args, args.model)
    try:
        asked = span_plan(engine, spec, backend)
        _print_plan(spec.interleave.span, asked, backend.token_unit)
    finally:
        _close(backend, args.log)
    return 0


def _run_pass(args: argparse.Namespace, model: str, run: Any, spec: Any, unit: str) -> int:
    """Run ``run(engine, spec, backend, progress=...)`` (a generation run or a judge pass)
    with the command's backend for ``model``; print its summary and its altered line."""
    from elitr_core.data.database import open_database

    _setup_logging(args.log)
    engine = open_database(args.db)
    backend = _backend(args, model)
    startup.started()
    try:
        report = run(engine, spec, backend, progress=TqdmProgress(unit))
    finally:
        _close(backend, args.log)
    for line in (report.summary(), *report.notes(), report.altered_line()):
        if line:
            print(line)
    return 0


def cmd_judge(args: argparse.Namespace) -> int:
    """Run one judge pass (absolute, or pairwise for cream/battle); print a summary."""
    spec: Any
    run: Any
    if args.style in PAIRWISE_STYLES:
        from elitr_core.judging.pairs import PairwiseSpec
        from elitr_core.judging.pairwise_runner import pairwise_judge_run

        spec = PairwiseSpec(
            judge_model=args.judge_model, style=args.style, evaluator=args.evaluator,
            models=tuple(args.model or ()), baseline=args.baseline,
            pairs_per_question=args.pairs_per_question, split=args.split, setting=args.setting,
            mode=args.mode, language=args.language, samples=args.samples, seed=args.seed,
            max_key_facts=args.max_key_facts, max_new_tokens=args.max_new_tokens)
        run, unit = pairwise_judge_run, "call"
    else:
        from elitr_core.judging.runner import JudgeSpec, judge_run

        if args.baseline or args.pairs_per_question is not None:
            raise UserError("--baseline and --pairs-per-question apply to --style cream or "
                            "battle")
        spec = JudgeSpec(
            judge_model=args.judge_model, style=args.style, evaluator=args.evaluator,
            models=tuple(args.model or ()), split=args.split, setting=args.setting,
            mode=args.mode, language=args.language, samples=args.samples, seed=args.seed,
            max_new_tokens=args.max_new_tokens)
        run, unit = judge_run, "judgment"
    spec.check()  # before the backend loads
    refuse_foreign_options(args)
    return _run_pass(args, args.judge_model, run, spec, unit)
