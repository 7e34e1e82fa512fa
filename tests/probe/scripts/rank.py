"""One rank of a fault-injection test, as a plain process (the srun/mpirun shape).

Loads torch and rankmap, prints ``ready``, waits for a line on stdin (so the test controls when
the probe starts and can stop or kill this process first), then runs ``rankmap.verify`` (argv[1]
== "verify") or ``rankmap probe`` (argv[1] == "cli") with the timeout in argv[2] and prints one
JSON line: what it raised or its exit status, the finding codes and the seconds it took.
"""

import json
import sys
import time

import torch.distributed  # noqa: F401 - loaded before the clock starts, as in a training script

import rankmap
from rankmap.cli import main

mode, timeout = sys.argv[1], float(sys.argv[2])
print("ready", flush=True)
sys.stdin.readline()
start = time.monotonic()
out: dict[str, object] = {}
if mode == "verify":
    try:
        report = rankmap.verify(timeout=timeout, strict=True)
        out = {"verdict": report.verdict, "codes": [f.code for f in report.findings]}
    except rankmap.RankMapError as exc:
        out = {"raised": type(exc).__name__, "message": str(exc)}
else:
    out = {"status": main(["probe", "--timeout", str(timeout), "--json"])}
out["seconds"] = time.monotonic() - start
print(json.dumps(out), flush=True)
