"""``mpirun`` / ``mpiexec``: Open MPI and MPICH/Hydra (reference/launchers.md §6).

Open MPI sets ``OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE/NODE_RANK``; Hydra sets
``PMI_RANK``, ``PMI_SIZE``, ``MPI_LOCALRANKID``, ``MPI_LOCALNRANKS``. Neither sets ``RANK``,
``LOCAL_RANK``, ``WORLD_SIZE`` or CUDA_VISIBLE_DEVICES. Ranks fill nodes in order (by slot).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from rankmap.errors import InputError, UsageError
from rankmap.launchers import (
    LaunchContext,
    LaunchIssue,
    LaunchPlan,
    Proc,
    check_size,
    identify,
)
from rankmap.launchers.command import parse_command, shell_join
from rankmap.launchers.task_shell import task_procs, task_program
from rankmap.model import Host
from rankmap.numbers import is_digits, parse_int

_ONE = {
    "np",
    "n",
    "c",
    "N",
    "npernode",
    "map_by",
    "H",
    "host",
    "hosts",
    "hostfile",
    "machinefile",
    "f",
    "x",
    "ppn",
    "bind_to",
    "rank_by",
    "wdir",
    "prefix",
    "rankfile",
    "display_map",
    "output_filename",
    "launch_agent",
    "iface",
    "bootstrap",
    "env_list",
}
_TWO = {"mca", "gmca", "genv", "env"}
_FLAGS = {
    "oversubscribe",
    "allow_run_as_root",
    "tag_output",
    "report_bindings",
    "genvall",
    "genvnone",
    "display_allocation",
    "verbose",
    "v",
    "q",
    "quiet",
    "bind_to_core",
    "noprefix",
    "l",
}
_HYDRA_ONLY = {"ppn", "f", "hosts", "genv", "genvall", "genvnone", "env", "iface", "bootstrap"}


@dataclass
class MpiArgs:
    """What decides ranks: process count, per-node count, hosts with slots, exported env."""

    np: int | None = None
    ppn: int | None = None
    hosts: list[tuple[str, int | None]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    hydra: bool = False
    hostfile: str | None = None
    rest: list[str] = field(default_factory=list)


def parse_mpi_args(argv: Sequence[str], prog: str) -> MpiArgs:
    """Options of mpirun/mpiexec up to the program."""
    a = MpiArgs(hydra=prog in ("mpiexec.hydra",))
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("-"):
            a.rest = list(argv[i:])
            return a
        name = arg.lstrip("-").replace("-", "_")
        if name in _TWO:
            if i + 2 >= len(argv):
                raise UsageError(f"{prog}: {arg} expects two values")
            if name in ("genv", "env"):
                a.env[argv[i + 1]] = argv[i + 2]
            a.hydra = a.hydra or name in _HYDRA_ONLY
            i += 3
            continue
        key, _, inline = name.partition("=")
        if key in _ONE:
            value = inline if "=" in name else (argv[i + 1] if i + 1 < len(argv) else None)
            if value is None:
                raise UsageError(f"{prog}: {arg} expects a value")
            _apply(a, key, value, prog)
            a.hydra = a.hydra or key in _HYDRA_ONLY
            i += 1 if "=" in name else 2
            continue
        a.hydra = a.hydra or key in _HYDRA_ONLY
        i += 1  # a flag (known or not)
    return a


def _apply(a: MpiArgs, key: str, value: str, prog: str) -> None:
    if key in ("np", "n", "c"):
        a.np = _int(value, f"-{key}", prog)
    elif key in ("N", "npernode", "ppn"):
        a.ppn = _int(value, f"-{key}", prog)
    elif key == "map_by":
        m = re.match(r"ppr:([0-9]+):node", value)
        if m:
            a.ppn = _int(m.group(1), "--map-by ppr", prog)
    elif key in ("H", "host", "hosts"):
        for tok in value.split(","):
            host, _, slots = tok.partition(":")
            a.hosts.append((host, _int(slots, f"-H {tok}", prog) if is_digits(slots) else None))
    elif key in ("hostfile", "machinefile", "f"):
        a.hostfile = value
    elif key == "x":
        name, eq, val = value.partition("=")
        if eq:
            a.env[name] = val


def _int(value: str, name: str, prog: str) -> int:
    """A process count (``-np``, ``-N``...): a positive integer, else a usage error."""
    number = parse_int(value, f"{prog}: {name}")
    if number < 1:
        raise UsageError(f"{prog}: {name} must be >= 1, got {number}")
    check_size(number, f"{prog}: {name}")
    return number


def parse_mpi_hostfile(text: str, where: str) -> list[tuple[str, int | None]]:
    """``host slots=N`` (Open MPI) or ``host:N`` (Hydra) lines; InputError names the line."""
    out: list[tuple[str, int | None]] = []
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.match(
            r"^([\w.\-]+)(?::(\d+))?(?:\s+slots\s*=\s*(\d+))?(?:\s+max[_-]slots\s*=\s*\d+)?$", line
        )
        if not m:
            raise InputError(
                f"{where}:{no}: not a hostfile line (expected `host slots=N` or `host:N`): {raw.strip()}"
            )
        n = m.group(2) or m.group(3)
        out.append((m.group(1), _int(n, f"{where}:{no}: slots", "hostfile") if n else None))
    if not out:
        raise InputError(f"{where}:1: hostfile has no hosts")
    return out


def simulate(argv: Sequence[str], ctx: LaunchContext) -> LaunchPlan:
    """Plan of ``mpirun [opts] PROGRAM ...``."""
    import os

    prog = os.path.basename(argv[0])
    a = parse_mpi_args(list(argv[1:]), prog)
    if not a.rest:
        raise UsageError(f"{prog}: no program given", hint=f"{prog} -np 8 python train.py")
    if a.hostfile:
        a.hosts = parse_mpi_hostfile(ctx.read(a.hostfile, "hostfile"), a.hostfile)
    check_size(a.np or 0, prog)
    check_size(sum(s or 0 for _, s in a.hosts), prog)
    if a.hosts and all(s == 0 for _, s in a.hosts):
        raise UsageError(f"{prog}: every host has 0 slots, so no process can start")
    layout = _layout(a, ctx)
    check_size(sum(layout), prog)  # -ppn N without -np
    hosts = _named_hosts(a, layout, ctx)
    world = sum(layout)
    procs = ranks_in_order(layout, HYDRA_VARS if a.hydra else OMPI_VARS)
    flavour = "MPICH/Hydra" if a.hydra else "Open MPI"
    inner_cmd = parse_command(a.rest, {})
    inner_env, inner = dict(inner_cmd.assigned), list(inner_cmd.argv)
    notes = [f"{flavour}: {world} rank(s) over {len(layout)} node(s) {layout}."]
    program = None
    if identify(inner) == "shell":
        program = task_program(inner, ctx, {k for q in procs for k in q.env})
    if program is not None:
        inner, inner_env = list(program.argv), {**inner_env, **program.env}
    node_env = {n: {**a.env, **inner_env} for n in range(len(layout))}
    kind = identify(inner)
    procs, task_notes = task_procs(procs, node_env, program, inner)
    notes += task_notes
    plan = LaunchPlan(
        launcher="mpirun",
        nnodes=len(layout),
        nproc_per_node=max(layout),
        procs=tuple(procs),
        script=next((t for t in inner if t.endswith(".py")), None),
        notes=tuple(notes),
        sets_local_rank=False,
        node_env=node_env,
        argv=tuple(argv),
        hosts=tuple(hosts),
        fix_hints={"local_var": "MPI_LOCALRANKID" if a.hydra else "OMPI_COMM_WORLD_LOCAL_RANK"},
    )
    if kind in (None, "python", "shell"):
        return plan
    fix = _one_launcher_per_node(list(argv[: len(argv) - len(a.rest)]), a, len(layout))
    return _nested(plan, inner, ctx, max(layout), fix)


_COUNT_OPTS = ("np", "n", "c", "N", "npernode", "ppn", "map_by")


def _one_launcher_per_node(options: list[str], a: MpiArgs, nnodes: int) -> str:
    """The mpirun command starting one inner launcher per node (its own options kept, the
    process counts replaced: ``-np <nodes> --npernode 1``, MPICH ``-n <nodes> -ppn 1``)."""
    kept: list[str] = []
    skip = False
    for tok in options[1:]:
        if skip:
            skip = False
            continue
        key, eq, _ = tok.lstrip("-").replace("-", "_").partition("=")
        if tok.startswith("-") and key in _COUNT_OPTS:
            skip = not eq
            continue
        kept.append(tok)
    counts = (
        ["-n", str(nnodes), "-ppn", "1"] if a.hydra else ["-np", str(nnodes), "--npernode", "1"]
    )
    return shell_join([options[0], *counts, *kept, *a.rest])


# The variables each MPI flavour sets per rank, in order, and which count each one carries.
HYDRA_VARS = (
    ("PMI_RANK", "rank"),
    ("PMI_SIZE", "world"),
    ("MPI_LOCALRANKID", "local_rank"),
    ("MPI_LOCALNRANKS", "local_size"),
)
OMPI_VARS = (
    ("OMPI_COMM_WORLD_RANK", "rank"),
    ("OMPI_COMM_WORLD_SIZE", "world"),
    ("OMPI_COMM_WORLD_LOCAL_RANK", "local_rank"),
    ("OMPI_COMM_WORLD_LOCAL_SIZE", "local_size"),
    ("OMPI_COMM_WORLD_NODE_RANK", "node"),
    ("OMPI_UNIVERSE_SIZE", "world"),
)


def _named_hosts(a: MpiArgs, layout: Sequence[int], ctx: LaunchContext) -> list[Host]:
    """The hosts, renamed after -H/hostfile names when one machine stands for all of them."""
    hosts = ctx.hosts(len(layout))
    named = [n for n, _ in a.hosts]
    if named and len(named) >= len(layout) and len(ctx.machines) == 1:
        hosts = [
            replace(h, hostname=named[i], identity=replace(h.identity, hostname=named[i]))
            for i, h in enumerate(hosts)
        ]
    return hosts


def ranks_in_order(layout: Sequence[int], variables: Sequence[tuple[str, str]]) -> list[Proc]:
    """Ranks filling nodes in order, each with the launcher's rank variables: (name, what) pairs,
    ``what`` one of rank, world, local_rank, local_size, node, nodes."""
    world = sum(layout)
    procs: list[Proc] = []
    rank = 0
    for node, k in enumerate(layout):
        for lr in range(k):
            counts = {
                "rank": rank,
                "world": world,
                "local_rank": lr,
                "local_size": k,
                "node": node,
                "nodes": len(layout),
            }
            env = {name: str(counts[what]) for name, what in variables}
            procs.append(Proc(rank, lr, node, env, node_rank=node))
            rank += 1
    return procs


def _layout(a: MpiArgs, ctx: LaunchContext) -> list[int]:
    if a.ppn:
        n_nodes = -(-a.np // a.ppn) if a.np else (len(a.hosts) or ctx.nodes or 1)
        total = a.np or a.ppn * n_nodes
        return [min(a.ppn, total - i * a.ppn) for i in range(n_nodes)]
    if a.hosts:
        slots = [s if s is not None else 1 for _, s in a.hosts]
        total = a.np or sum(slots)
        out: list[int] = []
        for s in slots:
            take = min(s, total - sum(out))
            if take <= 0:
                break
            out.append(take)
        if (
            sum(out) < total
        ):  # oversubscribe: the rest round-robin (NOTE: Open MPI refuses without --oversubscribe)
            i = 0
            while sum(out) < total:
                out[i % len(out)] += 1
                i += 1
        return out
    n_nodes = ctx.nodes or 1
    total = a.np or 1
    per = -(-total // n_nodes)
    return [min(per, total - i * per) for i in range(n_nodes) if total - i * per > 0]


def _nested(
    outer: LaunchPlan, inner: Sequence[str], ctx: LaunchContext, per_node: int, fix: str
) -> LaunchPlan:
    sub = replace(
        ctx,
        env={**ctx.env, **outer.node_env.get(0, {})},
        nodes=outer.nnodes,
        machines=list(outer.hosts),
    )
    plan = ctx.launch(inner, sub)
    issues = list(plan.issues)
    if per_node > 1:
        issues.insert(
            0,
            LaunchIssue(
                "RM904",
                f"mpirun starts {per_node} launchers per node, each starting {plan.nproc_per_node} workers",
                detail="Every MPI rank runs the inner launcher, and every launcher starts its own workers.",
                fix=fix,
            ),
        )
    return replace(
        plan,
        issues=tuple(issues),
        notes=outer.notes + plan.notes,
        argv=outer.argv,
        outer="mpirun",
        outer_tasks_per_node=per_node,
    )
