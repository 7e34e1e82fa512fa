"""Contract checks across commands: --help without torch, unknown flags, rankmap/1 JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from qa_helpers import SRC, assert_one_line_error

from rankmap.cli import COMMANDS

DATA = Path(__file__).parents[1] / "data"
ORDER = {"error": 0, "warning": 1, "info": 2}


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_works_without_torch(command: str):
    argv = ["rankmap", *([command] if command else []), "--help"]
    code = (
        "import sys; sys.modules['torch'] = None; "
        f"sys.argv = {argv!r}; from rankmap.cli import console_main; console_main()"
    )
    res = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": SRC},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("usage: rankmap")
    assert res.stderr == ""


@pytest.mark.parametrize("command", COMMANDS)
def test_unknown_flag(run_cli, command: str):
    res = run_cli([command, "--no-such-flag"])
    assert_one_line_error(res.status, res.stderr)


CASES = [
    ["doctor", "--machine", "dgx-h100"],
    ["doctor", "--machine", "workstation-4gpu", "--env", "CUDA_VISIBLE_DEVICES="],
    ["doctor", "--machine", "a100-mig", "--env", "CUDA_VISIBLE_DEVICES=0,1"],
    ["check", "--machine", "dgx-h100", "--", "torchrun", "--nproc-per-node", "16", "t.py"],
    ["check", "--machine", "a100-mig", "--", "torchrun", "--nproc-per-node", "7", "t.py"],
    ["check", "--machine", "dgx-h100", "--env", "CUDA_VISIBLE_DEVICES=0,0", "--"]
    + ["torchrun", "--nproc-per-node", "2", "t.py"],
    ["check", "--machine", "dgx-h100", "--nodes", "2", "--"]
    + ["srun", "--ntasks-per-node", "8", "--gpus-per-task", "1", "python", "t.py"],
    ["check", "--machine", "mixed-2gpu", "--", "python", "t.py"],
    ["topo", "--machine", "dgx-h100"],
    ["machines"],
    ["probe", "--machine", "dgx-h100", "--timeout", "30"],
    *(
        ["explain", str(p)]
        for p in sorted((DATA / "explain" / "cases").glob("*.log"))[:12]
        if p.is_file()
    ),
]


@pytest.mark.parametrize("argv", CASES, ids=lambda a: " ".join(a)[:70])
def test_json_is_one_consistent_rankmap1_document(run_cli, argv: list[str]):
    cut = argv.index("--") if "--" in argv else len(argv)
    res = run_cli([*argv[:cut], "--json", *argv[cut:]])
    doc = json.loads(res.stdout)  # exactly one document, nothing else on stdout
    assert doc["schema"] == "rankmap/1"
    assert doc["command"] == argv[0]
    severities = [f["severity"] for f in doc["findings"]]
    assert severities == sorted(severities, key=ORDER.__getitem__)
    worst = "error" if "error" in severities else "warning" if "warning" in severities else "ok"
    assert doc["verdict"] == worst
    assert res.status == (1 if worst == "error" else 0), res.stderr
    for f in doc["findings"]:
        assert {"code", "category", "severity", "title", "ranks", "devices", "hosts"} <= set(f)
