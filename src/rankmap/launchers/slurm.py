"""``srun`` (and an sbatch script's ``#SBATCH`` options): tasks, SLURM_* variables and the
CUDA_VISIBLE_DEVICES the gres/gpu plugin gives each task (reference/launchers.md §5).

Assumptions, said in the report: the allocated GPUs of a node are its first G GPUs in NVML
order, and cgroup ``ConstrainDevices=yes`` renumbers them from 0 inside the step (gres.html).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from rankmap.errors import UsageError
from rankmap.launchers import (
    LaunchContext,
    LaunchIssue,
    LaunchPlan,
    Proc,
    check_gpus,
    check_size,
    identify,
)
from rankmap.launchers.command import parse_command, shell_join
from rankmap.launchers.options import option_value, parse_options, replace_option
from rankmap.launchers.slurm_options import SPEC, gres_gpu_text
from rankmap.launchers.task_shell import (
    TaskProgram,
    launcher_argv,
    task_procs,
    task_program,
)
from rankmap.model import Host
from rankmap.numbers import parse_int


def _count(value: str | None, name: str) -> int | None:
    if value is None:
        return None
    m = re.match(r"^\s*([0-9]+)", value)
    if not m:
        raise UsageError(f"srun: {name} expects a number, got {value!r}")
    count = parse_int(m.group(1), f"srun: {name}")
    if count < 1:
        raise UsageError(f"srun: {name} must be >= 1, got {value!r}")
    return count


# The options that size a step's GPUs (srun man page: --gres, --gpus, --gpus-per-node,
# --gpus-per-task)
_GPU_REQUEST = frozenset({"gres", "gpus", "gpus_per_node", "gpus_per_task"})


def _gpu_count(value: str | None) -> int | None:
    """``gpu:4`` / ``gpu:a100:4`` / ``a100:4`` / ``4`` -> 4, bounded (a bare ``gpu`` is 1)."""
    text = gres_gpu_text(value)
    if text is None:
        return None
    return check_gpus(parse_int(text, "srun: GPUs per task"), "srun: GPUs per task")


def simulate(argv: Sequence[str], ctx: LaunchContext) -> LaunchPlan:
    """Plan of ``srun [opts] PROGRAM ...`` (``#SBATCH`` defaults from ``ctx.sbatch``)."""
    p = parse_options(list(argv[1:]), SPEC)
    own = {k: v if isinstance(v, str) else "1" for k, v in p.values.items()}
    opts: dict[str, str] = {
        # a step that asks for GPUs itself gets what it asks for, not the job's request
        k: v
        for k, v in ctx.sbatch.items()
        if not (k in _GPU_REQUEST and own.keys() & _GPU_REQUEST)
    }
    opts.update(own)
    if not p.rest:
        raise UsageError("srun: no program given", hint="srun --ntasks-per-node 8 python train.py")
    n_nodes, per_node, tasks_on = _task_layout(opts, ctx)
    gpt = _gpu_count(opts.get("gpus_per_task"))
    bind = opts.get("gpu_bind") or (opts.get("tres_bind") or "").replace("gres/gpu:", "")
    gpn = _gpus_per_node(opts, gpt, per_node, n_nodes)
    hosts = ctx.hosts(n_nodes)
    notes = _layout_notes(n_nodes, tasks_on, gpn)
    # --gpus-per-task implies --gpu-bind=per_task:N unless a --gpu-bind/--tres-bind says
    # otherwise (sbatch/srun man page, --gpus-per-task): "none" leaves every task the step's list
    unbound = bind.split(",")[-1] == "none"
    per_task_cvd = (bool(gpt) and not unbound) or bind.startswith(
        ("single:", "map_gpu:", "map:", "per_task:")
    )
    if bind.startswith("per_task:"):
        gpt = _count(bind.split(":", 1)[1], "--gpu-bind per_task")
    tasks = _Tasks(tasks_on, n_nodes, per_node, gpn, gpt, bind, per_task_cvd)
    procs, node_env = _procs(tasks, hosts)
    inner_cmd = parse_command(p.rest, {})
    inner_env, inner = dict(inner_cmd.assigned), list(inner_cmd.argv)
    program = None
    if identify(inner) == "shell":
        program = task_program(
            inner, ctx, {k for e in (*node_env.values(), *(q.env for q in procs)) for k in e}
        )
    if program is not None:
        inner, inner_env = list(program.argv), {**inner_env, **program.env}
    kind = identify(inner)
    if program is not None and kind not in (None, "python", "shell"):
        inner = launcher_argv(program, procs, node_env)
    procs, task_notes = task_procs(procs, node_env, program, inner)
    notes += task_notes
    base_plan = LaunchPlan(
        launcher="srun",
        nnodes=n_nodes,
        nproc_per_node=per_node,
        procs=tuple(procs),
        script=_script_of(inner),
        script_args=tuple(inner[2:])
        if inner and inner[0].startswith("python")
        else tuple(inner[1:]),
        notes=tuple(notes),
        per_process_cvd=per_task_cvd and bool(gpn),
        sets_local_rank=False,
        node_env={n: {**e, **inner_env} for n, e in node_env.items()},
        argv=tuple(argv),
        hosts=tuple(hosts),
        gpus_per_task=None if unbound else gpt,
        gpus_per_node=gpn,
        task_labels=p.flag("label"),
    )
    if kind in (None, "python", "shell"):
        return base_plan
    plan = _nested(base_plan, inner, kind, ctx, node_env, per_node, {**inner_env})
    if program is None or not program.own_host_master:
        return plan
    if option_value(inner, ("--nnodes", "--num_machines", "--num-machines")) == "1":
        # one single-node job per node, each at its own address: independent runs (seeds,
        # sweeps), not one rendezvous that waits for nodes (review 57)
        note = f"srun starts one single-node job on each of the {n_nodes} nodes ({program.where})."
        kept = tuple(i for i in plan.issues if i.code != "RM920")
        return replace(plan, issues=kept, notes=(*plan.notes, note))
    if n_nodes > 1:
        return replace(plan, issues=(*plan.issues, _own_host_master(program, n_nodes)))
    return plan


def _own_host_master(program: TaskProgram, n_nodes: int) -> LaunchIssue:
    """Every node's task shell expands ``$(hostname)`` to itself: each node's launcher hosts
    its own store and waits for a world that never comes (reference/launchers.md §1: every
    node must be given the same rendezvous address)."""
    return LaunchIssue(
        "RM906",
        f"each of the {n_nodes} nodes takes itself as the rendezvous host "
        f"({program.own_host_master} in {program.where}, expanded on every node)",
        detail="The task's shell runs on every node and expands the address there: each node's "
        "launcher starts its own store and waits for the other nodes, which wait at theirs; "
        "the rendezvous times out.",
        fix="compute the address once, in the batch script, and pass it in: "
        'MASTER=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1), then '
        "--master_addr=$MASTER (outside the single quotes) or export MASTER_ADDR=$MASTER",
        severity="error",
    )


@dataclass(frozen=True)
class _Tasks:
    """The step's task layout and GPU binding, as srun resolved them."""

    tasks_on: list[int]
    n_nodes: int
    per_node: int
    gpn: int | None
    gpt: int | None
    bind: str
    per_task_cvd: bool


def _task_layout(opts: Mapping[str, str], ctx: LaunchContext) -> tuple[int, int, list[int]]:
    """(nodes, tasks per node, tasks on each node) from --nodes/--ntasks/--ntasks-per-node."""
    n_nodes = _count(opts.get("nodes"), "--nodes") or ctx.nodes or 1
    ntasks = _count(opts.get("ntasks"), "--ntasks")
    per_node = _count(opts.get("ntasks_per_node"), "--ntasks-per-node")
    if ntasks:
        # --ntasks takes precedence and --ntasks-per-node is the most per node (srun man page,
        # --ntasks-per-node): the tasks spread over the step's nodes (-N 2 -n 2: one each)
        spread = -(-ntasks // n_nodes)
        per_node = min(per_node, spread) if per_node else spread
    if per_node is None:
        per_node = 1
    check_size(n_nodes * per_node, "srun")
    return n_nodes, per_node, _distribute(n_nodes, per_node, ntasks)


def _gpus_per_node(
    opts: Mapping[str, str], gpt: int | None, per_node: int, n_nodes: int
) -> int | None:
    """GPUs per node: --gres / --gpus-per-node, else from --gpus-per-task or --gpus."""
    gpn = _gpu_count(opts.get("gres")) or _gpu_count(opts.get("gpus_per_node"))
    if gpn is None and gpt:
        gpn = gpt * per_node
    if gpn is None and opts.get("gpus"):
        gpn = -(-(_gpu_count(opts["gpus"]) or 0) // n_nodes)
    return gpn


def _layout_notes(n_nodes: int, tasks_on: Sequence[int], gpn: int | None) -> list[str]:
    notes = [
        f"Slurm: {n_nodes} node(s), tasks per node {tasks_on}"
        + (f", {gpn} GPU(s) per node (assumed to be the node's first {gpn})" if gpn else "")
    ]
    if gpn is None:
        notes.append(
            "no GPU requested (--gres/--gpus*): assuming every GPU of the node is visible "
            "(NOTE: depends on the cluster's cgroup ConstrainDevices; unverified)."
        )
    return notes


def _procs(t: _Tasks, hosts: Sequence[Host]) -> tuple[list[Proc], dict[int, dict[str, str]]]:
    """Every task with its SLURM_* variables, and each node's step environment."""
    total = sum(t.tasks_on)
    procs: list[Proc] = []
    node_env: dict[int, dict[str, str]] = {}
    rank = 0
    for node, k in enumerate(t.tasks_on):
        node_env[node] = _step_env(t, node, rank, total, hosts[node])
        for lr in range(k):
            env = {"SLURM_PROCID": str(rank), "SLURM_LOCALID": str(lr)}
            if t.gpn and t.per_task_cvd:
                env["CUDA_VISIBLE_DEVICES"] = _task_cvd(lr, t.gpt, t.bind, t.gpn)
            procs.append(Proc(rank, lr, node, env, node_rank=node))
            rank += 1
    return procs, node_env


def _step_env(t: _Tasks, node: int, rank: int, total: int, host: Host) -> dict[str, str]:
    step: dict[str, str] = {
        "SLURM_NODEID": str(node),
        "SLURM_NNODES": str(t.n_nodes),
        "SLURM_JOB_NUM_NODES": str(t.n_nodes),
        "SLURM_NTASKS": str(total),
        "SLURM_NPROCS": str(total),
        "SLURM_NTASKS_PER_NODE": str(t.per_node),
        "SLURM_LOCALID": "0",
        "SLURM_PROCID": str(rank),
    }
    if t.gpn:
        g = min(t.gpn, len(host.gpus))
        step["SLURM_STEP_GPUS"] = ",".join(str(i) for i in range(g))
        step["SLURM_GPUS_ON_NODE"] = str(g)
        step["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(g))
    return step


def _distribute(n_nodes: int, per_node: int, ntasks: int | None) -> list[int]:
    if ntasks is None:
        return [per_node] * n_nodes
    out = []
    left = ntasks
    for _ in range(n_nodes):
        k = min(per_node, left)
        out.append(k)
        left -= k
    return out


def _task_cvd(lr: int, gpt: int | None, bind: str, gpn: int) -> str:
    if bind.startswith(("map_gpu:", "map:")):
        ids = [t for t in bind.split(":", 1)[1].split(",") if t]
        return ids[lr % len(ids)] if ids else "0"
    if bind.startswith("single:"):
        per = _count(bind.split(":", 1)[1], "--gpu-bind single") or 1
        return str(min(lr // per, gpn - 1))
    k = gpt or 1
    return ",".join(str(i) for i in range(lr * k, (lr + 1) * k))


def _script_of(inner: Sequence[str]) -> str | None:
    for a in inner:
        if a.endswith(".py"):
            return a
    return None


def _nested(
    outer: LaunchPlan,
    inner: Sequence[str],
    kind: str,
    ctx: LaunchContext,
    node_env: Mapping[int, Mapping[str, str]],
    per_node: int,
    inner_env: Mapping[str, str],
) -> LaunchPlan:
    """srun running a launcher: one launcher per task (K per node) on each node."""
    env0 = {
        **ctx.env,
        **{k: v for k, v in node_env[0].items() if not k.startswith("SLURM_")},
        **inner_env,
    }
    sub = replace(
        ctx,
        env=env0,
        nodes=outer.nnodes * per_node,
        machines=list(outer.hosts),
    )
    if per_node > 1 and kind == "torchrun":
        from rankmap.launchers import torchrun

        args = torchrun.parse_torchrun_args(torchrun._strip_program(inner), env0)
        sub = replace(sub, nodes=outer.nnodes)
        plan = torchrun.plan_from_args(
            args, sub, launcher="torchrun", argv=inner, agents_per_node=per_node
        )
    else:
        plan = ctx.launch(inner, replace(sub, nodes=outer.nnodes))
    issues = [_every_node(i, outer.nnodes) if i.code == "RM804" else i for i in plan.issues]
    if per_node > 1:
        issues.insert(
            0,
            LaunchIssue(
                "RM904",
                f"srun starts {per_node} {kind} agents per node, each starting "
                f"{plan.nproc_per_node} workers: {per_node * plan.nproc_per_node} processes per node",
                detail="Every srun task runs the inner launcher, and every launcher starts its own workers.",
                fix=_one_task_fix(outer.argv, inner),
                ranks=tuple(pr.rank for pr in plan.procs),
            ),
        )
    merged_env = {
        n: {**dict(node_env.get(n, {}).items()), **plan.node_env.get(n, {})}
        for n in range(len(plan.hosts))
    }
    return replace(
        plan,
        issues=tuple(issues),
        notes=outer.notes + plan.notes,
        node_env=merged_env,
        argv=outer.argv,
        outer="srun",
        outer_tasks_per_node=per_node,
        gpus_per_task=outer.gpus_per_task,
        gpus_per_node=outer.gpus_per_node,
    )


def _every_node(issue: LaunchIssue, nnodes: int) -> LaunchIssue:
    """A fixed node rank in a command srun runs on each node: not a possibility but what
    happens — every node registers with that node rank (review 34)."""
    if nnodes < 2:
        return issue
    return replace(
        issue,
        severity="error",
        detail=f"srun runs this command once on each of the {nnodes} nodes, so every node "
        "registers with the same node rank and claims the same global ranks: the rendezvous "
        "waits for node ranks nobody brings, or ranks collide. (In a batch script, "
        "$SLURM_NODEID outside single quotes is expanded once, by the batch shell on the "
        "first node: 0 everywhere.)",
    )


def _one_task_fix(argv: Sequence[str], inner: Sequence[str]) -> str:
    new = replace_option(argv, ("--ntasks-per-node",), "1")
    if new is None:
        return shell_join(["srun", "--ntasks-per-node=1", *inner])
    return shell_join(new)
