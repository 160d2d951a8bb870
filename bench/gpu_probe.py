"""Where the hf engine's time goes on a GPU, the math path against compiled flex_attention.

A diagnostic for the device machine (bench/gpu_run.sh's bench stalled in the compiled path):
a Llama-3.1-8B-shaped model cut to LAYERS layers, the gpu-8b preset's 8 meetings and 130
questions, ``generate_run`` timed with the prefixes attended by the math path, then by the
compiled kernel; Python's stacks are dumped every 20 s to $OUT/stacks.log and dynamo's
recompilations are logged (TORCH_LOGS=recompiles). Usage: python3 bench/gpu_probe.py LAYERS
"""

from __future__ import annotations

import dataclasses
import faulthandler
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench.bench_generation as bg  # noqa: E402

out = Path(os.environ.get("OUT", "/tmp/out"))
out.mkdir(parents=True, exist_ok=True)
stacks = (out / "stacks.log").open("w")
faulthandler.dump_traceback_later(20, repeat=True, file=stacks)
layers = int(sys.argv[1])
bg.LLAMA_31_8B["num_hidden_layers"] = layers
device = os.environ.get("PROBE_DEVICE", "cuda")  # cpu: a smoke test of this script
sys.argv = [sys.argv[0], "--preset", "gpu-8b", *os.environ.get("PROBE_ARGS", "").split()]
args = bg.parse_args()


def stamp(what: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {what}", flush=True)
    print(f"=== {time.strftime('%H:%M:%S')} {what}", file=stacks, flush=True)


with tempfile.TemporaryDirectory(dir="/tmp") as scratch:
    stamp("building")
    model_dir = bg.build_llama_8b(Path(scratch) / "random-llama", device)
    args.device = device
    backend, url, spec, work = bg.prepared(args, model_dir, Path(scratch), "probe")
    stamp(f"{layers} layers, {sum(len(m.questions) for m in work)} questions")
    for label, fused in (("math", False), ("fused", True), ("fused-again", True)):
        bg.shared_prefix.FUSED = fused
        stamp(f"{label} starts")
        answers, prefill, seconds = bg.ours(url, dataclasses.replace(spec, model=label),
                                            backend, work)
        import torch._dynamo.utils as du
        stamp(f"{label}: {seconds:.2f} s, {len(answers)} answers, kernel state "
              f"{bg.fused_state()}, dynamo counters {dict(du.counters['stats'])}")
    backend.close()
