"""Impossible launch configurations and option values: one line on stderr, exit 2."""

from __future__ import annotations

import pytest
from qa_helpers import assert_one_line_error

CHECK = ["check", "--machine", "dgx-h100", "--"]


@pytest.mark.parametrize(
    "launch",
    [
        ["torchrun", "--nnodes", "3:1", "--nproc-per-node", "2", "t.py"],
        ["torchrun", "--nnodes", "0", "--nproc-per-node", "2", "t.py"],
        ["torchrun", "--nnodes", "0:2", "--nproc-per-node", "2", "t.py"],
        ["torchrun", "--nnodes", "2", "--node-rank", "5", "--nproc-per-node", "2", "t.py"],
        ["torchrun", "--nnodes", "2", "--node-rank", "-1", "--nproc-per-node", "2", "t.py"],
        ["accelerate", "launch", "--num_processes", "0", "t.py"],
        ["accelerate", "launch", "--num_processes", "-2", "t.py"],
        ["accelerate", "launch", "--num_machines", "0", "t.py"],
        ["srun", "-n", "0", "python", "t.py"],
        ["srun", "-N", "0", "python", "t.py"],
        ["mpirun", "-np", "0", "python", "t.py"],
        ["deepspeed", "--num_gpus", "0", "t.py"],
        ["deepspeed", "--num_nodes", "0", "t.py"],
    ],
    ids=lambda a: " ".join(a),
)
def test_impossible_launch_is_a_usage_error(run_cli, launch):
    res = run_cli([*CHECK, *launch])
    assert_one_line_error(res.status, res.stderr)
    assert res.stdout == ""


@pytest.mark.parametrize(
    "argv",
    [
        ["probe", "--timeout", "nan"],
        ["probe", "--timeout", "inf"],
        ["bench", "--timeout", "-1"],
        ["bench", "--timeout", "0"],
        ["bench", "--timeout", "nan"],
        ["bench", "--min-busbw", "nan"],
        ["bench", "--min-busbw", "inf"],
    ],
    ids=lambda a: " ".join(a),
)
def test_bad_numbers_are_usage_errors(run_cli, argv):
    res = run_cli(argv)
    assert_one_line_error(res.status, res.stderr)


@pytest.mark.parametrize(
    "launch",
    [
        ["torchrun", "--nnodes", "1:2", "--nproc-per-node", "2", "t.py"],
        ["torchrun", "--nnodes", "2", "--node-rank", "1", "--nproc-per-node", "2", "t.py"],
        ["accelerate", "launch", "--num_processes", "2", "t.py"],
        ["srun", "-n", "2", "python", "t.py"],
        ["mpirun", "-np", "2", "python", "t.py"],
        ["deepspeed", "--num_gpus", "2", "t.py"],
    ],
    ids=lambda a: " ".join(a),
)
def test_possible_launches_still_simulate(run_cli, launch):
    res = run_cli([*CHECK, *launch])
    assert res.status in (0, 1), res.stderr


@pytest.mark.parametrize(
    "launch",
    [
        ["mpirun", "-np", "4", "-H", "a:0,b:0", "python", "t.py"],
        ["mpirun", "-np", "4", "--hostfile", "zero.txt", "python", "t.py"],
    ],
    ids=["-H", "hostfile"],
)
def test_mpi_hosts_without_slots(run_cli, tmp_path, launch):
    (tmp_path / "zero.txt").write_text("a slots=0\nb slots=0\n")
    res = run_cli([*CHECK, *launch])
    assert_one_line_error(res.status, res.stderr)


@pytest.mark.parametrize(
    ("launch", "says"),
    [
        (["bash"], "no script"),
        (["sh", "-x", "j.sh"], "-x"),
    ],
    ids=["bare", "-x"],
)
def test_shell_launch_without_a_script_file(run_cli, launch, says):
    res = run_cli([*CHECK, *launch])
    assert_one_line_error(res.status, res.stderr)
    assert says in res.stderr
    assert "--shell '" not in res.stderr  # not "cannot read --shell '-c'"
