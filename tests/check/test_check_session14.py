"""Session 14: bash arrays and `source` in launch scripts, and the GPUs Slurm gives a job's
steps (the batch step's CUDA_VISIBLE_DEVICES, a step's own GPU request, concurrent steps).
Shapes written here."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from script_checks import check_argv

from rankmap.errors import UsageError

ONE_GPU_PER_RANK = (
    "import os, torch, torch.distributed as dist\n"
    "torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n"
    "dist.init_process_group('nccl')\n"
)


def _check(tmp_path: Path, script: str, **files: str):  # type: ignore[no-untyped-def]
    (tmp_path / "train.py").write_text(ONE_GPU_PER_RANK)
    for name, text in files.items():
        (tmp_path / name.replace("__", ".")).write_text(text)
    job = tmp_path / "job.sh"
    job.write_text(script)
    return _launch(tmp_path, [], nodes=None, shell_file=job)


def _launch(  # type: ignore[no-untyped-def]
    tmp_path: Path, argv: list[str], *, nodes: int | None = 2, shell_file: Path | None = None
):
    """``argv`` (or the script ``shell_file``) checked on DGX H100s, run from ``tmp_path``."""
    return check_argv(tmp_path, argv, nodes=nodes, shell_file=shell_file, script=None)


def _codes(report) -> set[str]:  # type: ignore[no-untyped-def]
    return {f.code for f in report.ordered_findings()}


def _bus_ids(report) -> list[str]:  # type: ignore[no-untyped-def]
    return [p.pci_bus_id for p in report.placements]


ARRAY_OVER_LINES = """#!/bin/bash
NGPU=8
CMD=(
  torchrun
  --nproc_per_node "$NGPU"   # one process per GPU
  train.py
)
CMD+=(--lr 1e-4)
"${CMD[@]}"
"""


def test_a_launch_held_in_an_array_over_several_lines_is_the_launch(tmp_path: Path) -> None:
    report = _check(tmp_path, ARRAY_OVER_LINES)
    launch = report.sections["launch"]
    assert (launch["launcher"], launch["world_size"]) == ("torchrun", 8)
    assert launch["argv"][-2:] == ["--lr", "1e-4"]  # the += appended to it
    assert not report.has_errors and len(set(_bus_ids(report))) == 8


def test_the_element_lines_of_an_array_are_not_launches_of_their_own(tmp_path: Path) -> None:
    # `torchrun` alone on a line inside the parentheses would be a launch of its own
    with pytest.raises(UsageError, match="no launch command found"):
        _check(tmp_path, ARRAY_OVER_LINES.replace('"${CMD[@]}"\n', "echo ready\n"))


def test_array_elements_by_index_length_and_loops_over_an_array(tmp_path: Path) -> None:
    script = (
        "#!/bin/bash\nGPUS=(0 1 2 3)\n"
        'for g in "${GPUS[@]}"; do\n'
        "  CUDA_VISIBLE_DEVICES=$g RANK=$g LOCAL_RANK=0 WORLD_SIZE=${#GPUS[@]} "
        "MASTER_ADDR=localhost MASTER_PORT=29500 python train.py &\n"
        "done\nwait\n"
    )
    report = _check(tmp_path, script)
    assert report.sections["launch"]["world_size"] == 4
    assert not report.has_errors and len(set(_bus_ids(report))) == 4
    by_index = "#!/bin/bash\nL=(torchrun --nproc_per_node 2)\n${L[0]} ${L[1]} ${L[2]} train.py\n"
    report = _check(tmp_path, by_index)
    assert report.sections["launch"]["world_size"] == 2


def test_an_array_the_script_never_assigned_stays_unknown(tmp_path: Path) -> None:
    report = _check(tmp_path, '#!/bin/bash\ntorchrun --nproc_per_node 8 train.py "${EXTRA[@]}"\n')
    assert report.sections["launch"]["world_size"] == 8 and not report.has_errors


def test_a_sourced_file_beside_the_script_is_read_in_its_place(tmp_path: Path) -> None:
    env = "export NGPU=4\nexport CUDA_VISIBLE_DEVICES=0,1\n"
    report = _check(
        tmp_path,
        "#!/bin/bash\nsource ./env.sh\ntorchrun --nproc_per_node $NGPU train.py\n",
        env__sh=env,
    )
    assert report.sections["launch"]["world_size"] == 4
    assert "RM201" in _codes(report)  # 4 local ranks, 2 visible GPUs: positive evidence
    dot = _check(tmp_path, "#!/bin/bash\n. env.sh\ntorchrun --nproc_per_node 2 train.py\n")
    assert not dot.has_errors and _bus_ids(dot) == _bus_ids(report)[:2]


def test_a_sourced_file_that_cannot_be_read_is_named_not_guessed(tmp_path: Path) -> None:
    script = (
        '#!/bin/bash\n. "$(dirname "$0")/env.sh"\nsource missing.sh\n'
        "torchrun --nproc_per_node 8 train.py\n"
    )
    report = _check(tmp_path, script)
    notes = " ".join(report.sections["launch"]["notes"])
    assert "Not read" in notes and "missing.sh (line 3)" in notes and "(line 2)" in notes
    assert not report.has_errors


def test_a_file_that_sources_itself_is_read_once(tmp_path: Path) -> None:
    report = _check(
        tmp_path,
        "#!/bin/bash\nsource loop.sh\ntorchrun --nproc_per_node $NGPU train.py\n",
        loop__sh="export NGPU=2\nsource loop.sh\n",
    )
    assert report.sections["launch"]["world_size"] == 2


def test_the_batch_step_sees_only_the_gpus_its_sbatch_line_asked_for(tmp_path: Path) -> None:
    script = "#!/bin/bash\n#SBATCH --gres=gpu:4\ntorchrun --nproc_per_node 8 train.py\n"
    report = _check(tmp_path, script)
    first = report.ordered_findings()[0]
    assert first.code == "RM201"
    assert "#SBATCH --gres=gpu:8" in (first.fix or "")
    assert any(
        "Slurm sets CUDA_VISIBLE_DEVICES=0,1,2,3" in n for n in report.sections["launch"]["notes"]
    )
    enough = _check(tmp_path, script.replace("gpu:4", "gpu:8"))
    assert not enough.has_errors and len(set(_bus_ids(enough))) == 8


def test_a_step_that_asks_for_gpus_gets_its_own_request_not_the_jobs(tmp_path: Path) -> None:
    script = (
        "#!/bin/bash\n#SBATCH --gres=gpu:8\n#SBATCH --ntasks-per-node=8\n"
        "srun --gpus=4 --ntasks-per-node=8 bash -c 'LOCAL_RANK=$SLURM_LOCALID python train.py'\n"
    )
    assert _check(tmp_path, script).has_errors  # 8 tasks on the step's 4 GPUs
    fits = _check(tmp_path, script.replace("--gpus=4 --ntasks-per-node=8", "--ntasks-per-node=8"))
    assert not fits.has_errors


def test_concurrent_steps_get_the_allocations_next_gpus(tmp_path: Path) -> None:
    step = "srun --gpus=4 --ntasks=1 torchrun --standalone --nproc_per_node 4 train.py"
    script = f"#!/bin/bash\n#SBATCH --gres=gpu:8\n{step} &\n{step} &\nwait\n"
    report = _check(tmp_path, script)
    assert not report.has_errors and "RM503" not in _codes(report)
    assert len(set(_bus_ids(report))) == 8  # the second step on GPUs 4-7, not 0-3 again


# --- review 45 ----------------------------------------------------------------------------------
def test_srun_flags_without_a_value_do_not_swallow_the_program(tmp_path: Path) -> None:
    step = "srun --ntasks=1 --gres=gpu:4 {flag} torchrun --standalone --nproc_per_node 4 train.py"
    for flag in ("--exact", "-K", "--kill-on-bad-exit", "--exact --quiet"):
        script = f"#!/bin/bash\n#SBATCH --gres=gpu:8\n{step.format(flag=flag)}\n"
        report = _check(tmp_path, script)
        assert report.sections["launch"]["world_size"] == 4, flag
        assert not report.has_errors, flag


def test_an_array_appended_inside_an_if_keeps_the_command(tmp_path: Path) -> None:
    script = (
        "#!/bin/bash\nNGPU=8\nCMD=(torchrun --standalone)\n"
        'if [[ "${DEBUG:-0}" == 1 ]]; then\n  CMD+=(--max_restarts 0)\nfi\n'
        'CMD+=(--nproc_per_node "$NGPU" train.py)\n"${CMD[@]}"\n'
    )
    report = _check(tmp_path, script)
    assert report.sections["launch"]["world_size"] == 8
    # the path where the branch did not run: its option is not in the command
    assert "--max_restarts" not in report.sections["launch"]["argv"]


def test_a_file_sourced_from_the_scripts_own_directory_is_read_beside_it(tmp_path: Path) -> None:
    env = "export CUDA_VISIBLE_DEVICES=0,1,2,3\n"
    for line in (
        'source "$(dirname "$0")/env.sh"',
        'SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)\nsource "$SCRIPT_DIR/env.sh"',
        '. "${BASH_SOURCE%/*}/env.sh"',
    ):
        script = f"#!/bin/bash\n{line}\ntorchrun --nproc_per_node 8 train.py\n"
        report = _check(tmp_path, script, env__sh=env)
        assert "RM201" in _codes(report), line
        notes = " ".join(report.sections["launch"]["notes"])
        assert "as env.sh beside the script" in notes, line


def test_a_launcher_run_on_every_task_shows_nodes_and_agents_apart(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(ONE_GPU_PER_RANK)
    report = _launch(
        tmp_path, shlex.split("srun -N 2 --ntasks-per-node 8 torchrun --nproc_per_node 8 train.py")
    )
    launch = report.sections["launch"]
    assert (launch["outer"], launch["outer_tasks_per_node"], launch["nnodes"]) == ("srun", 8, 16)
    from rankmap.render.check import _launch_line

    assert _launch_line(launch).startswith("launch: srun → torchrun — 2 node(s) × 8 torchrun")


# --- review 48 ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "index",
    [
        # the local rank computed from the global one: a correct script (a false RM401 before)
        'int(os.environ["RANK"]) - int(os.environ["GROUP_RANK"]) * 8',
        # the global rank computed from the local one (a silent pass before: the term was 0)
        'int(os.environ["GROUP_RANK"]) * 8 + int(os.environ["LOCAL_RANK"])',
    ],
)
def test_a_rank_combined_with_a_value_not_followed_is_unknown(tmp_path: Path, index: str) -> None:
    (tmp_path / "train.py").write_text(
        "import os, torch, torch.distributed as dist\n"
        f"torch.cuda.set_device({index})\n"
        "dist.init_process_group('nccl')\n"
    )
    report = _launch(tmp_path, ["torchrun", "--nnodes", "2", "--nproc_per_node", "8", "train.py"])
    assert not report.has_errors
    assert "RM030" in _codes(report)  # said where, as unknown


# --- review 50 ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("spec", "error"), [("1:4", False), ("2:4", False), ("3:4", True)])
def test_an_elastic_node_range_accepts_any_count_between_its_ends(
    tmp_path: Path, spec: str, error: bool
) -> None:
    (tmp_path / "train.py").write_text(ONE_GPU_PER_RANK)
    report = _launch(
        tmp_path,
        [
            "torchrun",
            "--nnodes",
            spec,
            "--nproc_per_node",
            "8",
            "--rdzv_backend",
            "c10d",
            "--rdzv_endpoint",
            "head:29400",
            "train.py",
        ],
    )
    assert ("RM920" in _codes(report)) is error


LIGHTNING = (
    "import lightning as L\nfrom model import Net\n"
    'trainer = L.Trainer(accelerator="gpu", devices={devices}, num_nodes={nodes}, strategy="ddp")\n'
    "trainer.fit(Net())\n"
)


@pytest.mark.parametrize(
    ("devices", "nodes", "argv", "error"),
    [
        ("4", "1", "torchrun --nproc-per-node 8 train.py", True),
        ("8", "1", "torchrun --nproc-per-node 8 train.py", False),
        ("8", "2", "torchrun --nnodes 2 --nproc-per-node 8 train.py", False),
        ("8", "1", "torchrun --nnodes 2 --nproc-per-node 8 train.py", True),
        ("[0, 1]", "1", "torchrun --nproc-per-node 2 train.py", False),
        ('"auto"', "1", "torchrun --nproc-per-node 8 train.py", False),  # not a number: unknown
        ("8", "args.nodes", "torchrun --nproc-per-node 8 train.py", False),
    ],
)
def test_lightning_devices_times_nodes_against_torchruns_world(
    tmp_path: Path, devices: str, nodes: str, argv: str, error: bool
) -> None:
    (tmp_path / "train.py").write_text(LIGHTNING.format(devices=devices, nodes=nodes))
    report = _launch(tmp_path, shlex.split(argv), nodes=2 if "--nnodes 2" in argv else None)
    assert ("RM941" in _codes(report)) is error
