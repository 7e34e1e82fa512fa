"""Time `check_launch` on a 1024-node x 8-GPU torchrun job (target: <= 1 s) and its text render.

Run: PYTHONPATH=src python benchmarks/check_scale.py
Prints the time of the plan, of the JSON document and of the summarised text output, and the
ratio to the 1 s budget.
"""

from __future__ import annotations

import io
import time
from pathlib import Path

from rankmap.adapters.local import check_launch
from rankmap.cli.context import AppContext
from rankmap.inventory import load_machine
from rankmap.render.check import render_check
from rankmap.render.json import report_json

BUDGET_S = 1.0


def main() -> None:
    machines = load_machine("dgx-h100")
    argv = ["torchrun", "--nnodes", "1024", "--nproc-per-node", "8", "train.py"]
    t0 = time.perf_counter()
    report = check_launch(argv, machines=machines, env={}, nodes=1024, cwd=Path.cwd())
    t1 = time.perf_counter()
    text = report_json(report)
    t2 = time.perf_counter()
    out = io.StringIO()
    ctx = AppContext(stdout=out, stderr=io.StringIO(), stdin=io.StringIO(), environ={}, width=120)
    render_check(report, ctx)
    t3 = time.perf_counter()
    plan_s = t1 - t0
    print(
        f"ranks: {len(report.placements)}  findings: {len(report.findings)}  verdict: {report.verdict}"
    )
    print(f"plan (check_launch): {plan_s:.3f} s  ({plan_s / BUDGET_S:.2f} x the 1 s budget)")
    print(
        f"json: {t2 - t1:.3f} s ({len(text) / 1e6:.1f} MB)   text: {t3 - t2:.3f} s ({len(out.getvalue().splitlines())} lines)"
    )


if __name__ == "__main__":
    main()
