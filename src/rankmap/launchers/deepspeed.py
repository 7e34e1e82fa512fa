"""The ``deepspeed`` launcher: hostfile, ``--include``/``--exclude``, ``--num_gpus``/``--num_nodes``,
and CUDA_VISIBLE_DEVICES translated into ``--include=localhost:<CVD>`` (reference/launchers.md §4).

Every worker on a node gets ``CUDA_VISIBLE_DEVICES`` = the node's slot list, ``RANK`` (contiguous
per node in hostfile order), ``LOCAL_RANK``, ``WORLD_SIZE``, ``CROSS_RANK``, ``CROSS_SIZE``,
``LOCAL_SIZE`` and the argument ``--local_rank=N`` (unless ``--no_local_rank``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from rankmap.errors import InputError
from rankmap.launchers import LaunchContext, LaunchIssue, LaunchPlan, Proc, check_size
from rankmap.launchers.options import OptSpec, int_value, parse_options
from rankmap.numbers import int_or_none, is_digits
from rankmap.visibility import resolve_visible

_VALUE = {
    "hostfile": True,
    "include": True,
    "exclude": True,
    "num_nodes": True,
    "num_gpus": True,
    "num_accelerators": True,
    "min_elastic_nodes": True,
    "max_elastic_nodes": True,
    "master_port": True,
    "master_addr": True,
    "node_rank": True,
    "launcher": True,
    "launcher_args": True,
    "ssh_port": True,
    "venv_script": True,
    "comment": True,
    "bind_core_list": True,
    "enable_each_rank_log": True,
    "autotuning": True,
    "module": False,
    "no_python": False,
    "no_local_rank": False,
    "no_ssh_check": False,
    "no_ssh": False,
    "force_multi": False,
    "save_pid": False,
    "elastic_training": False,
    "bind_cores_to_rank": False,
}
SPEC = OptSpec(
    "deepspeed",
    _VALUE,
    {"-H": "hostfile", "-i": "include", "-e": "exclude"},
    strict=False,
    guess_values=True,
)
DEFAULT_HOSTFILE = "/job/hostfile"
_LINE = re.compile(r"^(\S+)\s+slots=(\d+)")


def parse_hostfile(text: str, where: str) -> dict[str, int]:
    """``host slots=N`` lines (``#`` comments) -> {host: slots}; InputError names the bad line."""
    pool: dict[str, int] = {}
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = _LINE.match(line)
        if not m:
            raise InputError(
                f"{where}:{no}: Hostfile contains a bad entry: {raw.strip()}, unable to proceed with launching"
            )
        if m.group(1) in pool:
            raise InputError(
                f"{where}:{no}: Hostfile contains multiple entries for {m.group(1)}, unable to proceed with launching"
            )
        slots = int_or_none(m.group(2))
        if slots is None or slots > 4096:
            raise InputError(f"{where}:{no}: slots={m.group(2)[:20]} is not a GPU count")
        pool[m.group(1)] = slots
    if not pool:
        raise InputError(
            f"{where}:1: Hostfile is empty or not formatted correctly, unable to proceed with launching."
        )
    return pool


def parse_node_spec(spec: str, pool: dict[str, list[int]]) -> dict[str, list[int]]:
    """``worker-0@worker-1:0,2`` against the pool; ValueError with DeepSpeed's message."""
    out: dict[str, list[int]] = {}
    for part in spec.split("@"):
        part = part.strip()
        if not part:
            continue
        host, _, slots = part.partition(":")
        if host not in pool:
            raise ValueError(f"Hostname '{host}' not found in hostfile")
        if not slots:
            out[host] = list(pool[host])
            continue
        chosen = []
        for s in slots.split(","):
            s = s.strip()
            slot = int_or_none(s) if is_digits(s) else None
            if slot is None or slot not in pool[host]:
                raise ValueError(f"No slot '{s[:20]}' specified on host '{host}'")
            chosen.append(slot)
        out[host] = chosen
    return out


def simulate(argv: Sequence[str], ctx: LaunchContext) -> LaunchPlan:
    """Plan of ``deepspeed [opts] train.py ...``."""
    p = parse_options(list(argv[1:]), SPEC)
    issues: list[LaunchIssue] = []
    notes: list[str] = []
    env = dict(ctx.env)
    hostfile = p.get("hostfile", DEFAULT_HOSTFILE) or DEFAULT_HOSTFILE
    # NOTE: DeepSpeed treats a --hostfile that is not a regular file (a FIFO, a device) as
    # missing and runs locally; rankmap refuses it instead (exit 2, docs/cli.md "Limits"): the
    # user named it, and reading a FIFO could block.
    have_hostfile = ctx.exists(hostfile) or (
        bool(p.get("hostfile")) and ctx.files.exists(ctx.path(hostfile))
    )
    if have_hostfile:
        counts = parse_hostfile(ctx.read(hostfile, "hostfile"), hostfile)
    else:
        if p.get("hostfile"):
            notes.append(f"hostfile {hostfile} not found.")
        host0 = ctx.hosts(1)[0]
        counts = {"localhost": len(resolve_visible(host0, env).devices)}
        notes.append(
            "Unable to find hostfile, will proceed with training with local resources only "
            f"(localhost, {counts['localhost']} slot(s) = torch.cuda.device_count())."
        )
    pool = {h: list(range(n)) for h, n in counts.items()}
    include, exclude = p.get("include"), p.get("exclude")
    num_gpus = p.get("num_gpus") or p.get("num_accelerators")
    num_nodes = p.get("num_nodes")
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None:
        if not (have_hostfile or include or exclude or num_gpus or num_nodes):
            include = f"localhost:{cvd}"
            notes.append(f"CUDA_VISIBLE_DEVICES={cvd} is turned into --include={include}.")
        else:
            issues.append(
                LaunchIssue(
                    "RM922",
                    f"deepspeed ignores CUDA_VISIBLE_DEVICES={cvd}",
                    detail="A hostfile, --include/--exclude, --num_gpus or --num_nodes was given, so the "
                    "runner uses its own GPU selection. If you want to use CUDA_VISIBLE_DEVICES don't "
                    "pass any of these arguments to deepspeed.",
                    fix=f"deepspeed --include localhost:{cvd} ... (drop --num_gpus/--num_nodes)",
                )
            )
        env.pop("CUDA_VISIBLE_DEVICES", None)
    try:
        active = _select(pool, include, exclude, num_nodes, num_gpus)
    except ValueError as exc:
        fix = None
        if cvd is not None and include == f"localhost:{cvd}":
            fix = f"unset CUDA_VISIBLE_DEVICES; deepspeed --include localhost:{cvd} {' '.join(p.rest)}"
        # the runner refuses the pair, whatever the slots (runner.py parse_inclusion_exclusion)
        both = (include or exclude) and (num_nodes or num_gpus)
        if both:
            chosen = f"--include {include}" if include else f"--exclude {exclude}"
            fix = f"drop --num_gpus/--num_nodes: {chosen} alone picks the GPUs"
        return _stopped(
            argv, ctx, issues, notes, str(exc), include, p.rest, fix, both_given=bool(both)
        )
    plan = _plan(argv, ctx, p.flag("no_local_rank"), active, issues, notes, have_hostfile, p.rest)
    # the runner gives every worker the store's address (reference/launchers.md §4): --master_addr
    # (else the first host's address, here its name) and --master_port (default 29500)
    master = {
        "MASTER_ADDR": p.get("master_addr") or next(iter(active), "localhost"),
        "MASTER_PORT": p.get("master_port") or "29500",
    }
    plan = replace(plan, procs=tuple(replace(pr, env={**pr.env, **master}) for pr in plan.procs))
    from_machine = not (have_hostfile or include or num_gpus)
    return replace(plan, nproc_from_machine=from_machine) if from_machine else plan


def _select(
    pool: dict[str, list[int]],
    include: str | None,
    exclude: str | None,
    num_nodes: str | None,
    num_gpus: str | None,
) -> dict[str, list[int]]:
    if include and exclude:
        raise ValueError("include_str and exclude_str are mutually exclusive.")
    if (include or exclude) and (num_nodes or num_gpus):
        raise ValueError("Cannot specify num_nodes/gpus with include/exclude")
    if include:
        return parse_node_spec(include, pool)
    active = {h: list(s) for h, s in pool.items()}
    if exclude:
        for host, slots in parse_node_spec(exclude, pool).items():
            if slots == pool[host]:
                active.pop(host, None)
            else:
                active[host] = [s for s in active[host] if s not in slots]
    if num_nodes:
        n = int_value("deepspeed", "--num_nodes", num_nodes, 1)
        active = dict(list(active.items())[:n])
    if num_gpus:
        g = int_value("deepspeed", "--num_gpus", num_gpus, 1)
        check_size(g * len(active), "deepspeed")
        active = {h: list(range(g)) for h in active}
    return active


def _plan(
    argv: Sequence[str],
    ctx: LaunchContext,
    no_local_rank: bool,
    active: dict[str, list[int]],
    issues: list[LaunchIssue],
    notes: list[str],
    have_hostfile: bool,
    rest: list[str],
) -> LaunchPlan:
    names = list(active)
    hosts = ctx.hosts(len(names))
    if have_hostfile and len(ctx.machines) == 1:  # clones take the hostfile's names
        hosts = [
            h
            if n == "localhost"
            else replace(h, hostname=n, identity=replace(h.identity, hostname=n))
            for h, n in zip(hosts, names, strict=False)
        ]
    world = sum(len(s) for s in active.values())
    procs: list[Proc] = []
    node_env: dict[int, dict[str, str]] = {}
    rank = 0
    for node, name in enumerate(names):
        slots = active[name]
        node_env[node] = {"CUDA_VISIBLE_DEVICES": ",".join(str(s) for s in slots)}
        for lr in range(len(slots)):
            env = {
                "RANK": str(rank),
                "LOCAL_RANK": str(lr),
                "WORLD_SIZE": str(world),
                "CROSS_RANK": str(node),
                "CROSS_SIZE": str(len(names)),
                "LOCAL_SIZE": str(len(slots)),
            }
            args = () if no_local_rank else (f"--local_rank={lr}",)
            procs.append(Proc(rank, lr, node, env, args, node_rank=node))
            rank += 1
    notes.append(f"WORLD INFO DICT: {active}")
    nproc = max((len(s) for s in active.values()), default=0)
    return LaunchPlan(
        launcher="deepspeed",
        nnodes=len(names),
        nproc_per_node=nproc,
        procs=tuple(procs),
        script=rest[0] if rest else None,
        script_args=tuple(rest[1:]),
        issues=tuple(issues),
        notes=tuple(notes),
        local_rank_arg=None if no_local_rank else "--local_rank",
        node_env=node_env,
        argv=tuple(argv),
        hosts=tuple(hosts),
    )


def _stopped(
    argv: Sequence[str],
    ctx: LaunchContext,
    issues: list[LaunchIssue],
    notes: list[str],
    message: str,
    include: str | None,
    rest: Sequence[str],
    fix: str | None,
    *,
    both_given: bool = False,
) -> LaunchPlan:
    line = f"ValueError: {message}"
    detail = (
        f"--include={include} " if include else ""
    ) + "names resources the runner does not have."
    if both_given:
        detail = (
            "The runner takes either --include/--exclude or --num_gpus/--num_nodes, never both."
        )
    issues.append(
        LaunchIssue(
            "RM921",
            f"deepspeed stops before starting any rank: {message}",
            detail=detail,
            fix=fix
            or "name only existing slots, e.g. deepspeed --include localhost:0,1 ... (slots are "
            "0..torch.cuda.device_count()-1 as the runner counts them)",
            predicted=(line,),
        )
    )
    return LaunchPlan(
        launcher="deepspeed",
        nnodes=1,
        nproc_per_node=0,
        procs=(),
        script=rest[0] if rest else None,
        script_args=tuple(rest[1:]),
        issues=tuple(issues),
        notes=tuple(notes),
        argv=tuple(argv),
        hosts=tuple(ctx.hosts(1)),
    )
