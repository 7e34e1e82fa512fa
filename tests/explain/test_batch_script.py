"""A pasted batch script: its ``#SBATCH`` lines stay with its commands (one shell segment), and
the allocation they make (tasks and GPUs per node) reaches the simulated ``srun`` line."""

from __future__ import annotations

from paste_findings import alarms_of, findings_of

from rankmap.explain.docread import read_document
from rankmap.explain.docread_shell import with_sbatch
from rankmap.explain.document import split_document


def _paste(tasks: int, gpus: int, failure: str) -> str:
    return (
        "The job script:\n\n```\n#!/bin/bash\n#SBATCH --nodes=1\n"
        f"#SBATCH --ntasks-per-node={tasks}\n#SBATCH --gpus-per-node={gpus}\n"
        "srun python train.py\n```\n\n" + failure
    )


ORDINAL = "RuntimeError: CUDA error: invalid device ordinal\n"


def test_the_directives_and_the_launch_are_one_shell_segment() -> None:
    kinds = [s.kind for s in split_document(_paste(8, 4, ORDINAL))]
    assert kinds == ["prose", "shell", "log"]


def test_the_allocation_reaches_the_srun_line() -> None:
    doc = read_document(_paste(8, 4, ORDINAL))
    assert doc.sbatch == {"nodes": "1", "ntasks_per_node": "8", "gpus_per_node": "4"}
    assert doc.launch == "srun --nodes=1 --ntasks-per-node=8 --gpus-per-node=4 python train.py"


def test_more_tasks_than_gpus_per_node_is_decided_oversubscription() -> None:
    first = findings_of(_paste(8, 4, ORDINAL))[0]
    assert first.category == "oversubscribed"
    assert "8 processes per node on a 4-GPU machine" in first.detail


def test_a_fitting_allocation_raises_no_oversubscription() -> None:
    timeout = "[E ProcessGroupNCCL.cpp:414] Watchdog caught collective operation timeout\n"
    assert not [f for f in alarms_of(_paste(4, 4, timeout)) if f.category == "oversubscribed"]


def test_the_srun_line_keeps_its_own_options_last() -> None:
    launch = with_sbatch("srun --ntasks-per-node=2 python t.py", {"ntasks_per_node": "8"})
    assert launch == "srun --ntasks-per-node=8 --ntasks-per-node=2 python t.py"
    assert with_sbatch("torchrun t.py", {"nodes": "2"}) == "torchrun t.py"
    assert with_sbatch("srun python t.py", {"job_name": "x"}) == "srun python t.py"


def _lightning(tasks: int) -> str:
    return (
        "```bash\n#!/bin/bash\n#SBATCH --nodes=1\n"
        f"#SBATCH --ntasks-per-node={tasks}\n#SBATCH --gres=gpu:4\nsrun python train.py\n```\n\n"
        '```python\ntrainer = L.Trainer(accelerator="gpu", devices=4, strategy="ddp")\n```\n\n'
        "The job hangs after 'Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/4'.\n"
    )


def test_lightning_devices_against_slurm_tasks_per_node() -> None:
    first = findings_of(_lightning(1))[0]
    assert first.category == "launcher_config"
    assert any("--ntasks-per-node must equal devices" in r for r in [first.detail])


def test_lightning_devices_equal_to_tasks_per_node_raise_no_launcher_alarm() -> None:
    assert not [f for f in alarms_of(_lightning(4)) if f.category == "launcher_config"]
