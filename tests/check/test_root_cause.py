"""One finding per root cause, consequences folded in; fixes that work as written."""

from __future__ import annotations

import shlex
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rankmap.adapters.files import LocalFiles
from rankmap.check.engine import check_launch
from rankmap.inventory import load_machine

MODULO = (
    "import os, torch\n"
    "torch.cuda.set_device(int(os.environ['LOCAL_RANK']) % torch.cuda.device_count())\n"
    "torch.distributed.init_process_group('nccl')\n"
)
CMD = "CUDA_VISIBLE_DEVICES=0,1,2,3 torchrun --nproc_per_node 8 train.py"

FILES = LocalFiles()


def _errors(report: Any) -> list[Any]:
    return [f for f in report.ordered_findings() if f.severity.value == "error"]


def test_wrapped_ranks_are_one_finding_naming_the_ordinal_failure(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(MODULO)
    report = check_launch(
        shlex.split(CMD), machines=load_machine("dgx-h100"), env={}, script=script, files=FILES
    )
    errors = _errors(report)
    assert len(errors) == 1, [e.title for e in errors]
    only = errors[0]
    # led by the pair NCCL names first (the contract's example), the other GPUs folded in
    assert only.code == "RM201" and only.ranks == (0, 4)
    assert only.devices == ("0000:18:00.0",)
    assert "3 more GPU(s) shared" in only.title
    assert "ranks 3 and 7 on GPU 3 (0000:5D:00.0)" in only.detail
    assert "local ranks 4-7 would ask for cuda:4..cuda:7" in only.detail
    assert "invalid device ordinal" in only.detail


def test_ordinal_failure_names_the_duplicate_a_wrap_would_give() -> None:
    report = check_launch(shlex.split(CMD), machines=load_machine("dgx-h100"), env={})
    errors = _errors(report)
    assert len(errors) == 1
    detail = errors[0].detail
    assert "Duplicate GPU detected : rank 4 and rank 0 both on CUDA device 18000" in detail


@pytest.mark.parametrize(
    "environ",
    [
        {"LOCAL_RANK": "3"},  # torchrun: no MPI variable
        {"OMPI_COMM_WORLD_LOCAL_RANK": "3"},  # mpirun: no LOCAL_RANK
    ],
)
def test_rm903_fix_runs_as_written(environ: dict[str, str], tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        "import os, torch\n"
        "torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n"
        "torch.distributed.init_process_group('nccl')\n"
    )
    report = check_launch(
        ["mpirun", "-np", "8", "python", str(script)],
        machines=load_machine("dgx-h100"),
        env={},
        script=script,
        files=LocalFiles(),
    )
    fix = next(f.fix for f in report.ordered_findings() if f.code == "RM903")
    code = fix.split("  #", 1)[0]
    chosen: list[int] = []
    torch = SimpleNamespace(cuda=SimpleNamespace(set_device=chosen.append))
    exec(code, {"torch": torch, "os": SimpleNamespace(environ=environ)})  # noqa: S102
    assert chosen == [3]


def test_no_script_under_a_launcher_without_local_rank_is_no_error() -> None:
    """Without the script, what it reads is unknown: srun/mpirun not setting LOCAL_RANK is a
    note (RM005 with the line that works), not a predicted KeyError."""
    report = check_launch(
        ["mpirun", "-np", "8", "python", "train.py"], machines=load_machine("dgx-h100"), env={}
    )
    assert _errors(report) == []
    note = next(f for f in report.ordered_findings() if f.code == "RM005")
    assert "mpirun does not set LOCAL_RANK" in note.title
    assert 'os.environ["OMPI_COMM_WORLD_LOCAL_RANK"]' in note.detail
