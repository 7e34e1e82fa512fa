"""The script analysis ends on a package whose values are reached through very many paths: a
parameter fans out to every call site and each of those to its own callers (a chain of 14
functions, each calling the next three times, is 3**14 paths). Each question has a budget of
values (script_flow.MAX_STEPS); past it the value is the most telling one reached, or unknown —
never a wrong error. This is a hang guard: the check runs in a child process so that a
regression shows as a timeout, not a hung suite."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rankmap.check.script_flow import MAX_STEPS


def _fan_out(depth: int) -> str:
    lines = ["import os, torch, torch.distributed as dist", "", "def g0(x):"]
    lines += ["    torch.cuda.set_device(x)", ""]
    for i in range(1, depth + 1):
        lines += [
            f"def g{i}(x):",
            f"    g{i - 1}(x)",
            f"    g{i - 1}(x + 0)",
            f"    g{i - 1}(x * 1)",
        ]
        lines.append("")
    lines += [f"g{depth}(int(os.environ['LOCAL_RANK']))", "dist.init_process_group('nccl')", ""]
    return "\n".join(lines)


def test_a_value_reached_through_millions_of_paths_is_analysed_within_the_budget(
    tmp_path: Path,
) -> None:
    assert MAX_STEPS < 3**14
    (tmp_path / "train.py").write_text(_fan_out(14))
    argv = [sys.executable, "-m", "rankmap", "check", "--machine", "dgx-h100"]
    argv += [
        "--script",
        "train.py",
        "--json",
        "--",
        "torchrun",
        "--nproc_per_node",
        "8",
        "train.py",
    ]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    report = json.loads(done.stdout)
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert errors == []
    assert report["launch"]["device_selection"] in ("local_rank", "unknown")
