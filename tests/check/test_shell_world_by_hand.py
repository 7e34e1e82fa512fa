"""A world started line by line in one shell script (``--nnodes 2 --node_rank k`` per line, each
in the background) runs on the machine that runs the script: each line starts its own node's
ranks there, and lines that do not split the GPUs meet on them (shapes written here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rankmap.adapters.files import LocalFiles
from rankmap.check.engine import check_launch
from rankmap.inventory import load_machine

DDP = (
    "import os, torch, torch.distributed as dist\n"
    "torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n"
    "dist.init_process_group('nccl')\n"
)


def _lines(cvds: tuple[str, str]) -> str:
    return (
        "".join(
            (f"CUDA_VISIBLE_DEVICES={cvd} " if cvd else "")
            + f"torchrun --nnodes 2 --node_rank {k} --nproc_per_node 4 --master_addr 127.0.0.1 "
            "--master_port 29500 train.py &\n"
            for k, cvd in enumerate(cvds)
        )
        + "wait\n"
    )


def _check(tmp_path: Path, script: str) -> Any:
    (tmp_path / "two.sh").write_text(script)
    (tmp_path / "train.py").write_text(DDP)
    return check_launch(
        ["bash", "two.sh"],
        machines=load_machine("dgx-h100"),
        env={},
        cwd=tmp_path,
        files=LocalFiles(),
    )


def test_each_line_starts_only_its_own_node_on_this_machine(tmp_path: Path) -> None:
    report = _check(tmp_path, _lines(("0,1,2,3", "4,5,6,7")))
    launch = report.sections["launch"]
    assert launch["joined"] is True and launch["world_size"] == 8 and launch["nnodes"] == 1
    ranks = report.sections["ranks"]
    assert sorted(r["rank"] for r in ranks) == list(range(8))
    assert {r["node"] for r in ranks} == {"dgx-h100-01"}
    assert len({r["pci_bus_id"] for r in ranks}) == 8
    assert not [f for f in report.ordered_findings() if f.severity.value == "error"]


def test_lines_that_do_not_split_the_gpus_put_two_ranks_on_each(tmp_path: Path) -> None:
    report = _check(tmp_path, _lines(("", "")))
    errors = [f for f in report.ordered_findings() if f.severity.value == "error"]
    assert {f.code for f in errors} == {"RM503"}
    first = errors[0]
    assert first.ranks == (0, 4)
    assert "No launch line narrows CUDA_VISIBLE_DEVICES" in first.detail
    assert "Duplicate GPU detected : rank 0 and rank 4" in first.detail
    assert "CUDA_VISIBLE_DEVICES=0,1,2,3 / CUDA_VISIBLE_DEVICES=4,5,6,7" in first.fix


def test_independent_launches_keep_their_own_wording(tmp_path: Path) -> None:
    sweep = "".join(
        f"torchrun --nproc_per_node 4 --master_port {29500 + k} train.py &\n" for k in range(2)
    )
    report = _check(tmp_path, sweep + "wait\n")
    launch = report.sections["launch"]
    assert launch["joined"] is False and launch["world_size"] == 4
    shared = [f for f in report.ordered_findings() if f.code == "RM503"]
    assert shared and "independent launches" in shared[0].title


def _check_on(tmp_path: Path, script: str, machine: str, train: str = DDP) -> Any:
    (tmp_path / "job.sh").write_text(script)
    (tmp_path / "train.py").write_text(train)
    return check_launch(
        ["bash", "job.sh"], machines=load_machine(machine), env={}, cwd=tmp_path, files=LocalFiles()
    )


def test_plain_python_lines_are_the_ranks_their_rank_variable_says(tmp_path: Path) -> None:
    const = "import torch, torch.distributed as dist\ntorch.cuda.set_device(0)\n"
    const += "dist.init_process_group('nccl')\n"
    lines = "export WORLD_SIZE=2\nRANK=0 python train.py &\nRANK=1 python train.py &\nwait\n"
    report = _check_on(tmp_path, lines, "workstation-4gpu", const)
    assert sorted(r["rank"] for r in report.sections["ranks"]) == [0, 1]
    shared = [f for f in report.ordered_findings() if f.code == "RM503"]
    assert shared and shared[0].ranks == (0, 1)


def test_more_ranks_than_the_machine_has_gpus_is_no_list_split(tmp_path: Path) -> None:
    report = _check_on(tmp_path, _lines(("", "")), "workstation-4gpu")
    shared = [f for f in report.ordered_findings() if f.code == "RM503"]
    assert shared
    assert "8 ranks for 4 GPU(s)" in shared[0].fix
    assert "CUDA_VISIBLE_DEVICES=4" not in shared[0].fix
