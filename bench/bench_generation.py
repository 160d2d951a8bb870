"""Benchmark: QA-st generation through the real run code path vs the reference approach.

One run of the script builds a temporary SQLite database with the bundled ELITR-Bench data
(what ``python -m elitr_core init`` does), stores synthetic transcripts on the first meetings
of a split, then answers their real questions (QA, single-turn, greedy) twice with the same
weights:

- reference: the ELITR-Bench scripts' way: per question, the full prompt
  (:func:`elitr_core.prompts.assembly.single_turn_messages` rendered with the tokenizer's chat
  template) through plain ``model.generate()``, batch 1;
- ours: :func:`elitr_core.generation.runs.generate_run` with the ``hf`` backend (the transcript's
  token prefix prefilled once per meeting, questions batched, every answer written to the database).

It prints, for both, questions answered, prefill tokens computed, new tokens, wall time and the
speed-up, and how many greedy answers are identical (all of them in float32; in bfloat16 the
batched and unbatched kernels round differently, so a random model's near-tied logits can
diverge). Figures are printed, never asserted. Presets::

    python bench/bench_generation.py --threads 1 --out bench/results/generation-cpu-DATE.md
    python bench/bench_generation.py --preset gpu-8b --out bench/results/generation-gpu-DATE.md

``cpu-tiny``: a random Llama (4 layers, hidden 256) and a locally trained tokenizer, 2 meetings
(28 questions), ~2.5k-token transcripts, 32 new tokens. ``gpu-8b``: a Llama-3.1-8B-architecture
model with random bf16 weights created on CUDA (no download), written with ``save_pretrained``
to a scratch directory (~16 GB, ``--scratch``) so that the backend's real ``from_pretrained``
path loads it; the 8 test2 meetings (130 questions), ~12.5k-token transcripts, 150 new tokens,
SDPA. The reference is timed on ``--reference-questions`` questions and extrapolated.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from sqlmodel import col, select

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.generation_floor import MeetingShape  # noqa: E402
from bench.generation_floor import render as render_floor  # noqa: E402
from db.models import Meeting, Response  # noqa: E402
from db.transaction import writing  # noqa: E402
from elitr_core.backends import lse_attention, shared_prefix  # noqa: E402
from elitr_core.backends.base import DecodingConfig, complete  # noqa: E402
from elitr_core.backends.hf_memory import TokenBytes  # noqa: E402
from elitr_core.backends.registry import get_backend  # noqa: E402
from elitr_core.data.database import open_database  # noqa: E402
from elitr_core.data.importers import import_bundled  # noqa: E402
from elitr_core.data.model_text import as_generated  # noqa: E402
from elitr_core.generation.runs import GenerationSpec, generate_run  # noqa: E402
from elitr_core.generation.spec import MeetingWork, load_work  # noqa: E402
from elitr_core.passes.records import library_versions  # noqa: E402
from elitr_core.prompts.assembly import single_turn_messages  # noqa: E402
from tests.elitr_core.backends.tiny_model import (  # noqa: E402
    build_tiny_llama,
    build_tokenizer,
    synthetic_transcript,
)

PRESETS: dict[str, dict[str, Any]] = {
    "cpu-tiny": {"device": "cpu", "meetings": 2, "transcript_tokens": 2500,
                 "max_new_tokens": 32, "batch_size": 64, "reference_questions": 0},
    "gpu-8b": {"device": "cuda", "meetings": 8, "transcript_tokens": 12500,
               "max_new_tokens": 150, "batch_size": 130, "reference_questions": 16},
}
#: Llama-3.1-8B's architecture (rope scaling left out: it does not change the work done).
LLAMA_31_8B: dict[str, Any] = {
    "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
    "rope_theta": 500000.0, "max_position_embeddings": 131072,
}


@dataclass
class Answer:
    text: str
    new_tokens: int


@dataclass
class Row:
    label: str
    questions: int
    prefill: int | None  # None: the approach does not report it
    new_tokens: int
    seconds: float
    note: str = ""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu-tiny")
    parser.add_argument("--split", default="test2", choices=["dev", "test2"])
    parser.add_argument("--meetings", type=int, help="first N meetings of the split")
    parser.add_argument("--transcript-tokens", type=int, help="synthetic transcript length")
    parser.add_argument("--max-new-tokens", type=int)
    parser.add_argument("--batch-size", type=int, help="questions decoded together (ours)")
    parser.add_argument("--reference-questions", type=int,
                        help="time the reference on the first N questions and extrapolate "
                             "(0: all of them)")
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's)")
    parser.add_argument("--scratch", help="directory for the model and database (default: tmp)")
    parser.add_argument("--out", type=Path, help="also write the table as markdown here")
    parser.add_argument("--library", action="store_true",
                        help="also time transformers' continuous batching (generate_batch with "
                             "prefix block sharing) on the same prompts")
    parser.add_argument("--fused-too", action="store_true",
                        help="also run ours with the prefixes attended by compiled "
                             "flex_attention (shared_prefix.FUSED, off by default), to price "
                             "the kernel side by side with the math path")
    parser.add_argument("--analytic-only", action="store_true",
                        help="print only the analytic H100 floor (no model run)")
    args = parser.parse_args()
    for key, value in PRESETS[args.preset].items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    return args


def build_llama_8b(path: Path, device: str = "cuda") -> Path:
    """Write a random bf16 Llama-3.1-8B-architecture model and the tiny tokenizer to ``path``.

    The weights are created directly on CUDA in bfloat16 (16 GB, never a float32 copy). The
    output rows of ids the tokenizer lacks, and of ``</s>``, are zeroed: greedy argmax then
    lands on decodable tokens and answers run to ``max_new_tokens`` (equal work on both
    paths); the output matrix keeps its full 128k width, so the compute is unchanged.
    """
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    tokenizer: Any = build_tokenizer()
    config = LlamaConfig(**LLAMA_31_8B, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=False)
    assert config.vocab_size >= len(tokenizer)
    torch.manual_seed(0)
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device(device):
            model = LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(default)
    with torch.no_grad():
        model.lm_head.weight[len(tokenizer):] = 0
        model.lm_head.weight[config.eos_token_id] = 0
    model.generation_config = GenerationConfig(bos_token_id=config.bos_token_id,
                                               eos_token_id=config.eos_token_id,
                                               pad_token_id=config.pad_token_id)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    del model
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return path


def prepare_database(url: str, args: argparse.Namespace, tokenizer: Any) -> tuple[str, ...]:
    """Bundled data + synthetic transcripts of ~``transcript_tokens`` on the first meetings."""
    engine = open_database(url)
    sample = synthetic_transcript(200, seed=99)
    per_line = len(tokenizer(sample, add_special_tokens=False).input_ids) / 200
    lines = max(1, round(args.transcript_tokens / per_line))
    with writing(engine) as session:
        import_bundled(session)
        stmt = select(Meeting).where(Meeting.split == args.split).order_by(
            col(Meeting.external_id))
        meetings = list(session.exec(stmt))[: args.meetings]
        for index, meeting in enumerate(meetings):
            meeting.transcript = synthetic_transcript(lines, seed=index)
            session.add(meeting)
        return tuple(m.external_id for m in meetings)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def reference(backend: Any, work: list[MeetingWork], max_new: int,
              limit: int) -> tuple[dict[int, Answer], int, float]:
    """Per question: full prompt, batch 1, plain ``model.generate()`` (the reference scripts).

    Returns the answers of the first ``limit`` questions (0: all), the prefill tokens of
    every question's prompt, and the seconds the timed questions took.
    """
    tokenizer, model = backend.tokenizer, backend.model
    eos = model.generation_config.eos_token_id
    eos_ids = {eos} if isinstance(eos, int) else set(eos or [tokenizer.eos_token_id])
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(eos_ids)
    items, prompts = [], []
    for meeting in work:
        for question in meeting.questions:
            text = tokenizer.apply_chat_template(
                single_turn_messages(meeting.transcript, question.text), tokenize=False,
                add_generation_prompt=True)
            items.append(question.question_id)
            prompts.append(tokenizer(text, add_special_tokens=False).input_ids)
    answers: dict[int, Answer] = {}
    sync(backend.device)
    start = time.perf_counter()
    with torch.inference_mode():
        for qid, ids in list(zip(items, prompts, strict=True))[: limit or None]:
            inputs = torch.tensor([ids], device=backend.device)
            output = model.generate(inputs, attention_mask=torch.ones_like(inputs),
                                    do_sample=False, max_new_tokens=max_new, pad_token_id=pad)
            new = output[0, inputs.shape[1]:].tolist()
            kept = new[:-1] if new and new[-1] in eos_ids else new
            answers[qid] = Answer(tokenizer.decode(kept, skip_special_tokens=True).strip(),
                                  len(new))
    sync(backend.device)
    return answers, sum(len(p) for p in prompts), time.perf_counter() - start


def ours(url: str, spec: GenerationSpec, backend: Any,
         work: list[MeetingWork]) -> tuple[dict[int, Answer], int, float]:
    """``generate_run`` (QA-st) with the hf backend; prefill tokens from the stored usage.

    Per meeting: the shared prefix once (``cached_tokens``) plus every question's suffix
    (``prompt_tokens - cached_tokens``).
    """
    engine = open_database(url)
    sync(backend.device)
    start = time.perf_counter()
    report = generate_run(engine, spec, backend)
    sync(backend.device)
    seconds = time.perf_counter() - start
    with writing(engine) as session:
        stmt = select(Response.question_id, Response.text, Response.meta).where(
            Response.run_id == report.run_id)
        stored = {qid: (text, meta) for qid, text, meta in session.exec(stmt)}
    prefill = 0
    for meeting in work:
        metas = [stored[q.question_id][1] for q in meeting.questions]
        prefill += max(m["cached_tokens"] or 0 for m in metas)
        prefill += sum(m["prompt_tokens"] - (m["cached_tokens"] or 0) for m in metas)
    # The answer as the engine decoded it (the storage policy may have altered the stored text:
    # a random model writes control characters).
    answers = {qid: Answer(as_generated(text, meta), meta["completion_tokens"])
               for qid, (text, meta) in stored.items()}
    return answers, prefill, seconds


def machine(device: torch.device) -> str:
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} (CUDA {torch.version.cuda})"
    name = platform.processor() or "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    load = os.getloadavg()[0]  # a shared machine: other jobs slow the timings down
    return (f"{name}, {os.cpu_count()} cores visible, {torch.get_num_threads()} torch threads, "
            f"load average {load:.2f} at the end")


def render(rows: list[Row], same: dict[str, int], compared: int, header: list[str]) -> str:
    """The results as markdown: header lines, the table, the agreement line."""
    base = rows[0].seconds
    lines = [*header, "", "| approach | questions | prefill tokens | new tokens | wall s | "
             "speed-up |", "|---|---:|---:|---:|---:|---:|"]
    for row in rows:
        prefill = "n/a" if row.prefill is None else f"{row.prefill:,}"
        lines.append(f"| {row.label}{row.note} | {row.questions} | {prefill} | "
                     f"{row.new_tokens:,} | {row.seconds:.2f} | {base / row.seconds:.1f}x |")
    agree = ", ".join(f"{name} {count}/{compared}" for name, count in same.items())
    ratio = (rows[0].prefill or 0) / (rows[1].prefill or 1)
    lines += ["", f"Prefill tokens, reference / ours: {ratio:.1f}x. "
              f"Greedy answers identical to the reference: {agree}."]
    return "\n".join(lines)


def prompts_of(tokenizer: Any, meeting: MeetingWork) -> list[list[int]]:
    """Every question's templated prompt ids (what every approach feeds the model)."""
    texts = [tokenizer.apply_chat_template(single_turn_messages(meeting.transcript, q.text),
                                           tokenize=False, add_generation_prompt=True)
             for q in meeting.questions]
    return [tokenizer(text, add_special_tokens=False).input_ids for text in texts]


def shapes(tokenizer: Any, work: list[MeetingWork]) -> list[MeetingShape]:
    """Each meeting's shared token prefix and its questions' suffix lengths."""
    out = []
    for meeting in work:
        prompts = prompts_of(tokenizer, meeting)
        shared = min(len(os.path.commonprefix(prompts)), min(map(len, prompts)) - 1)
        out.append(MeetingShape(shared, tuple(len(p) - shared for p in prompts)))
    return out


def one_meeting_kv(backend: Any, meeting: MeetingWork, max_new: int) -> dict[str, int]:
    """Peak KV bytes held for one meeting's questions decoded as one batch, three ways.

    Ours is measured (the engine's buffers); the former per-row copies (every row a copy of
    prompt + answer) and the reference (one question at a time) from the same shapes.
    """
    backend.peak_kv_bytes, backend.batch_size = 0, len(meeting.questions)
    complete(backend, [single_turn_messages(meeting.transcript, q.text)
                       for q in meeting.questions], DecodingConfig(max_new_tokens=max_new))
    longest = max(map(len, prompts_of(backend.tokenizer, meeting)))
    per_token = TokenBytes.of(backend.model.config, backend.dtype).kv
    return {"ours": backend.peak_kv_bytes,
            "copies": len(meeting.questions) * (longest + max_new) * per_token,
            "reference": (longest + max_new) * per_token}


def library(model: Any, tokenizer: Any, work: list[MeetingWork],
            max_new: int) -> tuple[dict[int, Answer], float]:
    """transformers' continuous batching on the same prompts: paged cache, prefix sharing."""
    from transformers import ContinuousBatchingConfig, GenerationConfig

    ids = [q.question_id for m in work for q in m.questions]
    prompts = [p for m in work for p in prompts_of(tokenizer, m)]
    config = GenerationConfig(do_sample=False, max_new_tokens=max_new,
                              eos_token_id=tokenizer.eos_token_id,
                              pad_token_id=tokenizer.pad_token_id)
    batching = ContinuousBatchingConfig(allow_block_sharing=True, page_size=64)
    start = time.perf_counter()
    outputs = model.generate_batch(prompts, generation_config=config,
                                   continuous_batching_config=batching)
    seconds = time.perf_counter() - start
    answers = {}
    for qid, output in zip(ids, outputs.values(), strict=True):
        new = output.generated_tokens
        kept = new[:-1] if new and new[-1] == tokenizer.eos_token_id else new
        answers[qid] = Answer(tokenizer.decode(kept, skip_special_tokens=True).strip(), len(new))
    return answers, seconds


def analytic(tokenizer: Any) -> str:
    """The H100 floor table for test2 (8 meetings, ~12.5k-token transcripts, 150 new tokens)."""
    floor_args = argparse.Namespace(split="test2", meetings=8, transcript_tokens=12500)
    with tempfile.TemporaryDirectory() as scratch:
        url = f"sqlite:///{Path(scratch) / 'floor.db'}"
        meetings = prepare_database(url, floor_args, tokenizer)
        spec = GenerationSpec(model="floor", setting="qa", mode="st", split="test2",
                              meetings=meetings, decoding=DecodingConfig(max_new_tokens=150))
        with writing(open_database(url)) as session:
            work = load_work(session, spec)
        return render_floor(shapes(tokenizer, work), 150, old_batch=8, batch=130)


def main() -> None:
    args = parse_args()
    if args.analytic_only:
        print(analytic(build_tokenizer()))
        return
    if args.threads:  # 1 thread keeps CPU timings steadier when other jobs share the cores
        torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(dir=args.scratch) as scratch:
        if args.preset == "gpu-8b":
            model_dir = build_llama_8b(Path(scratch) / "random-llama-3.1-8b")
        else:  # eos_boost=0: answers run to max_new_tokens, the same work on both paths
            model_dir = build_tiny_llama(Path(scratch) / "random-llama", num_layers=4,
                                         hidden_size=256, num_heads=8, num_kv_heads=4,
                                         max_position_embeddings=16384, eos_boost=0.0)
        backend, url, spec, work = prepared(args, model_dir, Path(scratch),
                                            f"bench-{args.preset}")
        text = measure(args, backend, url, spec, work, model_dir.name)
        text += "\n\n" + analytic(backend.tokenizer) + "\n"
        print(text)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(text, encoding="utf-8")
            print(f"written to {args.out}")
        backend.close()


def prepared(args: argparse.Namespace, model_dir: Path, scratch: Path, label: str
             ) -> tuple[Any, str, GenerationSpec, list[MeetingWork]]:
    """The hf backend on ``model_dir``, a SQLite database in ``scratch`` with the bundled data
    and synthetic transcripts, the QA-st spec (model ``label``) and its work."""
    backend: Any = get_backend("hf", model_path=str(model_dir), device=args.device,
                               attn_implementation="sdpa", batch_size=args.batch_size)
    url = f"sqlite:///{scratch / 'bench.db'}"
    meetings = prepare_database(url, args, backend.tokenizer)
    spec = GenerationSpec(model=label, setting="qa", mode="st", split=args.split,
                          meetings=meetings,
                          decoding=DecodingConfig(max_new_tokens=args.max_new_tokens))
    with writing(open_database(url)) as session:
        work = load_work(session, spec)
    return backend, url, spec, work


def measure(args: argparse.Namespace, backend: Any, url: str, spec: GenerationSpec,
            work: list[MeetingWork], model_name: str) -> str:
    """Time the reference, ours (and the library) side by side; the markdown report."""
    total = sum(len(m.questions) for m in work)
    warm = single_turn_messages("(PERSON1) hello", "Who?")
    complete(backend, [warm, warm], DecodingConfig(max_new_tokens=2))  # kernels, allocator
    reference(backend, work[:1], 2, 1)
    print(f"{len(work)} meetings x {total} questions; ours first, then the reference ...")
    mine, prefill, seconds = ours(url, spec, backend, work)
    fused_row = None
    if args.fused_too:  # the same work with the prefixes attended by the compiled kernel
        print("ours again, compiled flex_attention for the prefixes ...", flush=True)
        shared_prefix.FUSED = True
        try:
            fused_spec = dataclasses.replace(spec, model=f"{spec.model}-fused")
            fused, fused_prefill, fused_seconds = ours(url, fused_spec, backend, work)
        finally:
            shared_prefix.FUSED = False
        fused_row = Row(f"ours, prefixes through {fused_state()}", len(fused), fused_prefill,
                        sum(a.new_tokens for a in fused.values()), fused_seconds)
    limit = args.reference_questions if 0 < args.reference_questions < total else 0
    ref, ref_prefill, ref_seconds = reference(backend, work, args.max_new_tokens, limit)
    scale = total / len(ref)
    note = f" (timed on {len(ref)} of {total}, x{scale:.2f})" if limit else ""
    rows = [Row("reference: full prompt, batch 1, generate()", total, ref_prefill,
                round(sum(a.new_tokens for a in ref.values()) * scale),
                ref_seconds * scale, note),
            Row(f"ours: generate_run, hf shared prefix, batch {args.batch_size}", len(mine),
                prefill, sum(a.new_tokens for a in mine.values()), seconds)]
    same = {"ours": sum(ref[qid].text == mine[qid].text for qid in ref)}
    if fused_row is not None:
        rows.append(fused_row)
        same["ours, fused"] = sum(ref[qid].text == fused[qid].text for qid in ref)
    kv = one_meeting_kv(backend, work[0], args.max_new_tokens)
    lines = [*header_lines(args, backend, work, model_name, len(ref) if limit else 0), ""]
    questions = len(work[0].questions)
    kv_line = (f"Peak KV cache held for one meeting's {questions} questions as one batch: "
               f"ours {kv['ours'] / 1e6:.1f} MB (measured), former per-row copies "
               f"{kv['copies'] / 1e6:.1f} MB, reference (one question at a time) "
               f"{kv['reference'] / 1e6:.1f} MB.")
    if args.library:
        # The library runs last: its table so far is written first, so that a library run
        # cut off by a time limit (it can be slow) leaves the other figures behind.
        partial = render(rows, same, len(ref), lines) + "\n\n" + kv_line
        print(partial, flush=True)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(partial + "\n", encoding="utf-8")
        print("transformers continuous batching ...", flush=True)
        lib, lib_seconds = library(backend.model, backend.tokenizer, work, args.max_new_tokens)
        rows.append(Row("transformers continuous batching (generate_batch, block sharing)",
                        len(lib), None, sum(a.new_tokens for a in lib.values()), lib_seconds))
        same["library"] = sum(ref[qid].text == lib[qid].text for qid in ref)
    return render(rows, same, len(ref), lines) + "\n\n" + kv_line


def fused_state() -> str:
    """What the last run with ``shared_prefix.FUSED`` on attended the prefixes with: the
    compiled kernel, or the math path after it failed (the engine falls back with a warning)."""
    state = lse_attention._FLEX
    if state is False:
        return "the math path (compiled flex_attention failed; see the log)"
    if state is None:
        return "the math path (no fused kernel on this device)"
    return "compiled flex_attention"


def header_lines(args: argparse.Namespace, backend: Any, work: list[MeetingWork],
                 model_name: str, timed: int) -> list[str]:
    """Date, machine, load, versions, model and work of a run."""
    total = sum(len(m.questions) for m in work)
    info = backend.describe()
    lengths = [len(p) for m in work for p in prompts_of(backend.tokenizer, m)]
    versions = library_versions()
    lines = [
        f"# Generation benchmark, preset {args.preset}", "",
        f"- date: {dt.date.today().isoformat()}",
        f"- machine: {machine(backend.device)}",
        f"- uptime at the end: {os.popen('uptime').read().strip()}",
        "- versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()
                                   if k in ("python", "torch", "transformers", "elitr_core")),
        f"- model: {model_name} ({sum(p.numel() for p in backend.model.parameters()):,}"
        f" random parameters), {info['dtype']}, {info['attn_implementation']} attention",
        f"- work: QA-st, {args.split}, {len(work)} meetings, {total} real questions, "
        f"synthetic transcripts, prompts of {min(lengths):,}-{max(lengths):,} tokens, "
        f"greedy, at most {args.max_new_tokens} new tokens",
        "- ours includes writing every answer to the SQLite database (generate_run)",
    ]
    if timed:
        lines.append(f"- reference timed on its first {timed} questions and extrapolated to "
                     f"{total} (wall time and new tokens); its prefill tokens are exact")
    return lines


if __name__ == "__main__":
    main()
