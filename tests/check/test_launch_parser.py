"""The one launch parser: env prefixes, `env -u`, ${VAR:-d}, wrappers, torchrun's prefixes; and
check, `explain --launch` and run's preflight reading a command the same way."""

from __future__ import annotations

import argparse
import io
import shlex
from pathlib import Path
from typing import Any

import pytest

from rankmap.adapters.files import LocalFiles
from rankmap.check.engine import check_launch, run_check
from rankmap.cli.context import AppContext
from rankmap.cli.run import preflight
from rankmap.errors import UsageError
from rankmap.explain.engine import build_context
from rankmap.inventory import load_machine
from rankmap.launchers.command import expand_word, parse_command
from rankmap.launchers.torchrun import parse_torchrun_args

SEED = "python -m torch.distributed.launch --nproc_per_node 8 train.py"

FILES = LocalFiles()


def _summary(report: Any) -> list[tuple[str, str, tuple[int, ...]]]:
    return [(f.code, f.title, f.ranks) for f in report.ordered_findings()]


def test_expansions_follow_the_shell() -> None:
    env = {"N": "4", "EMPTY": ""}
    assert expand_word("${N}", env) == "4"
    assert expand_word("$N,x", env) == "4,x"
    assert expand_word("${GPUS:-8}", env) == "8"
    assert expand_word("${EMPTY:-8}", env) == "8"
    assert expand_word("${EMPTY-8}", env) == ""
    assert expand_word("${N:+set}", env) == "set"
    assert expand_word("${MISSING}", env) == "${MISSING}"  # unknown: left as written


def test_prefixes_unset_and_wrappers() -> None:
    cmd = parse_command(
        shlex.split(
            "A=1 env -u CUDA_VISIBLE_DEVICES B=2 nohup numactl --cpunodebind=0 -m 0 "
            "taskset -c 0-7 time -p stdbuf -oL uv run --with x conda run -n env1 "
            "torchrun --nproc-per-node 8 t.py"
        ),
        {"CUDA_VISIBLE_DEVICES": "0,1", "HOME": "/root"},
    )
    assert cmd.argv[:3] == ("torchrun", "--nproc-per-node", "8")
    assert cmd.env == {"HOME": "/root", "A": "1", "B": "2"}
    assert cmd.unset == {"CUDA_VISIBLE_DEVICES"}
    assert cmd.wrappers == (
        "env",
        "nohup",
        "numactl",
        "taskset",
        "time",
        "stdbuf",
        "uv run",
        "conda run",
    )
    assert parse_command(["env", "-i", "X=1", "torchrun"], {"Y": "2"}).env == {"X": "1"}
    assert parse_command(["uv", "run", "-m", "torch.distributed.run", "t.py"], {}).argv == (
        "python",
        "-m",
        "torch.distributed.run",
        "t.py",
    )


def test_torchrun_prefixes_as_argparse() -> None:
    args = parse_torchrun_args(["--nnode", "2", "--nproc_per", "4", "t.py"], {})
    assert (args.nnodes, args.nproc_per_node) == ("2", "4")
    with pytest.raises(UsageError, match="ambiguous option: --n"):
        parse_torchrun_args(["--n", "2", "t.py"], {})


def test_seed_scenario_inline_prefix_equals_env() -> None:
    machines = load_machine("dgx-h100")
    inline = check_launch(
        ["CUDA_VISIBLE_DEVICES=0,1,2,3", *shlex.split(SEED)], machines=machines, env={}
    )
    given = check_launch(
        shlex.split(SEED), machines=machines, env={"CUDA_VISIBLE_DEVICES": "0,1,2,3"}
    )
    assert inline.has_errors
    assert _summary(inline) == _summary(given)
    assert inline.ordered_findings()[0].code == "RM201"
    assert inline.placements == given.placements


def test_shell_export_and_unset(tmp_path: Path) -> None:
    job = tmp_path / "job.sh"
    job.write_text(
        "#!/bin/bash\nexport CUDA_VISIBLE_DEVICES=0,1,2,3\nNGPU=8\n"
        "torchrun --nproc_per_node ${NGPU:-1} train.py\n"
    )
    machines = load_machine("dgx-h100")
    report = check_launch([], machines=machines, env={}, shell_file=job, cwd=tmp_path, files=FILES)
    assert report.ordered_findings()[0].code == "RM201"
    job.write_text(job.read_text().replace("NGPU=8\n", "NGPU=8\nunset CUDA_VISIBLE_DEVICES\n"))
    report = check_launch([], machines=machines, env={}, shell_file=job, cwd=tmp_path, files=FILES)
    assert not report.has_errors and len(report.placements) == 8


# (command, --env) pairs: inline prefixes, env, wrappers, expansions, torchrun prefixes
TABLE = [
    ("CUDA_VISIBLE_DEVICES=0,1,2,3 " + SEED, {}),
    (SEED, {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}),
    ("env CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc-per-node 4 train.py", {}),
    (
        "env -u CUDA_VISIBLE_DEVICES torchrun --nproc-per-node 8 train.py",
        {"CUDA_VISIBLE_DEVICES": "0"},
    ),
    ("uv run torchrun --nnode 1 --nproc_per 8 train.py", {}),
    ("conda run -n e1 --no-capture-output torchrun --nproc-per-node ${NGPU:-4} train.py", {}),
    ("nohup time -p stdbuf -oL numactl --cpunodebind=0 torchrun --nproc-per-node 8 train.py", {}),
    ("taskset -c 0-31 poetry run python -u -m torch.distributed.run --nproc-per-node 2 t.py", {}),
    ("NCCL_HOSTID=x srun -N 2 --ntasks-per-node 8 python train.py", {}),
    ("mpirun -np 8 env CUDA_VISIBLE_DEVICES=0,1,2,3 python train.py", {}),
    ("OMP_NUM_THREADS=1 torchrun --standalone --nproc_per_node=8 -m pkg.train --lr 1", {}),
    ("python -m torch.distributed.run --nproc-per-node 4 --module pkg.train", {}),
]


def test_torchrun_module_flag_is_torchruns_own() -> None:
    """``torchrun -m pkg.train``: torchrun's ``--module`` flag, not an interpreter's ``-m``."""
    from rankmap.launchers.torchrun import _strip_program, parse_torchrun_args

    argv = ["torchrun", "--standalone", "--nproc_per_node=8", "-m", "pkg.train", "--lr", "1"]
    args = parse_torchrun_args(_strip_program(argv), {})
    assert (args.module, args.script, args.script_args) == (True, "pkg.train", ("--lr", "1"))
    assert args.nproc_per_node == "8" and args.standalone
    legacy = ["python", "-m", "torch.distributed.run", "--nproc-per-node", "4", "-m", "pkg.t"]
    args = parse_torchrun_args(_strip_program(legacy), {})
    assert (args.module, args.script, args.nproc_per_node) == (True, "pkg.t", "4")


@pytest.mark.parametrize(("command", "env"), TABLE)
def test_check_explain_and_preflight_agree(
    command: str, env: dict[str, str], tmp_path: Path
) -> None:
    machines = load_machine("dgx-h100")
    argv = shlex.split(command)
    checked = run_check(argv, machines=machines, env=env, cwd=tmp_path, files=FILES)
    ctx, note = build_context(command, env, machines, None, validate=True, files=FILES)
    assert note is None and ctx.launch is not None
    # explain builds the same typed plan and takes check's placements and findings from it
    assert ctx.launch.plan == checked.plan
    assert list(ctx.launch.placements) == checked.report.placements
    assert list(ctx.launch.check_findings) == checked.report.ordered_findings()
    app = AppContext(io.StringIO(), io.StringIO(), io.StringIO(), environ={}, cwd=tmp_path)
    report, skipped = preflight(argparse.Namespace(launch=argv, script=None), app, machines, env)
    assert skipped is None and report is not None
    assert report.placements == checked.report.placements
    assert _summary(report) == _summary(checked.report)


def test_explain_without_machine_keeps_only_what_the_command_states() -> None:
    ctx, _ = build_context("torchrun --nproc-per-node gpu t.py", {}, (), None)
    assert ctx.launch is not None and ctx.launch.launcher == "torchrun"
    assert ctx.launch.nproc_per_node is None  # the stand-in's GPU count is not a fact
    assert ctx.launch.check_findings == ()
    ctx, _ = build_context(
        "env -u CUDA_VISIBLE_DEVICES torchrun t.py", {"CUDA_VISIBLE_DEVICES": "0"}, (), None
    )
    assert "CUDA_VISIBLE_DEVICES" not in ctx.env
