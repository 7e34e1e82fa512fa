"""Cold-start time of ``rankmap doctor --json --machine dgx-h100`` vs ``torch.utils.collect_env``.

Runs the two commands interleaved (A B A B ...) in fresh interpreters, prints both medians and
the ratio. Target: ratio <= 0.15. Also checks that ``doctor --json`` did not import torch.

    PYTHONPATH=src python benchmarks/doctor_startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
DOCTOR = [sys.executable, "-m", "rankmap", "doctor", "--json", "--machine", "dgx-h100"]
COLLECT_ENV = [sys.executable, "-m", "torch.utils.collect_env"]
NO_TORCH_CHECK = (
    "import sys, io, contextlib\n"
    "from rankmap.cli import main\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n"
    "    main(['doctor', '--json', '--machine', 'dgx-h100'])\n"
    "print('torch' in sys.modules)\n"
)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = (
        f"{SRC}{os.pathsep}{env['PYTHONPATH']}" if env.get("PYTHONPATH") else str(SRC)
    )
    return env


def _time(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    env = _env()
    imported = subprocess.run(
        [sys.executable, "-c", NO_TORCH_CHECK], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    print(f"doctor --json imports torch: {imported}")
    if importlib.util.find_spec("torch") is None:
        print("torch is not installed: no reference to compare with")
        return 0
    _time(DOCTOR, env)  # warm the file cache for both
    _time(COLLECT_ENV, env)
    doctor, collect = [], []
    for _ in range(args.runs):
        doctor.append(_time(DOCTOR, env))
        collect.append(_time(COLLECT_ENV, env))
    d, c = statistics.median(doctor), statistics.median(collect)
    print(f"rankmap doctor --json --machine dgx-h100: median {d * 1000:.0f} ms ({args.runs} runs)")
    print(f"python -m torch.utils.collect_env:        median {c * 1000:.0f} ms ({args.runs} runs)")
    print(f"ratio: {d / c:.3f} (target <= 0.15) -> {'OK' if d / c <= 0.15 else 'ABOVE TARGET'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
