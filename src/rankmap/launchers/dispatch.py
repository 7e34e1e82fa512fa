"""Pick the launcher simulation for a command line (or a shell script) and run it."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from rankmap.errors import UsageError
from rankmap.launchers import (
    LaunchContext,
    LaunchIssue,
    LaunchPlan,
    Proc,
    after_module,
    identify,
    python_module,
    python_script,
    unsupported,
)
from rankmap.launchers.command import env_words, parse_command

# a variable left as written in a launcher's option (``--nnodes $NNODES``)
_UNRESOLVED = re.compile(r"\$\{?[A-Za-z_]\w*\}?")


def simulate_launch(argv: Sequence[str], ctx: LaunchContext) -> LaunchPlan:
    """The :class:`LaunchPlan` of ``argv``; ``UsageError`` for an unknown launcher or a launch
    that starts no process (``deepspeed --num_gpus 0``): there is no rank map to predict.

    ``argv`` is read by :func:`~rankmap.launchers.command.parse_command` first (variables, env
    prefixes, wrappers); ``plan.env`` is the environment the launcher starts in.
    """
    if ctx.simulate is None:
        ctx = replace(ctx, simulate=simulate_launch)
    cmd = parse_command(argv, ctx.env)
    ctx = replace(ctx, env=cmd.env)
    try:
        plan = _simulate(list(cmd.argv), ctx)
    except UsageError as exc:
        if "$" not in exc.message or exc.hint:
            raise
        plan = _with_stand_ins(list(cmd.argv), ctx, exc)
    if not plan.procs and not plan.issues:
        raise UsageError(
            f"{plan.launcher}: this launch starts no processes (world size 0)",
            hint="check the process / GPU / node counts in the command",
        )
    if plan.env is None:
        plan = replace(plan, env=ctx.env)
    if cmd.wrappers:
        plan = replace(plan, wrappers=cmd.wrappers + plan.wrappers)
    if (prefix := env_words(argv, cmd.argv)) and not plan.prefix:
        plan = replace(plan, prefix=prefix)
    return plan


def _with_stand_ins(argv: list[str], ctx: LaunchContext, exc: UsageError) -> LaunchPlan:
    """The plan of a launch whose values the script computes when it runs, with stand-ins
    (:func:`assume_runtime_values`); else the error, with the variable to pass."""
    assumed = assume_runtime_values(argv, ctx.nodes)
    if assumed is not None:
        words, issue = assumed
        plan = _simulate(words, ctx)
        return replace(plan, issues=(*plan.issues, issue))
    unresolved = _UNRESOLVED.findall(exc.message)
    if not unresolved:
        raise exc
    name = unresolved[0].strip("${}")
    raise UsageError(
        exc.message,
        hint=f"${name} is set when the job runs; rankmap does not know its value here: "
        f"pass --env {name}=VALUE",
    ) from None


# torchrun options whose value a script may compute when the job runs, and what stands in for an
# unknown one: one process per visible GPU (torchrun's own `gpu`), a node rank per node (the
# map's assumption, RM804), the nodes the check is given
_RUNTIME_OPTIONS = {
    "--nproc-per-node": "gpu", "--nproc_per_node": "gpu",
    "--node-rank": None, "--node_rank": None,
    "--nnodes": "nodes",
}  # fmt: skip


def assume_runtime_values(
    argv: list[str], nodes: int | None
) -> tuple[list[str], LaunchIssue] | None:
    """``argv`` of a torchrun launch with the option values a script computes when the job runs
    (``--nproc_per_node $NGPU``, ``--node_rank ${RANK}``) replaced by stand-ins, and the info
    finding that says so (review 34: such launches were refused with exit 2); None when none."""
    # torchrun itself, or the torchrun srun / mpirun runs on every task
    start = next(
        (
            i
            for i in range(len(argv))
            if identify(argv[i:]) in ("torchrun", "torch.distributed.launch")
        ),
        None,
    )
    if start is None:
        return None
    head, argv = argv[:start], argv[start:]
    out: list[str] = list(head)
    named: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        name, eq, value = word.partition("=")
        took = name in _RUNTIME_OPTIONS and not eq and i + 1 < len(argv)
        if took:
            value = argv[i + 1]
        if name in _RUNTIME_OPTIONS and "$" in value:
            named.append(f"{name} {value}")
            stand_in = _RUNTIME_OPTIONS[name]
            if stand_in is not None:
                out.append(f"{name}={str(nodes or 1) if stand_in == 'nodes' else stand_in}")
        else:
            out += [word, value] if took else [word]
        i += 2 if took else 1
    if not named:
        return None
    names = list(dict.fromkeys(m.strip("${}") for m in _UNRESOLVED.findall(" ".join(named))))
    give = " ".join(f"--env {n}=VALUE" for n in names[:3]) or "--env NAME=VALUE"
    return out, LaunchIssue(
        "RM032",
        f"Computed when the job runs: {', '.join(named)}",
        detail="The launch script computes these values (a command's output, a function's "
        "argument, a sourced file, the pod's environment); the map assumes one process per "
        "visible GPU, a node rank of its own for every node and the nodes given (--nodes).",
        fix=f"Pass the values to check the real ones: {give}.",
        severity="info",
    )


def _simulate(rest: list[str], ctx: LaunchContext) -> LaunchPlan:
    kind = identify(rest)
    if kind is None:
        raise unsupported(rest)
    if kind == "torchrun":
        from rankmap.launchers import torchrun

        return torchrun.simulate(rest, ctx)
    if kind == "torch.distributed.launch":
        from rankmap.launchers import torchrun

        return torchrun.simulate(rest, ctx, legacy=True)
    if kind == "accelerate":
        from rankmap.launchers import accelerate

        if os.path.basename(rest[0]).startswith("python"):  # python -m accelerate.commands.launch
            rest = ["accelerate", "launch", *after_module(rest)]
        return accelerate.simulate(rest, ctx)
    if kind == "deepspeed":
        from rankmap.launchers import deepspeed

        if os.path.basename(rest[0]).startswith("python"):  # python -m deepspeed.launcher.runner
            rest = ["deepspeed", *after_module(rest)]
        return deepspeed.simulate(rest, ctx)
    if kind == "srun" and os.path.basename(rest[0]) == "sbatch":
        return _sbatch(rest, ctx)
    if kind == "srun":
        from rankmap.launchers import slurm

        return slurm.simulate(rest, ctx)
    if kind == "mpirun":
        from rankmap.launchers import mpi

        return mpi.simulate(rest, ctx)
    if kind == "horovodrun":
        from rankmap.launchers import horovod

        return horovod.simulate(rest, ctx)
    if kind == "shell":
        return _shell(rest, ctx)
    return simulate_python(rest, ctx)


def _shell(rest: list[str], ctx: LaunchContext) -> LaunchPlan:
    from rankmap.launchers import shell
    from rankmap.launchers.command import shell_body_index

    body = shell_body_index(rest)
    if body is not None:  # bash -c 'for i in 0 1; do ... & done; wait': the string is the script
        return shell.simulate_text(rest[body], Path(f"{rest[0]} -c"), ctx)
    path = rest[1] if len(rest) > 1 and not rest[0].endswith(".sh") else rest[0]
    if path == rest[0] and not path.endswith(".sh"):
        raise UsageError(f"{rest[0]}: no script given", hint="rankmap check -- bash job.sh")
    if path.startswith("-"):
        raise UsageError(
            f"{rest[0]} {path}: only a script file or a -c string is read (shell options "
            "are not simulated)",
            hint="save the commands to job.sh and run `rankmap check -- bash job.sh`",
        )
    return shell.simulate_file(path, ctx)


def _sbatch(argv: Sequence[str], ctx: LaunchContext) -> LaunchPlan:
    """``sbatch [opts] job.sh``: the script's launch lines, command-line options over #SBATCH."""
    from rankmap.errors import UsageError
    from rankmap.launchers import shell
    from rankmap.launchers.options import parse_options
    from rankmap.launchers.slurm_options import SPEC

    p = parse_options(list(argv[1:]), SPEC)
    if not p.rest:
        raise UsageError("sbatch: no batch script given", hint="sbatch job.sbatch")
    flags = {k: v if isinstance(v, str) else "1" for k, v in p.values.items()}
    return shell.simulate_shell(
        Path(p.rest[0]), replace(ctx, sbatch={**ctx.sbatch, **flags}), argv=()
    )


def simulate_python(argv: Sequence[str], ctx: LaunchContext) -> LaunchPlan:
    """``python train.py`` / ``python -m pkg.train``: one process, no launcher variables."""
    module = python_module(argv) if not argv[0].endswith(".py") else None
    idx = python_script(argv) if not argv[0].endswith(".py") else 0
    script = argv[idx] if idx is not None else None
    if module is not None:
        rest = after_module(argv)
        idx = len(argv) - len(rest) - 1  # the module's own arguments follow its name
    hosts = ctx.hosts(1)
    return LaunchPlan(
        launcher="python",
        nnodes=1,
        nproc_per_node=1,
        procs=(Proc(0, 0, 0, {}),),
        script=script,
        module=module,
        script_args=tuple(argv[(idx or 0) + 1 :]),
        sets_local_rank=False,
        argv=tuple(argv),
        hosts=tuple(hosts),
    )


def script_path(plan: LaunchPlan, ctx: LaunchContext) -> Path | None:
    """The training script of ``plan`` when it names a ``.py`` file (or module) that exists.

    A module (``torchrun -m pkg.train``) is looked up where ``python -m`` finds it first, the
    working directory (``sys.path[0]`` is the current directory under ``-m``, Python docs
    "Command line and environment", ``-m``): ``pkg/train.py`` or ``pkg/train/__main__.py``.
    """
    if plan.script and plan.script.endswith(".py"):
        p = ctx.path(plan.script)
        if ctx.exists(p):
            return p
    if plan.module and all(part.isidentifier() for part in plan.module.split(".")):
        base = Path(*plan.module.split("."))
        for candidate in (base.with_suffix(".py"), base / "__main__.py"):
            if ctx.exists(candidate):
                return ctx.path(candidate)
    return None
