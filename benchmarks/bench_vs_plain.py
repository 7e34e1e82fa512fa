"""`rankmap bench` vs a plain torch.distributed.all_reduce loop timed the same way.

    PYTHONPATH=src python benchmarks/bench_vs_plain.py [--nproc 4] [-b 1K] [-e 4M] [--repeat 5]

Both run under `torchrun --nproc-per-node N` with gloo on the same sizes, warm-up and iterations:
untimed warm-up, barrier, N timed all-reduces of a zero float32 buffer, per-rank mean time
averaged over ranks. Runs alternate (ours, plain, ours, plain, ...) and each size keeps the best
algbw (`--stat best`, default: load from other processes only ever adds time) or the median.
Prints algbw side by side, the ratio per size and the geometric mean; exits 1 when the
geometric mean is off by more than 10%.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

PLAIN = r"""
import json, sys, time, torch, torch.distributed as dist
sizes = [int(s) for s in sys.argv[1].split(",")]
warmup, iters = int(sys.argv[2]), int(sys.argv[3])
dist.init_process_group("gloo")
n = dist.get_world_size()
out = []
for size in sizes:
    buf = torch.zeros(size // 4, dtype=torch.float32)
    for _ in range(warmup):
        dist.all_reduce(buf)
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(buf)
    t = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64)
    dist.all_reduce(t)
    seconds = t.item() / n
    out.append({"size": size, "algbw": size / 1e9 / seconds})
if dist.get_rank() == 0:
    print(json.dumps(out))
dist.destroy_process_group()
"""


def _torchrun(nproc: int, args: list[str]) -> str:
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        str(nproc),
        *args,
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr[-2000:]}")
    return done.stdout


def run_ours(nproc: int, b: str, e: str, warmup: int, iters: int) -> dict[int, float]:
    out = _torchrun(
        nproc,
        ["-m", "rankmap", "bench", "--backend", "gloo", "-b", b, "-e", e, "-w", str(warmup),
         "-n", str(iters), "--json"],
    )  # fmt: skip
    doc = json.loads(out)
    # algbw from time_us (3 decimals of a microsecond) rather than the rounded algbw field
    return {int(r["size"]): r["size"] / 1e3 / float(r["time_us"]) for r in doc["results"]}


def run_plain(
    nproc: int, sizes: list[int], warmup: int, iters: int, script: Path
) -> dict[int, float]:
    out = _torchrun(nproc, [str(script), ",".join(map(str, sizes)), str(warmup), str(iters)])
    return {int(r["size"]): float(r["algbw"]) for r in json.loads(out.strip().splitlines()[-1])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nproc", type=int, default=4)
    parser.add_argument("-b", default="1K")
    parser.add_argument("-e", default="4M")
    parser.add_argument("-w", type=int, default=5)
    parser.add_argument("-n", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--stat", choices=("best", "median"), default="best")
    args = parser.parse_args()
    sys.path.insert(0, str(SRC))
    from rankmap.bench.sizes import format_size, parse_size, sweep

    sizes = sweep(parse_size(args.b), parse_size(args.e), 2)
    ours: dict[int, list[float]] = {s: [] for s in sizes}
    plain: dict[int, list[float]] = {s: [] for s in sizes}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "plain_allreduce.py"
        script.write_text(PLAIN)
        for _ in range(args.repeat):
            for s, v in run_ours(args.nproc, args.b, args.e, args.w, args.n).items():
                ours[s].append(v)
            for s, v in run_plain(args.nproc, sizes, args.w, args.n, script).items():
                plain[s].append(v)
    pick = max if args.stat == "best" else statistics.median
    print(
        f"gloo, {args.nproc} procs, warmup {args.w}, iters {args.n}, {args.stat} of {args.repeat}"
    )
    print(f"{'size':>8} {'rankmap algbw':>14} {'plain algbw':>12} {'ratio':>7}")
    ratios = []
    for s in sizes:
        a, p = pick(ours[s]), pick(plain[s])
        ratio = a / p if p else float("nan")
        ratios.append(ratio)
        print(f"{format_size(s):>8} {a:>14.4f} {p:>12.4f} {ratio:>7.3f}")
    geo = statistics.geometric_mean(ratios)
    verdict = "within 10%" if 0.9 <= geo <= 1.1 else "OFF by more than 10%"
    print(f"geometric mean ratio rankmap/plain: {geo:.3f} ({verdict})")
    return 0 if 0.9 <= geo <= 1.1 else 1


if __name__ == "__main__":
    sys.exit(main())
