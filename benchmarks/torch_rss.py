"""Peak memory of the commands that load torch (probe, run, bench) against torch's own import.

The bound (issue 11): no input makes ``rankmap probe``/``run``/``bench`` exceed the RSS of
``import torch, torch.distributed`` in a fresh process + 200 MB. Each run is a real child that
reports its own ``VmHWM`` (as in benchmarks/hostile_rss.py, whose hostile files it reuses):
``--machine`` / ``RANKMAP_MACHINE`` files (2 GB sparse, /dev/zero, FIFO, 24 MB line, binary,
UTF-16, 5,000-digit numbers), ``--script`` files, 16 ``--env`` values of 100 KB (the kernel caps arguments at 2 MB), a
``WORLD_SIZE`` of 10^11, and rank 0 of a probe whose peers store big records
(``--peers`` x ``--payload-mb``, default 8 x 7 MB) and flood rankmap's own store, which rank 0
hosts. Prints one row per run and the worst
case against the bound; exits 1 when a run goes over it or hangs.

Usage: ``PYTHONPATH=src python benchmarks/torch_rss.py [--peers 8] [--payload-mb 7]
[--only probe]``.

Figures (2026-12-01, torch 2.13 CPU, this 2-core VM): torch import 219.4 MB, bound 419.4 MB.
Rank 0 hosting rankmap's own store while 8 peers store 7 MB records and one floods it with
1 MiB values until refused: 290.4 MB = torch import + 71.0 MB (64 MiB budget, 1 MiB + 1 kept
per value; torch's TCPStore server, used before, took torch import + 185.2 MB for the records
alone and had no bound for a flood). Otherwise (measured before the store change, which they
do not touch): ``probe`` with a bad
``--machine``/``RANKMAP_MACHINE`` 221-350 MB (it loads torch before it reads the file; the
2 GB sparse file, read up to the 64 MiB cap: 350 MB), ``bench`` up to 314 MB (UTF-16 profile:
it runs on CPU), ``run`` at most 146 MB (it does not load torch for these inputs), ``probe``
with WORLD_SIZE=10^11 exit 2 at 222 MB. Nothing over the bound, no hang.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from hostile_rss import make_inputs, peak_rss, print_row

MARGIN_MB = 200.0
_IMPORT = (
    "import torch, torch.distributed\n"
    "print([ln for ln in open('/proc/self/status') if ln.startswith('VmHWM')][0])\n"
)


def torch_import_mb() -> float:
    """VmHWM of a fresh interpreter that imports torch and torch.distributed (best of 3)."""
    best = float("inf")
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", _IMPORT], capture_output=True, text=True,
                             check=True).stdout  # fmt: skip
        best = min(best, int(out.split()[1]) / 1024)
    return best


def runs(inputs: dict[str, Path]) -> list[tuple[str, str, list[str], dict[str, str]]]:
    """(command, input, argv, extra env) for every run."""
    out = []
    files = {k: v for k, v in inputs.items() if not k.endswith("Init log")}
    nothing = ["--", "torchrun", "--nproc-per-node", "1", "/nonexistent.py"]
    for kind, path in files.items():
        out.append(("probe --machine", kind, ["probe", "--json", "--machine", str(path)], {}))
        out.append(("probe RANKMAP_MACHINE", kind, ["probe", "--json"],
                    {"RANKMAP_MACHINE": str(path)}))  # fmt: skip
        out.append(("run --machine", kind, ["run", "--machine", str(path), *nothing], {}))
        out.append(("run --script", kind, ["run", "--machine", "dgx-h100", "--script", str(path),
                                           *nothing], {}))  # fmt: skip
        out.append(("bench --machine", kind, ["bench", "--json", "--machine", str(path)], {}))
    envs = [a for i in range(16) for a in ("--env", f"K{i}={'v' * 100_000}")]
    out.append(("run --env", "16 x 100 KB", ["run", "--machine", "dgx-h100", *envs, *nothing],
                {}))  # fmt: skip
    world = {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "100000000000"}
    out.append(("probe", "WORLD_SIZE=10^11", ["probe", "--timeout", "2"], world))
    out.append(("bench", "WORLD_SIZE=10^11", ["bench", "--json", "--timeout", "5"], world))
    return out


def big_record_run(work: Path, payload_mb: int, peers: int) -> tuple[int | None, float, float]:
    """Rank 0 (``rankmap probe``, hosting rankmap's own store on RANKMAP_STORE_PORT) while this
    process, as ranks 1..``peers`` (one connection each, as real peers), stores a
    ``payload_mb`` MB record under each rank's key, then floods the store with 1 MiB values
    under keys of its own until the store refuses, then counts the arrivals. The store keeps
    one value to 1 MiB + 1 and what peers store to its 64 MiB budget."""
    import socket

    from rankmap.adapters import store_client

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": str(peers + 1),
           "RANKMAP_STORE_PORT": str(port),
           "RANKMAP_STORE_ADDR": "127.0.0.1", "TORCHELASTIC_RUN_ID": "rss",
           "RANKMAP_MACHINE": "dgx-h100", "TORCH_CPP_LOG_LEVEL": "FATAL"}  # fmt: skip
    prefix = "rankmap/rss/0/call1"
    value = b'["rankmap-own/1","' + b"x" * (payload_mb * 2**20) + b'"]'

    def peer(rank: int) -> None:
        now = time.monotonic()
        try:
            store = store_client.connect("127.0.0.1", port, now + 60, now + 90)
            store.set(f"{prefix}/rec/{rank}", value)
            if rank == 1:
                for i in range(10_000):
                    store.set(f"{prefix}/shared/flood{i}", b"f" * 2**20)
        except (OSError, store_client.StoreRefused):
            pass
        else:
            store.add(f"{prefix}/arrived", 1)

    for rank in range(1, peers + 1):
        threading.Thread(target=peer, args=(rank,), daemon=True).start()
    return peak_rss(["probe", "--timeout", "20", "--json"], work, 120, env)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--payload-mb", type=int, default=7, help="per peer")
    ap.add_argument("--peers", type=int, default=8)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--only", metavar="COMMAND", help="runs whose command starts with this")
    args = ap.parse_args()
    base = torch_import_mb()
    bound = base + MARGIN_MB
    print(f"torch import (fresh process, VmHWM): {base:.1f} MB; bound {bound:.1f} MB")
    worst, failed = (0.0, ""), False
    with tempfile.TemporaryDirectory(prefix="rankmap-torch-rss-") as tmp:
        work = Path(tmp)
        inputs = make_inputs(work, 1)
        print(f"{'command':<24} {'input':<20} {'exit':>4} {'peak MB':>8} {'s':>6}")
        table = runs(inputs)
        table.append(("probe rank 0", f"{args.peers}x{args.payload_mb} MB + flood", [], {}))
        for name, kind, argv, env in table:
            if args.only and not name.startswith(args.only):
                continue
            if argv:
                status, rss, secs = peak_rss(argv, work, args.timeout, env)
            else:
                status, rss, secs = big_record_run(work, args.payload_mb, args.peers)
            bad = status is None or rss > bound
            failed |= bad
            print_row(name, kind, status, rss, secs, bad, width=24)
            if rss > worst[0]:
                worst = (rss, f"{name} on {kind}")
    print(f"worst case: {worst[0]:.1f} MB ({worst[1]}) = torch import + {worst[0] - base:.1f} MB;"
          f" bound torch import + {MARGIN_MB:g} MB = {bound:.1f} MB")  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
