"""One worker of a torchrun job that runs ``rankmap probe`` and leaves its outcome in a file.

For the store-host fault test: the torchrun agent is killed while this worker waits, so nobody
collects its exit status - it writes ``<RMTEST_OUT>/rank<R>.json`` itself (status, stderr,
seconds). Writes ``rank<R>.started`` (its pid) when the probe starts. ``RMTEST_WORLD`` overrides
WORLD_SIZE (a world larger than the job: every rank waits for one that never comes).
"""

import io
import json
import os
import sys
import time

import torch.distributed  # noqa: F401 - loaded before the clock starts, as in a training script

from rankmap.cli import main
from rankmap.cli.context import AppContext

if os.environ.get("RMTEST_WORLD"):
    os.environ["WORLD_SIZE"] = os.environ["RMTEST_WORLD"]
rank = os.environ["RANK"]
out_dir = os.environ["RMTEST_OUT"]
timeout = os.environ.get("RMTEST_TIMEOUT", "2")
out, err = io.StringIO(), io.StringIO()
ctx = AppContext(stdout=out, stderr=err, stdin=io.StringIO(), environ=dict(os.environ))
start = time.monotonic()
with open(os.path.join(out_dir, f"rank{rank}.started"), "w") as fh:
    fh.write(str(os.getpid()))
status = main(["probe", "--timeout", timeout], ctx)
result = {
    "status": status,
    "stdout": out.getvalue(),
    "stderr": err.getvalue(),
    "seconds": time.monotonic() - start,
}
with open(os.path.join(out_dir, f"rank{rank}.json.tmp"), "w") as fh:
    json.dump(result, fh)
os.replace(os.path.join(out_dir, f"rank{rank}.json.tmp"), os.path.join(out_dir, f"rank{rank}.json"))
sys.exit(status)
