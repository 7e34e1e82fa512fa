"""Reviews 16 and 17 (black-box: 55 explain inputs with flags, 56 launch setups): the shapes of
correct setups that were refused or called errors, restated here."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_task_shell import BY_ENV, _check, _codes, _cuda

from rankmap.errors import UsageError
from rankmap.inventory import load_machines
from rankmap.launchers.command import parse_command

SBATCH_HEAD = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gres=gpu:4\n"


def test_a_builtin_profile_named_twice_is_two_machines() -> None:
    first, second = load_machines(["workstation-4gpu", "workstation-4gpu"])
    assert first.hostname != second.hostname
    assert first.identity.boot_id != second.identity.boot_id
    assert [g.pci_bus_id for g in first.gpus] == [g.pci_bus_id for g in second.gpus]


def test_a_container_run_is_stepped_over_to_its_command() -> None:
    argv = ["docker", "run", "--rm", "-it", "--gpus", "all", "-v", "/d:/d", "--shm-size=8g",
            "img:1", "torchrun", "--nproc_per_node", "2", "train.py"]  # fmt: skip
    assert parse_command(argv, {}).argv == ("torchrun", "--nproc_per_node", "2", "train.py")


def test_an_inline_shell_loop_is_read_as_a_script(tmp_path: Path) -> None:
    loop = (
        "for i in 0 1 2 3; do CUDA_VISIBLE_DEVICES=$i LOCAL_RANK=$i RANK=$i WORLD_SIZE=4 "
        "python train.py & done; wait"
    )
    report = _check(tmp_path, ["bash", "-c", loop], {"train.py": BY_ENV})
    assert _codes(report) == ["RM501"]
    title = next(f.title for f in report.findings if f.code == "RM501")
    assert title.startswith("ranks 1-3 on ws-01")


def test_slurm_job_variables_come_from_the_sbatch_lines(tmp_path: Path) -> None:
    job = (
        SBATCH_HEAD
        + "srun torchrun --nnodes $SLURM_NNODES --nproc_per_node $SLURM_GPUS_ON_NODE train.py\n"
    )
    report = _check(tmp_path, ["bash", "job.sbatch"], {"job.sbatch": job, "train.py": BY_ENV})
    launch = report.sections["launch"]
    assert _codes(report) == [] and launch["world_size"] == 8


def test_a_command_held_in_a_variable_splits_into_words(tmp_path: Path) -> None:
    run = 'LAUNCH="torchrun --nproc_per_node 4"\n$LAUNCH train.py\n'
    report = _check(tmp_path, ["bash", "run.sh"], {"run.sh": run, "train.py": BY_ENV})
    assert _codes(report) == [] and _cuda(report) == [0, 1, 2, 3]


def test_a_node_rank_each_node_expands_itself_is_no_refusal(tmp_path: Path) -> None:
    job = SBATCH_HEAD + (
        "srun bash -c 'torchrun --nnodes $SLURM_NNODES --node_rank $SLURM_NODEID "
        "--nproc_per_node 4 --master_addr n1 --master_port 29500 train.py'\n"
    )
    report = _check(tmp_path, ["bash", "job.sbatch"], {"job.sbatch": job, "train.py": BY_ENV})
    assert _codes(report) == [] and report.sections["launch"]["world_size"] == 8


def test_a_variable_nothing_sets_says_how_to_give_it(tmp_path: Path) -> None:
    # session 13 (review 34): a stand-in and an info that names the variable, not a refusal
    report = _check(
        tmp_path, ["torchrun", "--nnodes", "$MYNODES", "train.py"], {"train.py": BY_ENV}
    )
    assumed = [f for f in report.findings if f.code == "RM032"]
    assert assumed and "--env MYNODES=" in assumed[0].fix
    # an option torchrun's stand-ins do not cover still says how to give it
    with pytest.raises(UsageError) as err:
        argv = ["accelerate", "launch", "--multi_gpu", "--num_processes", "$N", "train.py"]
        _check(tmp_path, argv, {"train.py": BY_ENV})
    assert err.value.hint and "--env N=" in err.value.hint


@pytest.mark.parametrize(
    "helper",
    [
        "def local_rank():\n"
        "    if 'LOCAL_RANK' in os.environ:\n        return int(os.environ['LOCAL_RANK'])\n"
        "    if 'OMPI_COMM_WORLD_LOCAL_RANK' in os.environ:\n"
        "        return int(os.environ['OMPI_COMM_WORLD_LOCAL_RANK'])\n    return 0\n",
        "def local_rank():\n"
        "    for key in ('LOCAL_RANK', 'OMPI_COMM_WORLD_LOCAL_RANK', 'SLURM_LOCALID'):\n"
        "        if key in os.environ:\n            return int(os.environ[key])\n    return 0\n",
    ],
)
def test_a_helper_returning_the_first_variable_set_is_followed(tmp_path: Path, helper: str) -> None:
    script = f"import os, torch\n{helper}torch.cuda.set_device(local_rank())\n"
    report = _check(tmp_path, ["mpirun", "-np", "4", "python", "train.py"], {"train.py": script})
    assert _codes(report) == [] and _cuda(report) == [0, 1, 2, 3]


def test_without_a_script_the_line_offered_for_plain_python_does_not_fail(tmp_path: Path) -> None:
    from rankmap.adapters.files import LocalFiles
    from rankmap.check.engine import check_launch

    report = check_launch(
        ["python", "missing.py"],
        machines=load_machines(["workstation-4gpu"]),
        env={},
        cwd=tmp_path,
        files=LocalFiles(),
    )
    rm005 = next(f for f in report.findings if f.code == "RM005")
    assert 'os.environ.get("LOCAL_RANK", 0)' in rm005.detail


def test_the_batch_gpu_count_reads_gres_as_srun_does() -> None:
    from rankmap.launchers.slurm_options import batch_env

    assert batch_env({"gres": "gpu:a100:4"})["SLURM_GPUS_ON_NODE"] == "4"
    assert batch_env({"gres": "gpu"})["SLURM_GPUS_ON_NODE"] == "1"  # a bare request is one
    assert "SLURM_GPUS_ON_NODE" not in batch_env({"nodes": "2"})  # no GPU request: not set
