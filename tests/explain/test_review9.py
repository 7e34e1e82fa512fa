"""Review 9: log + flags inputs where a weak or assumed fact was promoted to an alarm."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from rankmap.adapters.local import explain_files, load_machine
from rankmap.findings import Finding, Severity

HEALTHY = "NCCL INFO Init COMPLETE\nstep 100 loss 2.31\nstep 200 loss 2.05\n"
NETWORK = (
    "NCCL WARN socketStartConnect: Connect to 10.0.0.2<12345> failed : Software caused "
    "connection abort\n"
    "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1269, unhandled system error\n"
)


def _findings(log: str, **kw: Any) -> list[Finding]:
    return explain_files([Path("-")], stdin=io.StringIO(log), **kw).ordered_findings()


def test_naming_nccl_tests_is_no_failure() -> None:
    first = _findings(
        HEALTHY,
        launch="mpirun -np 8 ./build/all_reduce_perf -b 8 -e 128M -g 1",
        machines=load_machine("dgx-a100"),
    )[0]
    assert first.severity is Severity.INFO


def test_an_unread_script_under_srun_is_not_predicted_to_fail() -> None:
    # srun sets no LOCAL_RANK, but without the script nobody knows whether it reads it: the
    # network failure the log shows stays the first finding
    fs = _findings(
        NETWORK,
        launch="srun -N 2 --ntasks-per-node 4 python train.py",
        machines=load_machine("dgx-a100"),
    )
    assert fs[0].code == "RM041"
    assert not any("KeyError" in f.title or "KeyError" in f.detail for f in fs)
