"""``rankmap check [opts] -- LAUNCH...``: predict every rank's GPU before anything runs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rankmap.cli.common import add_env, add_html, add_json, add_machine, emit
from rankmap.cli.context import AppContext
from rankmap.errors import UsageError
from rankmap.render.check import render_check

if TYPE_CHECKING:
    from rankmap.model import Host

# Variables that only locate config files (accelerate's default config); taken from the real
# environment unless --env overrides them. They never change the GPU mapping.
_LOCATION_VARS = ("HOME", "HF_HOME", "XDG_CACHE_HOME")


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "check",
        help="simulate a launch command: which rank gets which physical GPU",
        description="Simulate a launch command (torchrun, python -m torch.distributed.run/launch, "
        "accelerate launch, deepspeed, srun, mpirun/mpiexec, a shell loop) on a machine without "
        "running it: every rank's environment, visible devices, selected CUDA index and physical "
        "GPU; findings, the errors the job would print, and a corrected command.",
        epilog="example: rankmap check --machine dgx-h100 --env CUDA_VISIBLE_DEVICES=0,1,2,3 -- "
        "torchrun --nproc-per-node 8 train.py",
    )
    add_machine(parser)
    parser.add_argument(
        "--nodes", type=int, metavar="N", help="number of nodes (one --machine is cloned per node)"
    )
    add_env(parser)
    parser.add_argument(
        "--inherit-env",
        action="store_true",
        help="start from this shell's environment (default: only --env values)",
    )
    parser.add_argument(
        "--script", metavar="PATH", help="training script to read statically (never run)"
    )
    parser.add_argument(
        "--shell", metavar="FILE", help="shell/sbatch script with the launch line(s)"
    )
    add_json(parser)
    add_html(parser)
    parser.add_argument("launch", nargs=argparse.REMAINDER, help="-- LAUNCH COMMAND...")


def run(args: argparse.Namespace, ctx: AppContext) -> int:
    from rankmap.check.engine import check_launch
    from rankmap.envspec import effective_env, parse_env_assignments
    from rankmap.launchers import SUPPORTED

    launch = list(args.launch)
    if launch and launch[0] != "--":
        raise UsageError(
            f"put the launch command after `--` (got {launch[0]!r}); supported launchers: "
            + ", ".join(SUPPORTED),
            hint="rankmap check --machine dgx-h100 -- torchrun --nproc-per-node 8 train.py",
        )
    launch = launch[1:]
    if not launch and not args.shell:
        raise UsageError(
            "missing launch command after `--`; supported launchers: " + ", ".join(SUPPORTED),
            hint="rankmap check --machine dgx-h100 -- torchrun --nproc-per-node 8 train.py",
        )
    overrides = parse_env_assignments(args.env)
    base = (
        dict(ctx.environ)
        if args.inherit_env
        else {k: ctx.environ[k] for k in _LOCATION_VARS if k in ctx.environ}
    )
    env = effective_env(base, overrides)
    machines = _machines(args.machine, ctx)
    report = check_launch(
        launch,
        machines=machines,
        env=env,
        script=_path(args.script, ctx),
        nodes=args.nodes,
        shell_file=_path(args.shell, ctx),
        cwd=ctx.cwd,
        files=ctx.files,
    )
    return emit(report, ctx, as_json=args.json, render_text=render_check, html=args.html)


def _path(value: str | None, ctx: AppContext) -> Path | None:
    if value is None:
        return None
    return ctx.path(value)  # read (regular files only, capped) by the engine through ctx.files


def _machines(specs: list[str], ctx: AppContext) -> list[Host]:
    from rankmap.inventory import load_machines

    if specs:
        return load_machines(specs, ctx.files)
    host, _ = ctx.local_host()
    if host is not None:
        return [host]
    from rankmap.errors import UnavailableError

    raise UnavailableError(
        "no --machine given and this machine's GPUs could not be read through NVML",
        hint="pass --machine NAME (see `rankmap machines`) or pasted nvidia-smi output",
    )
