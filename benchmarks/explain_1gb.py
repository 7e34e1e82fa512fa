"""Time `rankmap explain` against grep on a big NCCL_DEBUG=INFO log of a 512-rank job.

Generates (in a temp dir) a log of about ``--size-mb`` MB: 64 hosts x 8 GPUs, Init START and
COMPLETE for every rank, then channel/topology chatter, with ONE planted collision (ranks 0 and 4
both on bus 4f000 of node-000, with their NCCL WARN). Then runs, side by side:

    LC_ALL=C grep -n -e 'NCCL WARN' -e 'Init START' -e 'Init COMPLETE' -e Error FILE | wc -l
    rankmap explain FILE --json            (hyperscan, the [fast] extra; skipped without it)
    RANKMAP_PURE_SCAN=1 rankmap explain FILE --json     (pure Python)

and prints, over ``--runs`` interleaved rounds (default 5, after one untimed round), the median
and range of wall and CPU seconds (user + system of all its processes) and of the ratios to grep
(grep's time / ours, round by round; targets >= 1.0 with hyperscan, >= 0.5 pure, on wall time),
the peak RSS and whether the planted collision was found. Both paths search every literal of the
prefilter (anchors + every catalogue key) in the whole file. rankmap scans a file this size on
every core (hyperscan: threads; pure: forked processes), grep on one: the wall ratio depends on
the free cores, the CPU ratio is what it would be on one core.
Usage: ``python benchmarks/explain_1gb.py [--size-mb 1024] [--keep] [--log FILE] [--runs 5]``.

Last measured (session 10 of 2026-12-06, 684 literals, 3 rounds at load 0.7): grep 1.18 s;
hyperscan 1.41x wall (1.36-1.64), 0.97x CPU; pure 0.68x wall (0.42-0.77), 0.39x CPU; 31 / 28 MB.
At load 2.0 on the same 2 cores (no core free): hyperscan 1.02-1.14x wall, pure 0.36-0.38x wall.
Before (session 9 of 2026-12-06, 612 literals, 3 rounds at load 0.7): grep 1.05 s;
hyperscan 1.48x wall (1.42-1.58), 1.02x CPU; pure 0.63x wall (0.61-0.63), 0.35x CPU; 31 / 28 MB.
Before (session 7 of 2026-12-06, 599 literals, 3 rounds at load 1.0): grep 1.47 s;
hyperscan 1.33x wall (1.31-1.67), 1.03x CPU; pure 0.68x wall (0.49-0.85), 0.37x CPU; 33 / 27 MB.
Before (session 6 of 2026-12-02, 595 literals, 3 rounds at load 0.3-0.8): grep 1.07 s;
hyperscan 1.47x wall (1.44-1.65), 0.99x CPU; pure 0.59x wall (0.50-0.65), 0.33x CPU; 31 / 27 MB.
Before (session 5 of 2026-12-01, 569 literals, 5 rounds at load 1.3): grep 1.62 s;
hyperscan 1.34x wall (1.02-1.41), 0.87x CPU; pure 0.56x wall (0.50-0.59), 0.31x CPU; 31 / 27 MB.

Measured before on the shared 2-core development box (other agents' jobs on the same cores), 1.07 GB,
489 literals, 7 rounds at load average 1.4-1.8 (2026-12-01, after the round of threads for
hyperscan, the NUL translate and the per-line gates):

    tool                  wall s (range)    vs grep (wall)     CPU s (range)     vs grep (CPU)  RSS
    grep (4 patterns)     1.65 (1.54-1.79)  1.00x              1.65 (1.53-1.77)  1.00x          14MB
    rankmap, hyperscan    1.42 (1.04-2.80)  1.11 (0.59-1.70)x  1.89 (1.59-2.11)  0.82 (0.76-1.11)x  32MB
    rankmap, pure Python  2.98 (2.30-4.25)  0.56 (0.39-0.71)x  4.72 (3.99-5.14)  0.35 (0.31-0.40)x  27MB

The run before (480 literals, load 1.7): hyperscan 1.48x wall (1.00-1.65), 0.99x CPU; pure 0.56x
wall (0.46-0.68), 0.33x CPU.
Before that round (7 rounds, load 1.6-2.7): hyperscan 0.68x wall (0.61-1.13), 0.72x CPU; pure
0.37x wall (0.24-0.45), 0.30x CPU. The pure path needs three times grep's CPU time: it meets
0.5x only with two free cores. See docs/explain.md "Speed and memory".
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
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median

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


@dataclass
class Tool:
    """One command timed in every round: wall and CPU seconds (user + system of all its
    processes), the peak RSS (KiB, the largest process, workers included), its last stdout."""

    label: str
    cmd: list[str]
    env: dict[str, str] | None = None
    target: str = ""
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    rss: int = 0
    out: str = ""

    def run(self) -> None:
        proc = subprocess.run(
            [sys.executable, "-c", _RSS_WRAPPER, *self.cmd],
            capture_output=True,
            text=True,
            env=self.env,
            check=False,
        )
        head, _, self.out = proc.stdout.partition("\n")
        secs, cpus, peak = head.split()
        self.wall.append(float(secs))
        self.cpu.append(float(cpus))
        self.rss = max(self.rss, int(peak))


def _spread(values: list[float]) -> str:
    return f"{median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def _ratios(grep: list[float], ours: list[float]) -> list[float]:
    """grep's time / ours, round by round (both ran in the same round, under the same load)."""
    return [g / o for g, o in zip(grep, ours, strict=True)]


def _found(doc: dict[str, object]) -> bool:
    first = doc["findings"][0]  # type: ignore[index]
    return bool(0 in first["ranks"] and 4 in first["ranks"] and "0000:4F:00.0" in first["devices"])


def _report(grep: Tool, tools: list[Tool], runs: int) -> bool:
    """Print the table (medians, ranges in brackets); True when every tool found the collision."""
    print(f"median (min-max) of {runs} interleaved rounds; ratios are grep's time / ours per round")
    print(
        f"{'tool':<22}{'wall s':>18}{'vs grep (wall)':>20}{'CPU s':>18}"
        f"{'vs grep (CPU)':>20}{'peak RSS':>10}  found"
    )
    print(
        f"{grep.label:<22}{_spread(grep.wall):>18}{'1.00x':>20}{_spread(grep.cpu):>18}"
        f"{'1.00x':>20}{grep.rss / 1024:>8.0f}MB  -"
    )
    found_all = True
    for tool in tools:
        doc = json.loads(tool.out)
        found = _found(doc)
        found_all = found_all and found
        wall_r, cpu_r = _ratios(grep.wall, tool.wall), _ratios(grep.cpu, tool.cpu)
        print(
            f"{tool.label:<22}{_spread(tool.wall):>18}{_spread(wall_r):>19}x"
            f"{_spread(tool.cpu):>18}{_spread(cpu_r):>19}x{tool.rss / 1024:>8.0f}MB  {found}"
            f"   (target {tool.target}; {len(doc['placements'])} ranks mapped)"
        )
    return found_all


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024, help="log size in MB (default 1024)")
    parser.add_argument("--keep", action="store_true", help="keep the generated log")
    parser.add_argument("--log", help="use this log (made by --keep) instead of generating one")
    parser.add_argument("--runs", type=int, default=5, help="timed rounds (default 5)")
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
        cpus = os.cpu_count() or 1
        print(f"{size / 1e6:.0f} MB, {cpus} CPUs, load average {os.getloadavg()[0]:.1f}")
        grep_sh = "LC_ALL=C grep -n -e 'NCCL WARN' -e 'Init START' -e 'Init COMPLETE' -e Error"
        grep = Tool("grep (4 patterns)", ["sh", "-c", f"{grep_sh} '{log}' | wc -l"])
        rankmap = [sys.executable, "-m", "rankmap", "explain", str(log), "--json"]
        tools = [Tool("rankmap, pure Python", rankmap, {**env, PURE: "1"}, ">= 0.5")]
        if _has_hyperscan(env):
            tools.insert(0, Tool("rankmap, hyperscan", rankmap, env, ">= 1.0"))
        else:
            print("rankmap, hyperscan: skipped, `pip install 'rankmap[fast]'` (hyperscan) first")
        for tool in [grep, *tools]:  # untimed: the page cache, the compiled modules
            tool.run()
            tool.wall.clear()
            tool.cpu.clear()
        for _ in range(max(1, args.runs)):
            for tool in [grep, *tools]:
                tool.run()
        found_all = _report(grep, tools, max(1, args.runs))
        print(
            f"both paths search every literal of the prefilter ({_literal_count(env)}) everywhere;"
            f" rankmap scans a file over 64 MiB on {min(cpus, 8)} cores (hyperscan: threads,"
            " pure: processes), grep on one: the wall ratio depends on the free cores, the CPU"
            " ratio is what it would be on one core"
        )
        print(f"load average after: {os.getloadavg()[0]:.1f}")
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
