"""Peak memory of every command that reads input, fed each hostile kind of input.

For each (command, input) pair a real rankmap child process runs and reports its own peak RSS
(``VmHWM`` from /proc/self/status). Inputs: a 2 GB sparse file, /dev/zero, a FIFO, a 24 MB
line, binary, UTF-16, YAML/shell bombs, 5,000-digit numbers and a big log of NCCL Init lines
(``--log-mb``, default 256). Prints one row per run, then the worst case, and exits 1 when a
command that does not need torch goes over ``--limit-mb`` (the issue's bound: 500 MB).

Usage: ``PYTHONPATH=src python benchmarks/hostile_rss.py [--log-mb 1024] [--limit-mb 500]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

TORCHRUN = ["torchrun", "--nproc-per-node", "2", "train.py"]
CHECK = ["check", "--machine", "dgx-h100"]
BIG = "9" * 5000


def readers() -> dict[str, list[str]]:
    """Command lines with ``{}`` where the input path goes."""
    return {
        "explain FILE": ["explain", "--json", "{}"],
        "doctor --machine": ["doctor", "--json", "--machine", "{}"],
        "check --machine": ["check", "--json", "--machine", "{}", "--", *TORCHRUN],
        "topo --topo-file": ["topo", "--json", "--topo-file", "{}"],
        "check --script": [*CHECK, "--json", "--script", "{}", "--", *TORCHRUN],
        "explain --script": ["explain", "--json", "--script", "{}", "/dev/null"],
        "check --shell": [*CHECK, "--json", "--shell", "{}"],
        "accelerate --config_file": [*CHECK, "--", "accelerate", "launch", "--config_file", "{}"]
        + ["t.py"],
        "mpirun --hostfile": [*CHECK, "--", "mpirun", "--hostfile", "{}", "python", "t.py"],
        "deepspeed --hostfile": [*CHECK, "--", "deepspeed", "--hostfile", "{}", "t.py"],
        "run --script": ["run", "--script", "{}", "--machine", "dgx-h100", "--"]
        + ["torchrun", "--nproc-per-node", "1", "/nonexistent.py"],
    }


def make_inputs(work: Path, log_mb: int) -> dict[str, Path]:
    """Hostile files (created once)."""
    out: dict[str, Path] = {"/dev/zero": Path("/dev/zero")}
    sparse = work / "sparse"
    with sparse.open("wb") as f:
        f.truncate(2 * 2**30)
    out["sparse 2 GB"] = sparse
    fifo = work / "fifo"
    os.mkfifo(fifo)
    out["FIFO"] = fifo
    (work / "line").write_text("x" * (24 * 2**20) + "\n")
    out["24 MB line"] = work / "line"
    (work / "bin").write_bytes(bytes(range(256)) * 4096)
    out["binary"] = work / "bin"
    profile = resources.files("rankmap.profiles").joinpath("dgx-h100.json").read_text()
    (work / "utf16").write_bytes(profile.encode("utf-16"))
    out["UTF-16 profile"] = work / "utf16"
    (work / "loop.sh").write_text("for i in {0..99999999}; do torchrun train.py & done\n")
    out["shell loop bomb"] = work / "loop.sh"
    (work / "yaml").write_text(
        "a: &a [x]\n"
        + "".join(
            f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n"
            for p, c in zip("abcdefghi", "bcdefghij", strict=True)
        )
    )
    out["YAML aliases"] = work / "yaml"
    (work / "nums").write_text(f"localhost slots={BIG}\n" + f'{{"hosts": [{{"x": {BIG}}}]}}\n')
    out["5000-digit numbers"] = work / "nums"
    log = work / "init.log"
    line = (
        "node-{h:03d}:{p}:{p} [{g}] NCCL INFO comm 0x5581 rank {r} nranks 4096 cudaDev {g} "
        "nvmlDev {g} busId {b}000 commId 0x9e1 - Init COMPLETE\n"
    )
    with log.open("w") as f:
        written, r = 0, 0
        while written < log_mb * 2**20:
            text = line.format(h=r // 8 % 512, p=1000 + r, g=r % 8, r=r % 4096, b=18 + r % 8)
            f.write(text)
            written += len(text)
            r += 1
    out[f"{log_mb} MB Init log"] = log
    return out


# The child reports its own high-water mark (VmHWM of its fresh address space): rusage from
# wait4 would include this (bigger) parent's pages, inherited through fork/exec.
_CHILD = (
    "import sys\n"
    "from rankmap.cli import main\n"
    "sys.argv = ['rankmap', *sys.argv[1:]]\n"
    "rc = main()\n"
    "hwm = [ln for ln in open('/proc/self/status') if ln.startswith('VmHWM')][0]\n"
    "sys.stderr.write('\\n' + hwm)\n"
    "sys.exit(rc)\n"
)


def peak_rss(
    argv: list[str], cwd: Path, timeout: float, extra_env: dict[str, str] | None = None
) -> tuple[int | None, float, float]:
    """(exit status or None on timeout, peak RSS in MB, seconds) of ``rankmap argv``."""
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    env.update(extra_env or {})
    start = time.monotonic()
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, *argv],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:  # still report how high it got before it was stopped
        hwm = _hwm_of(child.pid)
        child.kill()
        child.communicate()
        return None, hwm, time.monotonic() - start
    last = err.strip().splitlines()[-1] if err.strip() else ""
    kib = int(last.split()[1]) if last.startswith("VmHWM") else 0
    return child.returncode, kib / 1024, time.monotonic() - start


def print_row(
    name: str, kind: str, status: int | None, rss: float, secs: float, bad: bool, width: int
) -> None:
    """One line of the table: command, input, exit status (or hang), peak MB, seconds."""
    shown = "hang" if status is None else str(status)
    flag = "  <-- over the bound" if bad else ""
    print(f"{name:<{width}} {kind:<20} {shown:>4} {rss:>8.1f} {secs:>6.2f}{flag}")


def _hwm_of(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log-mb", type=int, default=256)
    ap.add_argument("--limit-mb", type=float, default=500.0)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument(
        "--only", metavar="COMMAND", help="one command of the table, e.g. 'explain FILE'"
    )
    args = ap.parse_args()
    worst = (0.0, "")
    failed = False
    with tempfile.TemporaryDirectory(prefix="rankmap-hostile-") as tmp:
        work = Path(tmp)
        (work / "train.py").write_text("import torch\n")
        inputs = make_inputs(work, args.log_mb)
        print(f"{'command':<26} {'input':<20} {'exit':>4} {'peak MB':>8} {'s':>6}")
        for name, template in readers().items():
            if args.only and name != args.only:
                continue
            for kind, path in inputs.items():
                if kind.endswith("Init log") and name != "explain FILE":
                    continue
                argv = [str(path) if a == "{}" else a for a in template]
                status, rss, secs = peak_rss(argv, work, args.timeout)
                bad = status is None or status == 3 or rss > args.limit_mb
                failed |= bad
                print_row(name, kind, status, rss, secs, bad, width=26)
                if rss > worst[0]:
                    worst = (rss, f"{name} on {kind}")
    print(f"worst case: {worst[0]:.1f} MB ({worst[1]}); bound {args.limit_mb:g} MB")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
