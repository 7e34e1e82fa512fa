"""Time `rankmap explain` against grep on a big NCCL_DEBUG=INFO log of a 512-rank job.

Generates (in a temp dir) a log of about ``--size-mb`` MB: 64 hosts x 8 GPUs, Init START and
COMPLETE for every rank, then channel/topology chatter, with ONE planted collision (ranks 0 and 4
both on bus 4f000 of node-000, with their NCCL WARN). Then runs, side by side:

    LC_ALL=C grep -n -e 'NCCL WARN' -e 'Init START' -e 'Init COMPLETE' -e Error FILE | wc -l
    rankmap explain FILE --json            (hyperscan, the [fast] extra; skipped without it)
    RANKMAP_PURE_SCAN=1 rankmap explain FILE --json     (pure Python)

and prints wall and CPU seconds, the speed ratio (grep's wall time / rankmap's; targets >= 1.0
with hyperscan, >= 0.5 pure), the peak RSS and whether the planted collision was found. Both
paths search every literal of the prefilter (anchors + every catalogue key) in the whole file.
Usage: ``python benchmarks/explain_1gb.py [--size-mb 1024] [--keep] [--log FILE]``.

Measured on the shared 2-core development box (other agents' jobs on the same cores: CPU
pressure ~25%, wall times swing by 2x from run to run; judge by CPU seconds), 1.07 GB, one run
at load average 2.2 (2026-12-01, after the speed round of the pure matcher, the reader and
start-up):

    tool                     wall s  vs grep  CPU s  peak RSS  collision found
    grep (4 patterns)          1.46    1.00x   1.45      14MB  -
    rankmap, hyperscan         1.46    1.00x   1.47      30MB  True
    rankmap, pure Python       2.43    0.60x   4.18      25MB  True

Over 9 runs at load 1.7-2.5: grep 1.26-1.76 s; hyperscan 0.66-1.59x (CPU 1.47-2.57 s), pure
0.27-0.61x (CPU 3.97-5.86 s); the spread is the box, not the input. Before that round, the
same hour, interleaved: hyperscan 0.60-0.88x (CPU 2.02-3.16 s), pure 0.24-0.52x (CPU 4.47-7.36
s). See docs/explain.md "Speed and memory".
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PURE = "RANKMAP_PURE_SCAN"


def _has_hyperscan(env: dict[str, str]) -> bool:
    probe = [sys.executable, "-c", "import hyperscan"]
    return subprocess.run(probe, env=env, capture_output=True, check=False).returncode == 0


BUSES = ["18000", "2a000", "3a000", "5d000", "9a000", "ab000", "ba000", "db000"]


def generate(path: Path, size_mb: int) -> None:
    """Write the synthetic log."""
    rng = random.Random(7)
    hosts = [f"node-{i:03d}" for i in range(64)]
    head: list[str] = ["NCCL version 2.21.5+cuda12.4\n"]
    for rank in range(512):
        host, local = hosts[rank // 8], rank % 8
        bus = BUSES[local]
        if rank == 4:
            bus = "4f000"  # the planted collision: ranks 0 and 4 share one GPU
        if rank == 0:
            bus = "4f000"
        pid = 1000 + rank
        for phase in ("START", "COMPLETE"):
            head.append(
                f"{host}:{pid}:{pid + 50} [{local}] NCCL INFO ncclCommInitRank comm 0x55{rank:04x} "
                f"rank {rank} nranks 512 cudaDev {local} nvmlDev {local} busId {bus} "
                f"commId 0x9ad9b5e4ab2566da - Init {phase}\n"
            )
    head.append(
        "node-000:1004:1054 [4] init.cc:943 NCCL WARN Duplicate GPU detected : rank 4 and rank 0 "
        "both on CUDA device 4f000\n"
    )
    filler = []
    for i in range(20000):
        rank = rng.randrange(512)
        host, local = hosts[rank // 8], rank % 8
        pid = 1000 + rank
        kind = i % 5
        if kind == 0:
            msg = f"Channel {i % 32:02d}/0 : {rank}[{local}] -> {(rank + 1) % 512}[{(local + 1) % 8}] via P2P/CUMEM/read"
        elif kind == 1:
            msg = f"Channel {i % 32:02d}/0 : {rank}[{local}] -> {(rank + 8) % 512}[{local}] [send] via NET/IB/{local}/GDRDMA"
        elif kind == 2:
            msg = "Connected all rings, use ring PXN 0 GDR 1"
        elif kind == 3:
            msg = f"comm 0x55{rank:04x} rank {rank} nRanks 512 nNodes 64 localRanks 8 localRank {local} MNNVL 0"
        else:
            msg = f"Trees [0] {rank}/-1/-1->{rank + 1}->{rank - 1} [1] {rank}/-1/-1->{rank + 1}->{rank - 1}"
        filler.append(f"{host}:{pid}:{pid + 51} [{local}] NCCL INFO {msg}\n")
    block = "".join(filler).encode()
    target = size_mb * 1024 * 1024
    with path.open("wb") as f:
        f.write("".join(head).encode())
        written = 0
        while written < target:
            f.write(block)
            written += len(block)


_RSS_WRAPPER = (
    "import resource, subprocess, sys, time; t0 = time.perf_counter(); "
    "p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
    "dt = time.perf_counter() - t0; sys.stderr.write(p.stderr); "
    "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
    "print(dt, u.ru_utime + u.ru_stime, u.ru_maxrss); print(p.stdout, end='')"
)


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, int, str]:
    """Best of two runs (the first warms the page cache): wall seconds, CPU seconds (all its
    processes), peak RSS (KiB, the largest process of the run, workers included), stdout."""
    best, cpu, rss, out = float("inf"), float("inf"), 0, ""
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-c", _RSS_WRAPPER, *cmd], capture_output=True, text=True, env=env
        )
        head, _, out = proc.stdout.partition("\n")
        secs, cpus, peak = head.split()
        best, cpu, rss = min(best, float(secs)), min(cpu, float(cpus)), max(rss, int(peak))
    return best, cpu, rss, out


def _found(doc: dict[str, object]) -> bool:
    first = doc["findings"][0]  # type: ignore[index]
    return bool(0 in first["ranks"] and 4 in first["ranks"] and "0000:4F:00.0" in first["devices"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024, help="log size in MB (default 1024)")
    parser.add_argument("--keep", action="store_true", help="keep the generated log")
    parser.add_argument("--log", help="use this log (made by --keep) instead of generating one")
    args = parser.parse_args(argv)
    src = Path(__file__).resolve().parents[1] / "src"
    with tempfile.TemporaryDirectory() as tmp:
        # compiled modules cached as an installed package has them (the first run writes them)
        env = dict(os.environ, PYTHONPATH=str(src), LC_ALL="C", PYTHONPYCACHEPREFIX=tmp)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        log = Path(args.log) if args.log else Path(tmp) / "nccl-512.log"
        if not args.log:
            t0 = time.perf_counter()
            generate(log, args.size_mb)
            print(f"generated in {time.perf_counter() - t0:.1f}s: {log}")
        size = log.stat().st_size
        print(f"{size / 1e6:.0f} MB, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
        grep = "LC_ALL=C grep -n -e 'NCCL WARN' -e 'Init START' -e 'Init COMPLETE' -e Error"
        grep_s, grep_cpu, grep_rss, _ = timed(["sh", "-c", f"{grep} '{log}' | wc -l"])
        print(
            f"{'tool':<24}{'wall s':>7}{'vs grep':>9}{'CPU s':>7}{'peak RSS':>10}  collision found"
        )
        print(
            f"{'grep (4 patterns)':<24}{grep_s:>7.2f}{'1.00x':>9}{grep_cpu:>7.2f}"
            f"{grep_rss / 1024:>8.0f}MB  -"
        )
        found_all = True
        runs = (
            ("rankmap, hyperscan", {}, ">= 1.0"),
            ("rankmap, pure Python", {PURE: "1"}, ">= 0.5"),
        )
        for label, extra, target in runs:
            if not extra and not _has_hyperscan(env):
                print(f"{label:<24}   skipped: `pip install 'rankmap[fast]'` (hyperscan) first")
                continue
            cmd = [sys.executable, "-m", "rankmap", "explain", str(log), "--json"]
            rm_s, rm_cpu, rm_rss, rm_out = timed(cmd, env={**env, **extra})
            doc = json.loads(rm_out)
            found = _found(doc)
            found_all = found_all and found
            print(
                f"{label:<24}{rm_s:>7.2f}{grep_s / rm_s:>8.2f}x{rm_cpu:>7.2f}"
                f"{rm_rss / 1024:>8.0f}MB  {found}"
                f"   (target {target}; {len(doc['placements'])} ranks mapped)"
            )
        print(
            f"both paths search every literal of the prefilter ({_literal_count(env)}) everywhere"
        )
        if args.keep and not args.log:
            keep = Path.cwd() / log.name
            log.replace(keep)
            print(f"kept {keep}")
        return 0 if found_all else 1


def _literal_count(env: dict[str, str]) -> str:
    probe = "from rankmap.explain.prefilter import literals; print(len(literals()))"
    proc = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    return proc.stdout.strip() or "?"


if __name__ == "__main__":
    raise SystemExit(main())
