"""srun / mpirun running a shell per task: the variables it sets from the task's own ones
(``bash -c 'LOCAL_RANK=$SLURM_LOCALID python train.py'``, a wrapper script). Shapes written here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rankmap.adapters.files import LocalFiles
from rankmap.check.engine import check_launch
from rankmap.inventory import load_machine
from rankmap.launchers.command import parse_command, shell_body_index

FILES = LocalFiles()
BY_ENV = "import os, torch\ntorch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n"
BY_ARG = (
    "import argparse, torch\np = argparse.ArgumentParser()\n"
    "p.add_argument('--local_rank', type=int, default=0)\n"
    "torch.cuda.set_device(p.parse_args().local_rank)\n"
)
SRUN = ["srun", "--ntasks-per-node", "4", "--gpus-per-node", "4"]


def _check(tmp_path: Path, argv: list[str], files: dict[str, str]) -> Any:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return check_launch(
        argv,
        machines=load_machine("workstation-4gpu"),
        env={},
        cwd=tmp_path,
        files=FILES,
        script=tmp_path / "train.py",
    )


def _codes(report: Any, severity: str = "error") -> list[str]:
    return [f.code for f in report.ordered_findings() if f.severity.value == severity]


def _cuda(report: Any) -> list[object]:
    return [p.cuda_index for p in report.placements]


def test_a_task_shell_mapping_the_local_rank_is_a_correct_launch(tmp_path: Path) -> None:
    for body in (
        "LOCAL_RANK=$SLURM_LOCALID python train.py",
        "export LOCAL_RANK=${SLURM_LOCALID:-0}; exec python train.py",
        "export LOCAL_RANK=$SLURM_LOCALID && cd . && python train.py",
    ):
        report = _check(tmp_path, [*SRUN, "bash", "-c", body], {"train.py": BY_ENV})
        assert _codes(report) == [], body
        assert _cuda(report) == [0, 1, 2, 3], body
        notes = " ".join(report.sections["launch"]["notes"])
        assert "each task runs bash -c" in notes and "LOCAL_RANK" in notes


def test_without_the_mapping_the_missing_local_rank_is_still_an_error(tmp_path: Path) -> None:
    report = _check(tmp_path, [*SRUN, "bash", "-c", "python train.py"], {"train.py": BY_ENV})
    assert _codes(report) == ["RM903"]


def test_a_per_task_visible_list_with_cuda_local_rank_is_the_per_process_error(
    tmp_path: Path,
) -> None:
    body = "CUDA_VISIBLE_DEVICES=$SLURM_LOCALID LOCAL_RANK=$SLURM_LOCALID python train.py"
    report = _check(tmp_path, [*SRUN, "bash", "-c", body], {"train.py": BY_ENV})
    assert _codes(report) == ["RM501"]
    assert [f.ranks for f in report.findings if f.code == "RM501"] == [(1, 2, 3)]


def test_arguments_built_from_task_variables_reach_the_script(tmp_path: Path) -> None:
    body = "python train.py --local_rank $SLURM_LOCALID"
    report = _check(tmp_path, [*SRUN, "bash", "-c", body], {"train.py": BY_ARG})
    assert _codes(report) == [] and _cuda(report) == [0, 1, 2, 3]


def test_a_wrapper_script_per_task_and_mpirun_read_alike(tmp_path: Path) -> None:
    wrap = "#!/bin/bash\nexport LOCAL_RANK=$OMPI_COMM_WORLD_LOCAL_RANK\nexec python train.py\n"
    files = {"train.py": BY_ENV, "wrap.sh": wrap}
    report = _check(tmp_path, ["mpirun", "-np", "4", "./wrap.sh"], files)
    assert _codes(report) == [] and _cuda(report) == [0, 1, 2, 3]
    report = _check(tmp_path, ["mpirun", "-np", "4", "bash", "wrap.sh"], files)
    assert _codes(report) == [] and _cuda(report) == [0, 1, 2, 3]


def test_a_variable_rankmap_cannot_resolve_is_left_unset_and_said(tmp_path: Path) -> None:
    body = "LOCAL_RANK=$MY_OWN_INDEX python train.py"
    report = _check(tmp_path, [*SRUN, "bash", "-c", body], {"train.py": BY_ENV})
    notes = " ".join(report.sections["launch"]["notes"])
    assert "LOCAL_RANK could not be resolved" in notes


def test_the_command_string_of_a_shell_is_not_expanded_before_the_shell_runs() -> None:
    argv = ["srun", "-n", "2", "bash", "-lc", "echo ${SLURM_LOCALID:-0}; python x.py"]
    assert shell_body_index(argv) == 5
    assert parse_command(argv, {}).argv[5] == argv[5]
    assert shell_body_index(["bash", "run.sh"]) is None
    assert shell_body_index(["python", "-c", "print(1)"]) is None
