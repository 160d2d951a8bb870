"""Running the real inspect_ai on the shipped ELITR-Bench task with inspect's mockllm model.

The mock's answers name the last user turn, so each answer says which question it answers; a
judge prompt gets a gpt-4 style verdict whose score depends on the answer. Every output carries
its token usage: without it mockllm counts tokens with a tiktoken file it would download.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from tests.elitr_core.run_helpers import MEETINGS, set_transcripts

MODEL = "mockllm/model"
TASK_FILE = Path(__file__).resolve().parents[3] / "elitr_core" / "integrations" / "inspect_task.py"


def reply(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> Any:
    """A deterministic answer to any conversation (see the module's docstring)."""
    from inspect_ai.model import ModelOutput, ModelUsage

    last = messages[-1].text
    if last.startswith("### Task description"):  # the benchmark's judge prompt
        digits = re.findall(r"turn (\d+)", last)
        text = f"Fair answer. Rating: \\boxed{{{int(digits[-1]) % 10 + 1 if digits else 5}}}"
    else:
        question = last.strip().splitlines()[-1][:60]
        text = f"Answer at turn {len(messages) // 2 + 1}: {question}\x00 end"
    output = ModelOutput.from_content(model=MODEL, content=text)
    output.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    return output


def run_task(url: str, log_dir: Path, *, mode: str, judge: str | None = "gpt4",
             grader: str | None = None, **task_args: Any) -> Path:
    """The log of one real ``inspect_ai.eval`` of the shipped task on the two test2 meetings
    (its judge graded by the mock model ``grader`` in inspect's grader role, if given)."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    # the task file by its path, loaded by inspect's own loader as `inspect eval FILE` does
    args = {"split": "test2", "setting": "qa", "mode": mode, "meetings": ",".join(MEETINGS),
            "db": url, "judge": judge, **task_args}
    # (inspect's loader takes a path relative to the working folder, as typed on its CLI)
    roles = {"grader": get_model(grader, custom_outputs=reply, memoize=False)} if grader \
        else None
    logs = inspect_eval(os.path.relpath(TASK_FILE), task_args=args,
                        model=get_model(MODEL, custom_outputs=reply, memoize=False),
                        model_roles=roles, log_dir=str(log_dir), display="none")
    assert logs[0].status == "success", logs[0].error
    return Path(str(logs[0].location).removeprefix("file://"))


def build_logs(template: Path, folder: Path) -> dict[str, Path]:
    """A single-turn and a multi-turn log, from a copy of the bundled database with
    synthetic transcripts."""
    from db.engine import dispose_engines

    db = folder / "source.db"
    shutil.copy(template, db)
    url = f"sqlite:///{db}"
    set_transcripts(url)
    logs = {mode: run_task(url, folder / mode, mode=mode) for mode in ("st", "mt")}
    dispose_engines()
    return logs


def inflated(source: Path, target: Path, change: Any) -> Path:
    """``source`` with its first sample's JSON changed by ``change`` (deflate-compressed, so
    a few MB on disk expand to what the case needs; inspect reads deflate as zstd)."""
    import zipfile

    import inspect_ai.log  # noqa: F401 (registers the zstd method zipfile then reads)

    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        first = next(i.filename for i in old.infolist() if i.filename.startswith("samples/"))
        for info in old.infolist():
            data = old.read(info)
            if info.filename == first:
                data = json.dumps(change(json.loads(data))).encode()
            new.writestr(info.filename, data, compress_type=zipfile.ZIP_DEFLATED)
    return target
