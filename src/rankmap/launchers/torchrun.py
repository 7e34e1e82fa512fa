"""torchrun, ``python -m torch.distributed.run`` and the legacy ``torch.distributed.launch``.

Sources (reference/launchers.md §1-2): torch/distributed/run.py (argument parser, ``PET_*``
fallbacks), elastic agent (``LOCAL_RANK``, ``RANK`` contiguous per node, ``LOCAL_WORLD_SIZE``,
``GROUP_RANK``), ``--virtual-local-rank`` (CVD per worker), launch.py (``--local-rank=N``
appended unless ``--use-env``; PyTorch >= 2.0 spelling).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rankmap.errors import UsageError
from rankmap.launchers import (
    LaunchContext,
    LaunchIssue,
    LaunchPlan,
    Proc,
    after_module,
    check_size,
)
from rankmap.launchers.options import OptSpec, int_value, parse_options
from rankmap.visibility import resolve_visible

_VALUE = {
    "nnodes": True,
    "nproc_per_node": True,
    "rdzv_backend": True,
    "rdzv_endpoint": True,
    "rdzv_id": True,
    "rdzv_conf": True,
    "standalone": False,
    "max_restarts": True,
    "monitor_interval": True,
    "start_method": True,
    "event_log_handler": True,
    "role": True,
    "module": False,
    "no_python": False,
    "run_path": False,
    "log_dir": True,
    "redirects": True,
    "tee": True,
    "local_ranks_filter": True,
    "duplicate_stdout_filters": True,
    "duplicate_stderr_filters": True,
    "node_rank": True,
    "master_addr": True,
    "master_port": True,
    "local_addr": True,
    "logs_specs": True,
    "numa_binding": True,
    "signals_to_handle": True,
    "shutdown_timeout": True,
    "virtual_local_rank": False,
}
TORCHRUN = OptSpec(
    "torchrun", _VALUE, {"-m": "module", "-r": "redirects", "-t": "tee"}, abbrev=True
)
LEGACY = OptSpec(
    "torch.distributed.launch",
    {**_VALUE, "use_env": False},
    {"-m": "module", "-r": "redirects", "-t": "tee"},
    abbrev=True,
)


@dataclass(frozen=True)
class TorchrunArgs:
    """The parts of a torchrun command line that decide ranks and devices."""

    nnodes: str
    nproc_per_node: str
    node_rank: int | None  # None: not given (default 0)
    rdzv_backend: str
    standalone: bool
    virtual_local_rank: bool
    use_env: bool
    master_port: str | None
    rdzv_endpoint: str | None
    module: bool
    no_python: bool
    script: str | None
    script_args: tuple[str, ...]
    master_addr: str | None = None


def parse_torchrun_args(
    argv: Sequence[str], env: Mapping[str, str], *, legacy: bool = False
) -> TorchrunArgs:
    """torchrun options (after ``torchrun`` / ``-m torch.distributed.run``), PET_* fallbacks."""
    p = parse_options(argv, LEGACY if legacy else TORCHRUN)

    def val(name: str, default: str) -> str:
        got = p.get(name)
        if got is not None:
            return got
        return env.get(f"PET_{name.upper()}", default)

    def flag(name: str) -> bool:
        return p.flag(name) or env.get(f"PET_{name.upper()}", "") not in ("", "0", "False")

    node_rank_raw = p.get("node_rank", env.get("PET_NODE_RANK"))
    rest = p.rest
    return TorchrunArgs(
        nnodes=val("nnodes", "1:1"),
        nproc_per_node=val("nproc_per_node", "1"),
        node_rank=None
        if node_rank_raw is None
        else int_value("torchrun", "--node-rank", node_rank_raw, 0),
        rdzv_backend=val("rdzv_backend", "static"),
        standalone=flag("standalone"),
        virtual_local_rank=flag("virtual_local_rank"),
        use_env=p.flag("use_env"),
        master_port=p.get("master_port", env.get("PET_MASTER_PORT")),
        rdzv_endpoint=p.get("rdzv_endpoint", env.get("PET_RDZV_ENDPOINT")),
        module=flag("module"),
        no_python=flag("no_python"),
        script=rest[0] if rest else None,
        script_args=tuple(rest[1:]),
        master_addr=p.get("master_addr", env.get("PET_MASTER_ADDR")),
    )


def nnodes_of(spec: str) -> int:
    """``2`` -> 2, ``1:4`` (elastic) -> 4 (the maximum is what a full job reaches)."""
    return nnodes_range(spec)[1]


def nnodes_range(spec: str) -> tuple[int, int]:
    """``2`` -> (2, 2), ``1:4`` -> (1, 4): the node counts the rendezvous accepts (an elastic
    c10d rendezvous completes with MIN nodes once its last-call timeout passes).

    torchrun itself refuses ``MIN:MAX`` unless ``0 < MIN <= MAX`` (an assertion in
    ``config_from_args``), so ``0`` and ``3:1`` are usage errors here too.
    """
    lo, _, hi = spec.partition(":")
    try:
        low, high = int(lo), int(hi or lo)
    except ValueError:
        raise UsageError(f"torchrun: --nnodes expects N or MIN:MAX, got {spec!r}") from None
    if not 0 < low <= high:
        raise UsageError(f"torchrun: --nnodes {spec}: needs 0 < MIN <= MAX")
    return low, high


def simulate(argv: Sequence[str], ctx: LaunchContext, *, legacy: bool = False) -> LaunchPlan:
    """Plan for ``torchrun ...`` / ``python -m torch.distributed.run|launch ...`` (argv[0] included)."""
    rest = _strip_program(argv)
    args = parse_torchrun_args(rest, ctx.env, legacy=legacy)
    if args.script is None:
        raise UsageError("torchrun: no training script given", hint="torchrun ... train.py")
    return plan_from_args(
        args, ctx, launcher="torch.distributed.launch" if legacy else "torchrun", argv=argv
    )


def _strip_program(argv: Sequence[str]) -> list[str]:
    return after_module(argv)


def plan_from_args(
    args: TorchrunArgs,
    ctx: LaunchContext,
    *,
    launcher: str,
    argv: Sequence[str],
    extra_env: Mapping[str, str] | None = None,
    agents_per_node: int = 1,
) -> LaunchPlan:
    """Processes of a torchrun launch on ``nnodes`` nodes (``agents_per_node`` > 1: nested)."""
    nnodes = 1 if args.standalone else nnodes_of(args.nnodes)
    n_agents = (
        ctx.node_count(nnodes) * agents_per_node if agents_per_node > 1 else ctx.node_count(nnodes)
    )
    hosts = ctx.hosts(max(1, n_agents // agents_per_node))
    base = {**ctx.env, **(extra_env or {})}
    issues: list[LaunchIssue] = []
    notes: list[str] = []
    nproc = _nproc(args.nproc_per_node, hosts[0], base, notes)
    _check_node_rank(args, nnodes)
    low, _ = (1, 1) if args.standalone else nnodes_range(args.nnodes)
    # (review 50: 2 nodes against an elastic --nnodes 1:4 was a false RM920)
    fits = low <= (ctx.nodes or 0) <= nnodes
    if agents_per_node == 1 and ctx.nodes and not fits and not args.standalone:
        issues.append(_node_count_mismatch(args, nnodes, ctx.nodes))
    check_size(n_agents * nproc, "torchrun")
    cvd_parent = base.get("CUDA_VISIBLE_DEVICES")
    procs = _procs(args, launcher, n_agents, agents_per_node, nproc, cvd_parent)
    if args.virtual_local_rank:
        issues += _virtual_issues(cvd_parent, nproc)
    # torchrun hands --node-rank to the static rendezvous only (run.py: `if args.rdzv_backend ==
    # "static": rdzv_configs["rank"] = args.node_rank`); c10d numbers the nodes itself (review 38)
    static = args.rdzv_backend == "static" and not args.standalone
    if args.node_rank is not None and n_agents > 1 and agents_per_node == 1 and static:
        issues.append(_same_node_rank(args, n_agents))
    local_arg = None
    if launcher == "torch.distributed.launch" and not args.use_env:
        local_arg = "--local-rank"
        notes.append(
            "torch.distributed.launch appends --local-rank=N to the script's arguments "
            "(PyTorch >= 2.0 spelling; before 2.0 it was --local_rank=N)."
        )
    store = worker_store_port(args, base) if launcher in _OWN_RUN else (None, False)
    return LaunchPlan(
        launcher=launcher,
        nnodes=n_agents,
        nproc_per_node=nproc,
        procs=tuple(procs),
        script=None if args.module else args.script,
        module=args.script if args.module else None,
        script_args=args.script_args,
        issues=tuple(issues),
        notes=tuple(notes),
        per_process_cvd=args.virtual_local_rank,
        local_rank_arg=local_arg,
        argv=tuple(argv),
        hosts=tuple(hosts),
        node_env={i: dict(extra_env) for i in range(len(hosts))} if extra_env else {},
        nproc_from_machine=args.nproc_per_node in ("gpu", "auto"),
        store_port=store[0],
        store_port_default=store[1],
    )


# launchers that go through torch/distributed/run.py's run() (accelerate builds its own call)
_OWN_RUN = ("torchrun", "torch.distributed.launch")


def worker_store_port(args: TorchrunArgs, env: Mapping[str, str]) -> tuple[str | None, bool]:
    """(MASTER_PORT torchrun's workers get, whether it is torch 2.13's single-node default).
    Every worker is a client of that store (``TORCHELASTIC_USE_AGENT_STORE=True``,
    reference/pytorch_nccl.md §7.1). ``""``: picked when torchrun starts. torch 2.13's run.py:
    ``--standalone`` and ``c10d`` share the rendezvous' store server, started on port 0
    (dynamic_rendezvous.py, PRs #128096/#135957; ``TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1`` turns
    the sharing off: rank 0 serves MASTER_PORT itself); a single-node ``static`` launch with no
    ``--master-port`` / ``--rdzv-endpoint`` is switched to c10d on ``localhost:0`` (PR #175699,
    February 2026: before it, 29500); otherwise static serves ``--master-port``, else the port of
    ``--rdzv-endpoint`` (launcher/api.py ``_get_addr_and_port``), else 29500.
    ``None``: not a store every worker joins (other backends, sharing turned off)."""
    if args.standalone or args.rdzv_backend == "c10d":
        shared = env.get("TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "0") != "1"
        return ("" if shared else None), False
    if args.rdzv_backend != "static":
        return None, False
    if args.master_port is None and not args.rdzv_endpoint and nnodes_of(args.nnodes) == 1:
        return "", True
    return args.master_port or endpoint(args.rdzv_endpoint)[1] or "29500", False


def _check_node_rank(args: TorchrunArgs, nnodes: int) -> None:
    if args.node_rank is not None and not args.standalone and not 0 <= args.node_rank < nnodes:
        raise UsageError(
            f"torchrun: --node-rank {args.node_rank} is outside 0..{nnodes - 1} "
            f"for --nnodes {args.nnodes}"
        )


def _node_count_mismatch(args: TorchrunArgs, nnodes: int, job_nodes: int) -> LaunchIssue:
    return LaunchIssue(
        "RM920",
        f"torchrun waits for {args.nnodes.replace(':', '..')} node(s) but the job runs on "
        f"{job_nodes}",
        detail=f"--nnodes {args.nnodes} while {job_nodes} nodes start the command: the "
        "rendezvous never completes (or starts with the wrong node count); an elastic MIN:MAX "
        "accepts any count between the two.",
        fix=f"torchrun --nnodes {job_nodes} ...",
    )


def _procs(
    args: TorchrunArgs,
    launcher: str,
    n_agents: int,
    agents_per_node: int,
    nproc: int,
    cvd_parent: str | None,
) -> list[Proc]:
    """``nproc`` workers per agent, each with the variables torchrun's agent sets."""
    procs: list[Proc] = []
    for agent in range(n_agents):
        node = agent // agents_per_node
        node_rank = agent  # each node is assumed to get its own --node-rank (see RM804)
        for lr in range(nproc):
            rank = node_rank * nproc + lr
            env = _worker_env(rank, lr, node_rank, nproc, n_agents) | _master_env(args)
            if args.virtual_local_rank:
                env["LOCAL_RANK"] = "0"
                env["CUDA_VISIBLE_DEVICES"] = _virtual_cvd(cvd_parent, lr)
            procs.append(
                Proc(rank, lr, node, env, _local_rank_arg(args, launcher, lr), node_rank=node_rank)
            )
    return procs


def _master_env(args: TorchrunArgs) -> dict[str, str]:
    """MASTER_ADDR / MASTER_PORT every worker gets (reference/launchers.md §1): the options, the
    rendezvous endpoint, else torchrun's defaults (127.0.0.1, 29500; a port picked when torchrun
    starts is one the simulation cannot know, and 29500 stands for it)."""
    host, port = endpoint(args.rdzv_endpoint)
    return {
        "MASTER_ADDR": args.master_addr or host or "127.0.0.1",
        "MASTER_PORT": args.master_port or port or "29500",
    }


def endpoint(value: str | None) -> tuple[str | None, str | None]:
    """(host, port) of ``--rdzv-endpoint`` (``HOST[:PORT]``, ``[v6]:PORT``, a bare v6 address):
    None for a part it does not state (torch/distributed/elastic/rendezvous/utils.py
    parse_rendezvous_endpoint)."""
    text = (value or "").strip()
    if not text:
        return None, None
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, port = text.split(":")
    else:  # a name, or an IPv6 address without brackets: no port
        host, port = text, ""
    return host or None, port if port.isdecimal() else None


def _worker_env(rank: int, lr: int, node_rank: int, nproc: int, n_agents: int) -> dict[str, str]:
    world = n_agents * nproc
    return {
        "LOCAL_RANK": str(lr),
        "RANK": str(rank),
        "GROUP_RANK": str(node_rank),
        "LOCAL_WORLD_SIZE": str(nproc),
        "WORLD_SIZE": str(world),
        "GROUP_WORLD_SIZE": str(n_agents),
        "ROLE_RANK": str(rank),
        "ROLE_WORLD_SIZE": str(world),
        "TORCHELASTIC_RUN_ID": "none",
    }


def _local_rank_arg(args: TorchrunArgs, launcher: str, lr: int) -> tuple[str, ...]:
    if launcher == "torch.distributed.launch" and not args.use_env:
        return (f"--local-rank={lr}",)
    return ()


def _nproc(spec: str, host: object, env: Mapping[str, str], notes: list[str]) -> int:
    from rankmap.model import Host

    assert isinstance(host, Host)
    if spec in ("gpu", "auto"):
        # a visible list the script computes is unknown: the machine's GPUs stand in
        known = {k: v for k, v in env.items() if "$" not in v}
        n = len(resolve_visible(host, known).devices)
        notes.append(
            f"--nproc-per-node {spec}: torch.cuda.device_count() = {n} on {host.hostname}."
        )
        # no visible GPU is the job's failure, not bad input: one process stands in and the
        # map says it sees none (RM203) instead of refusing the check (review 56)
        return max(n, 1)
    if spec in ("cpu", "xpu"):
        raise UsageError(
            f"torchrun --nproc-per-node {spec}: rankmap check simulates CUDA GPU jobs only"
        )
    try:
        n = int(spec)
    except ValueError:
        raise UsageError(
            f"torchrun: --nproc-per-node expects an int, gpu, auto or cpu, got {spec!r}"
        ) from None
    if n < 1:
        raise UsageError(f"torchrun: --nproc-per-node must be >= 1, got {n}")
    return n


def _virtual_cvd(parent: str | None, lr: int) -> str:
    if parent is None:
        return str(lr)
    entries = [e.strip() for e in parent.split(",") if e.strip()]
    return entries[lr] if lr < len(entries) else ""


def _virtual_issues(parent: str | None, nproc: int) -> list[LaunchIssue]:
    if parent is None:
        return []
    entries = [e.strip() for e in parent.split(",") if e.strip()]
    if nproc <= len(entries):
        return []
    lines = tuple(
        f"local_rank {n} exceeds available GPUs in CUDA_VISIBLE_DEVICES={parent}"
        for n in range(len(entries), nproc)
    )
    return [
        LaunchIssue(
            "RM201",
            f"--virtual-local-rank: {nproc} workers but CUDA_VISIBLE_DEVICES={parent} lists "
            f"{len(entries)} GPU(s)",
            detail="torchrun gives worker N the N-th CUDA_VISIBLE_DEVICES entry and refuses "
            "workers beyond the list.",
            fix=f"torchrun --nproc-per-node {len(entries)} --virtual-local-rank ...",
            predicted=lines,
        )
    ]


def _same_node_rank(args: TorchrunArgs, n_agents: int) -> LaunchIssue:
    return LaunchIssue(
        "RM804",
        f"--node-rank {args.node_rank} is fixed in a command meant for {n_agents} nodes",
        detail="If this exact command line runs on every node, all of them register as node "
        f"{args.node_rank} and claim the same global ranks (the rendezvous hangs or ranks "
        "collide). The rank map below assumes each node gets its own node rank.",
        # the per-node command of every multi-node tutorial: a possibility, not an alarm (review
        # 15); two lines or two nodes seen with one node rank are the error (probe, explain)
        severity="info",
        fix="Pass a different --node-rank per node (under Slurm: srun bash -c 'torchrun ... "
        "--node-rank $SLURM_NODEID ...', in single quotes so that each node's shell expands it), "
        "or use --rdzv-backend c10d --rdzv-endpoint HOST:29400 and drop --node-rank.",
    )
