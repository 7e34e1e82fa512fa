"""Review 20 (a helper read the session's diff): shapes where the new readers went wrong."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_task_shell import BY_ENV, SRUN, _check, _codes, _cuda


@pytest.mark.parametrize(
    "shell",
    [["bash", "--login", "-c"], ["bash", "-o", "pipefail", "-c"], ["bash", "-lc"]],
)
def test_shell_options_before_the_command_string(tmp_path: Path, shell: list[str]) -> None:
    body = "LOCAL_RANK=${SLURM_LOCALID:-0} python train.py"
    report = _check(tmp_path, [*SRUN, *shell, body], {"train.py": BY_ENV})
    assert _codes(report) == [] and _cuda(report) == [0, 1, 2, 3]


def test_arithmetic_on_a_task_variable_is_computed_per_task(tmp_path: Path) -> None:
    body = "LOCAL_RANK=$((SLURM_LOCALID+1)) python train.py"
    report = _check(tmp_path, [*SRUN, "bash", "-c", body], {"train.py": BY_ENV})
    assert [p.cuda_index for p in report.placements] == [1, 2, 3, 4]
    assert _codes(report) == ["RM102"]


def test_a_guard_whose_return_reads_something_else_is_not_a_chain(tmp_path: Path) -> None:
    constant = (
        "import os, torch\ndef lr():\n    for k in ('LOCAL_RANK', 'SLURM_LOCALID'):\n"
        "        if k in os.environ:\n            return 0\n    return 0\n"
        "torch.cuda.set_device(lr())\n"
    )
    report = _check(tmp_path, [*SRUN, "python", "train.py"], {"train.py": constant})
    assert _cuda(report) == [0, 0, 0, 0]


def test_an_or_after_a_required_read_is_no_unset_default(tmp_path: Path) -> None:
    script = (
        "import os, torch\nlr = int(os.environ['LOCAL_RANK']) or 3\ntorch.cuda.set_device(lr)\n"
    )
    report = _check(tmp_path, [*SRUN, "python", "train.py"], {"train.py": script})
    assert _codes(report) == ["RM903"]  # srun sets no LOCAL_RANK: the read raises
