"""Every command that does not need torch works in a process where torch cannot be imported.

A ``sitecustomize`` on PYTHONPATH wraps every import finder so that ``torch`` looks absent
(``importlib.util.find_spec("torch")`` is None, ``import torch`` raises ModuleNotFoundError),
exactly as on a machine without it; one subprocess then runs each command in-process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_BLOCKER = """
import sys


class _NoTorch:
    def __init__(self, inner):
        self._inner = inner

    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            return None
        find = getattr(self._inner, "find_spec", None)
        return find(name, path, target) if find else None

    def __getattr__(self, attr):
        return getattr(self._inner, attr)


sys.meta_path[:] = [_NoTorch(f) for f in sys.meta_path]
"""

_RUN = """
import io, json, sys
from pathlib import Path
from rankmap.cli import main
from rankmap.cli.context import AppContext

try:
    import torch  # noqa: F401
except ModuleNotFoundError:
    pass
else:
    raise SystemExit("the blocker did not hide torch")
work = Path(sys.argv[1])
(work / "t.py").write_text("import os, torch\\ntorch.cuda.set_device(int(os.environ['LOCAL_RANK']))\\n")
(work / "d.log").write_text(
    "[rank4]: torch.distributed.DistBackendError: NCCL error ... invalid usage\\n"
    "Duplicate GPU detected : rank 4 and rank 0 both on CUDA device 4f000\\n"
)
commands = {
    "help": (["--help"], {0}),
    "version": (["--version"], {0}),
    "machines": (["machines", "--json"], {0}),
    "doctor": (["doctor", "--machine", "dgx-h100", "--json"], {0, 1}),
    "doctor-live": (["doctor", "--json"], {0, 1, 3}),
    "check": (["check", "--machine", "dgx-h100", "--json", "--", "torchrun",
               "--nproc-per-node", "8", str(work / "t.py")], {0, 1}),
    "explain": (["explain", "--json", str(work / "d.log")], {0, 1}),
    "explain-stdin": (["explain", "--json", "-"], {0, 1}),
    "topo": (["topo", "--machine", "dgx-h100", "--json"], {0, 1}),
    "probe-help": (["probe", "--help"], {0}),
}
out = {}
for name, (argv, ok) in commands.items():
    stdout, stderr = io.StringIO(), io.StringIO()
    stdin = io.StringIO((work / "d.log").read_text())
    ctx = AppContext(stdout=stdout, stderr=stderr, stdin=stdin, environ={}, cwd=work)
    status = main(argv, ctx)
    out[name] = {"status": status, "ok": status in ok, "stderr": stderr.getvalue()[-300:],
                 "stdout": len(stdout.getvalue())}
out["torch_imported"] = "torch" in sys.modules
print(json.dumps(out))
"""


def test_commands_that_need_no_torch_work_where_torch_cannot_be_imported(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_BLOCKER)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(ROOT / "src")]),
    }
    env.pop("CUDA_VISIBLE_DEVICES", None)
    done = subprocess.run(
        [sys.executable, "-c", _RUN, str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result.pop("torch_imported") is False
    failed = {name: r for name, r in result.items() if not r["ok"] or "Traceback" in r["stderr"]}
    assert not failed, failed
    assert all(r["stdout"] > 0 for r in result.values())
