"""What every benchmark script does with its report: the load it ran under, and where it goes.

A benchmark's figures are only read beside the machine's load (docs/benchmarks.md), so each
script prints ``uptime`` with them; with ``--out FILE`` the same text is also written there
(the files under bench/results/).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def uptime() -> str:
    """The machine's ``uptime`` line (time and load), or the load average where it has none."""
    line = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    return line or str(os.getloadavg())


def publish(text: str, out: Path | None) -> None:
    """Print a benchmark's report and, where ``--out`` named a file, write it there too."""
    print(text)
    if out:
        out.write_text(text, encoding="utf-8")
