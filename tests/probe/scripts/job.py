"""A tiny training-script stand-in for the probe tests (run under real torchrun, CPU, gloo).

Environment knobs (all optional):
  RMTEST_OUT        directory: each rank writes rank<R>.json with what happened
  RMTEST_DEVICE_MOD N: call verify(device=local_rank % N)
  RMTEST_EXIT_RANK  R: that rank exits at once (a rank that dies before the probe)
  RMTEST_PHASES     comma list of: verify, init, allreduce (default "verify,init,allreduce")
  RMTEST_TIMEOUT    verify timeout in seconds (default 60)
"""

import json
import os
import sys
import time
import traceback

import torch
import torch.distributed as dist

import rankmap

rank = int(os.environ["RANK"])
local_rank = int(os.environ["LOCAL_RANK"])
out_dir = os.environ.get("RMTEST_OUT", ".")
result = {"rank": rank, "events": []}


def save():
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as fh:
        json.dump(result, fh)


if os.environ.get("RMTEST_EXIT_RANK") == str(rank):
    result["events"].append("exited")
    save()
    sys.exit(0)

mod = os.environ.get("RMTEST_DEVICE_MOD")
device = local_rank % int(mod) if mod else None
timeout = float(os.environ.get("RMTEST_TIMEOUT", "60"))
status = 0
for phase in os.environ.get("RMTEST_PHASES", "verify,init,allreduce").split(","):
    try:
        start = time.monotonic()
        if phase == "verify":
            report = rankmap.verify(device, timeout=timeout)
            result["events"].append(
                {
                    "verify": report.verdict,
                    "codes": [f.code for f in report.findings],
                    "seconds": time.monotonic() - start,
                    "start": start,
                }
            )
        elif phase == "init":
            dist.init_process_group("gloo")
            result["events"].append("init")
        elif phase == "allreduce":
            t = torch.ones(1) * (rank + 1)
            dist.all_reduce(t)
            result["events"].append({"allreduce": float(t.item())})
    except rankmap.RankMapError as exc:
        result["events"].append(
            {
                "raised": type(exc).__name__,
                "message": str(exc),
                "seconds": time.monotonic() - start,
                "start": start,  # CLOCK_MONOTONIC: one clock for every process of this machine
            }
        )
        status = 1
        break
    except Exception as exc:  # noqa: BLE001
        result["events"].append({"error": repr(exc), "tb": traceback.format_exc()})
        status = 2
        break
save()
if dist.is_initialized():
    dist.destroy_process_group()
# Exit 0 either way: torchrun would SIGTERM slower ranks when one exits non-zero, and the
# test reads every rank's outcome from its file.
sys.exit(0 if status in (0, 1) else status)
