"""A script that reads a variable its launcher does not set (a Slurm or MPI variable under a
plain ``python``, LOCAL_RANK under srun) fails with a KeyError on that name: a launcher
configuration cause, not a program error (shapes written here)."""

from __future__ import annotations

import pytest
from paste_findings import alarms_of, findings_of


@pytest.mark.parametrize(
    "line",
    [
        "KeyError: 'SLURM_PROCID'",
        'KeyError: "OMPI_COMM_WORLD_LOCAL_RANK"',
        "KeyError: 'MASTER_ADDR'",
        "ERROR:root:Failed to initialize distributed environment: 'SLURM_JOB_NODELIST'",
    ],
)
def test_a_missing_launcher_variable_is_a_launcher_cause(line: str) -> None:
    text = f"# Training on my workstation fails\n\nI run `python train.py` on two GPUs.\n\n```\n{line}\n```\n"
    first = findings_of(text)[0]
    assert first.category == "launcher_config"
    assert first.severity.value in ("warning", "error")


def test_a_key_error_of_the_program_is_no_launcher_cause() -> None:
    text = "# Crash when loading\n\n```\nKeyError: 'model.encoder.weight'\n```\n"
    assert not alarms_of(text)
