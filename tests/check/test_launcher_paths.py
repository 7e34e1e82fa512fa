"""A framework's launch helpers read different launchers' variables and pass the local rank to
one ``launch(local_rank=...)``: each helper is the path of its own launcher, so the process reads
whichever variable its launcher sets (shapes written here)."""

from __future__ import annotations

from pathlib import Path

from rankmap.adapters.files import LocalFiles
from rankmap.check.engine import check_launch
from rankmap.inventory import load_machine

FRAMEWORK = """\
import os
import torch
import torch.distributed as dist


def launch(local_rank, rank, world_size):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    torch.cuda.set_device(local_rank)


def launch_from_openmpi():
    launch(
        int(os.environ["OMPI_COMM_WORLD_LOCAL_RANK"]),
        int(os.environ["OMPI_COMM_WORLD_RANK"]),
        int(os.environ["OMPI_COMM_WORLD_SIZE"]),
    )


def launch_from_torch():
    launch(int(os.environ["LOCAL_RANK"]), int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
"""
TRAIN = "import fw\nfw.launch_from_torch()\n"


def _errors(tmp_path: Path, argv: list[str]) -> list[str]:
    (tmp_path / "fw.py").write_text(FRAMEWORK)
    (tmp_path / "train.py").write_text(TRAIN)
    report = check_launch(
        argv, machines=load_machine("dgx-h100"), env={}, cwd=tmp_path, files=LocalFiles()
    )
    return [f.code for f in report.ordered_findings() if f.severity.value == "error"]


def test_the_torch_path_under_torchrun_reads_local_rank(tmp_path: Path) -> None:
    assert _errors(tmp_path, ["torchrun", "--nproc_per_node", "8", "train.py"]) == []


def test_a_launcher_that_sets_none_of_the_variables_still_fails(tmp_path: Path) -> None:
    assert "RM903" in _errors(tmp_path, ["python", "train.py"])


def test_the_torch_path_under_mpirun_fails_as_the_program_would(tmp_path: Path) -> None:
    """Only the helper the script calls is a path: ``launch_from_openmpi`` is never named."""
    errors = _errors(tmp_path, ["mpirun", "-np", "8", "python", "train.py"])
    assert "RM903" in errors


def test_helpers_the_script_names_are_all_paths(tmp_path: Path) -> None:
    """A script that may take either helper (chosen at run time) reads whichever is set."""
    (tmp_path / "fw.py").write_text(FRAMEWORK)
    both = "import os, fw\nif 'OMPI_COMM_WORLD_RANK' in os.environ:\n    fw.launch_from_openmpi()\n"
    both += "else:\n    fw.launch_from_torch()\n"
    (tmp_path / "train.py").write_text(both)
    for argv in (
        ["torchrun", "--nproc_per_node", "8", "train.py"],
        ["mpirun", "-np", "8", "python", "train.py"],
    ):
        report = check_launch(
            argv, machines=load_machine("dgx-h100"), env={}, cwd=tmp_path, files=LocalFiles()
        )
        assert [f.code for f in report.ordered_findings() if f.severity.value == "error"] == []
