"""Review 22 (a black-box review of log + flags, 55 cases written by a helper): the shapes it
found, restated here."""

from __future__ import annotations

from pathlib import Path

from rankmap.adapters.files import LocalFiles
from rankmap.adapters.local import explain_files
from rankmap.check.engine import check_launch
from rankmap.inventory import load_machine

ORDINAL = "RuntimeError: CUDA error: invalid device ordinal\n"
DDP = (
    "import os, torch, torch.distributed as dist\n"
    "torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n"
    "dist.init_process_group('nccl')\n"
)


def _explain(tmp_path: Path, log: str, launch: str, machine: str) -> list[tuple[str, str, str]]:
    p = tmp_path / "job.log"
    p.write_text(log)
    report = explain_files([p], launch=launch, machines=load_machine(machine))
    return [(f.code, f.category, f.severity.value) for f in report.ordered_findings()]


def test_more_processes_than_mig_instances_a_process_sees_is_mig_in_check(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(DDP)
    report = check_launch(
        ["torchrun", "--nproc_per_node=7", "train.py"],
        machines=load_machine("a100-mig"),
        env={},
        cwd=tmp_path,
        files=LocalFiles(),
    )
    first = report.ordered_findings()[0]
    assert (first.code, first.category, first.severity.value) == ("RM602", "mig", "error")


def test_an_ordinal_failure_on_a_mig_machine_is_mig(tmp_path: Path) -> None:
    found = _explain(tmp_path, ORDINAL, "torchrun --nproc_per_node=7 train.py", "a100-mig")
    assert found[0][1:] == ("mig", "error")


def test_a_shared_gpu_on_a_mig_machine_is_mig(tmp_path: Path) -> None:
    log = (
        "h:1:1 [0] NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 7000\n"
    )
    found = _explain(tmp_path, log, "torchrun --nproc_per_node=2 train.py", "a100-mig")
    assert found[0][1] == "mig"


def test_an_ordinal_failure_of_a_launch_that_fits_the_gpus_is_not_oversubscription(
    tmp_path: Path,
) -> None:
    found = _explain(tmp_path, ORDINAL, "torchrun --nproc_per_node=4 t.py", "workstation-4gpu")
    assert found[0][1] != "oversubscribed"
    # one node: the global rank is the local one, so it is no alternative
    assert "global_rank_as_device" not in [c for _, c, _ in found]
    # too many for the GPUs stays oversubscription
    found = _explain(tmp_path, ORDINAL, "torchrun --nproc_per_node=8 t.py", "workstation-4gpu")
    assert found[0][1] == "oversubscribed"
