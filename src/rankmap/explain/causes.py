"""Rank the possible causes of a duplicate GPU or an invalid device ordinal.

Each candidate cause collects points from the log and the context (launch command, env,
machine, script); the best-supported one is reported first, the others after it as "also
possible". When nothing decides (best score below :data:`DECIDED`), the generic finding comes
first and says which fact would decide and the command that shows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rankmap.explain.collect import Evidence
from rankmap.explain.context import Context
from rankmap.explain.signals import (
    framework_local_rank_clash,
    logged_visible_list,
    per_process_lists,
    physical_index_after_narrowing,
    ray_duplicate,
    subgroup_duplicate,
)
from rankmap.gpu_sharing import ORDINAL_CAUSES, SHARED_GPU_CAUSES
from rankmap.numbers import int_or_none, saturating_int
from rankmap.ranks import listed

DECIDED = 3


@dataclass
class Candidate:
    """One possible cause with its score and the reasons behind it."""

    code: str
    score: int = 0
    reasons: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)

    def add(self, points: int, reason: str, evidence: str | None = None) -> None:
        """Add support (or, with negative points, contrary evidence)."""
        self.score += points
        self.reasons.append(reason)
        if evidence:
            self.evidence.append(evidence)


def _quote(ev_line: object) -> str:
    return str(ev_line)


def _cvd_count(ctx: Context, ev: Evidence) -> int | None:
    entries = ctx.cvd_entries()
    if entries is None:
        entries = logged_visible_list(ev)
    return len(entries) if entries is not None else None


def _launcher_made_list(ev: Evidence) -> bool:
    """Whether the visible list the log prints is the one DeepSpeed's launcher made from its
    process count (``launch.py`` ``Setting CUDA_VISIBLE_DEVICES=0,…,N-1``)."""
    return any("Setting CUDA_VISIBLE_DEVICES" in e.line.text for e in ev.of("env_cvd"))


def mig_evidence(ctx: Context, ev: Evidence) -> list[str]:
    out = []
    entries = ctx.cvd_entries() or []
    if any(e.startswith("MIG-") for e in entries):
        out.append(f"CUDA_VISIBLE_DEVICES lists MIG instances ({listed(entries)})")
    if _mig_machine(ctx):
        out.append("the machine given has MIG mode enabled")
    if ev.has("mig_seen"):
        line = ev.of("mig_seen")[0].line
        out.append(f"the log mentions MIG devices ({line.where()})")
    return out


def _slurm_allocation(ev: Evidence) -> int | None:
    """The GPUs Slurm allocated on the node, as the job's environment dump prints them."""
    for e in ev.of("slurm_gpus"):
        count, ids = e.get("count"), e.get("ids")
        return int_or_none(count) if count else len(ids.split(",")) if ids else None
    return None


def _mig_machine(ctx: Context) -> bool:
    return any(g.mig_mode for h in ctx.machines for g in h.gpus)


def _common(ctx: Context, ev: Evidence, cands: dict[str, Candidate]) -> int | None:
    """Points every failure shape shares; returns processes per node when known."""
    nproc = ctx.launch.nproc_per_node if ctx.launch else None
    banners = ev.of("accel_nproc")
    if nproc is None and banners:
        nproc = banners[0].geti("n")
    cvd = _cvd_count(ctx, ev)
    gpus = ctx.gpus_per_node()
    if gpus is None and ctx.launch and ctx.launch.gpus_per_node:
        gpus = ctx.launch.gpus_per_node  # the scheduler's allocation per node
    if gpus is None:
        gpus = _slurm_allocation(ev)
    if cvd is not None and gpus is not None and cvd >= gpus:
        # CUDA_VISIBLE_DEVICES lists the whole node (Slurm sets it to the allocation): it narrows
        # nothing, so too many processes is oversubscription, not a visibility mismatch.
        cvd = None
    if nproc is not None and cvd is not None and nproc > cvd:
        cands["RM201"].add(
            6,
            f"{nproc} processes per node but {ctx.visible_var()} exposes {cvd} GPU(s)",
        )
    elif nproc is not None and gpus is not None and nproc > gpus and _mig_machine(ctx):
        # CUDA enumerates one MIG instance per process (reference/nccl.md (c)): the processes of a
        # MIG machine share its instances, however many there are
        cands["mig"].add(
            6,
            f"{nproc} processes per node on a machine in MIG mode: CUDA shows each process one "
            "MIG instance (reference/nccl.md (c))",
        )
    elif nproc is not None and gpus is not None and nproc > gpus:
        cands["oversub"].add(6, f"{nproc} processes per node on a {gpus}-GPU machine")
    elif nproc is not None and (cvd or gpus) and nproc <= (cvd or gpus or 0):
        cands["oversub"].add(-2, f"{nproc} processes fit the {cvd or gpus} visible GPU(s)")
    if ctx.launch and ctx.launch.nested_in:
        tasks = ctx.launch.outer_tasks_per_node
        if tasks is None and (ctx.env.get("SLURM_NTASKS_PER_NODE") or "").isdecimal():
            tasks = saturating_int(ctx.env["SLURM_NTASKS_PER_NODE"])
        if tasks and tasks > 1:
            cands["nested"].add(
                7,
                f"{ctx.launch.nested_in} starts {tasks} tasks per node and each runs "
                f"{ctx.launch.launcher} with {nproc or '?'} workers",
            )
    sel = ctx.selection()
    if sel == "none":
        cands["RM301"].add(6, "the script never selects a device per rank")
    elif sel == "constant":
        cands["RM302"].add(6, "the script selects one fixed device for every rank")
    elif sel == "global_rank":
        cands["RM401"].add(6, "the script uses the global rank as the device index")
    elif sel in ("local_rank", "accelerate"):
        cands["RM301"].add(-3, "the script selects cuda:LOCAL_RANK")
    mig = mig_evidence(ctx, ev)
    for reason in mig:
        cands["mig"].add(4, reason)
    hostid = ctx.env.get("NCCL_HOSTID") or next((e.get("v") for e in ev.of("env_hostid")), None)
    if hostid:
        cands["RM801"].add(5, f"NCCL_HOSTID is set ({hostid}): different machines may merge")
    if ev.has("ray_prefix") or any(e.prefix.ip for e in ev.of("duplicate_gpu", "invalid_ordinal")):
        cands["per_process"].add(
            2, "Ray workers: each gets its own CUDA_VISIBLE_DEVICES (launchers.md §8)"
        )
    return nproc


def duplicate_candidates(ctx: Context, ev: Evidence) -> list[Candidate]:
    """Candidates for two ranks on one GPU, best first."""
    cands = {k: Candidate(c) for k, c in SHARED_GPU_CAUSES}
    nproc = _common(ctx, ev, cands)
    # DeepSpeed's launcher sets the list from its own process count (deepspeed/launcher/runner.py:
    # `--num_gpus N` becomes `list(range(N))` whatever the device count): that it holds as many
    # GPUs as processes says nothing of the GPUs the machine has (review 58)
    own = _cvd_count(ctx, ev) if not _launcher_made_list(ev) else None
    visible = own or ctx.gpus_per_node()
    if nproc is not None and visible and nproc <= visible and not cands["nested"].score:
        cands["RM301"].add(
            3,
            f"{nproc} processes fit the {visible} visible GPUs, so ranks share one only if the "
            "device is not selected per rank",
        )
    rm = ev.rankmap
    if rm.all_cuda0():
        hosts = ", ".join(rm.all_cuda0())
        cands["RM301"].add(3, f"every rank on {hosts} initialised NCCL on cudaDev 0 nvmlDev 0")
        cands["mig"].add(1, "all ranks on cudaDev 0 nvmlDev 0 is also the MIG pattern")
    gpus = ctx.gpus_per_node()
    # the launch spreads the ranks over machines whose GPUs they fit: a wrap across them, or more
    # ranks on one host than it has GPUs, is machines NCCL took for one host (review 16)
    spread = _fits_each_node(ctx, gpus)
    wrap = _wrap_pattern(ev)
    if wrap and not spread:
        cands["oversub"].add(3, wrap)
    banners = [e.get("dev") for e in ev.of("device_banner")]
    if ev.has("accel_env") and len(banners) >= 2 and len(set(banners)) == 1:
        cands["oversub"].add(
            4, f"accelerate put {len(banners)} processes on cuda:{banners[0]} (wraps modulo GPUs)"
        )
    named = {r for e in ev.of("duplicate_gpu") for r in e.ranks}
    if gpus is not None and len(named) > gpus and not spread:
        cands["oversub"].add(5, f"{len(named)} ranks share a host that has {gpus} GPU(s)")
    for split in (_split_hosts(ev), one_name_two_addresses(ev), _launch_nodes_apart(ctx, ev)):
        if split:
            cands["RM801"].add(5, split)
    _skipped_peers(ctx, ev, cands)
    sub = subgroup_duplicate(ev)
    if sub:
        cands["RM301"].add(4, sub)
    ray = ray_duplicate(ctx, ev)
    if ray:
        cands[ray[0]].add(3, ray[1])
    return sorted(cands.values(), key=lambda c: -c.score)


def ordinal_candidates(ctx: Context, ev: Evidence) -> list[Candidate]:
    """Candidates for ``invalid device ordinal``, best first."""
    cands = {k: Candidate(c) for k, c in ORDINAL_CAUSES}
    _common(ctx, ev, cands)
    physical = physical_index_after_narrowing(ctx, ev)
    if physical:
        cands["physical"].add(5, physical)
    clash = framework_local_rank_clash(ctx, ev)
    if clash:
        cands["framework"].add(5, clash)
    cands["RM301"].score = min(cands["RM301"].score, 0)  # no set_device never asks for cuda:N>0
    forms = {e.get("form") for e in ev.of("invalid_ordinal")}
    if "mig_assert" in forms:
        # one of its causes, not the only one: a CUDA_VISIBLE_DEVICES changed after CUDA counted
        # the GPUs (pytorch/pytorch#126344, vLLM/Ray workers: #38616) fails the same way; MIG
        # evidence (_common: nvidia-smi MIG mode, MIG UUIDs) decides it
        cands["mig"].add(
            4,
            "PyTorch's device-count INTERNAL ASSERT: CUDA counts fewer devices than PyTorch did — "
            "MIG instances, or a CUDA_VISIBLE_DEVICES changed after the count",
        )
    elif not mig_evidence(ctx, ev):
        cands["mig"].score = min(cands["mig"].score, 2)
    if ctx.launch and ctx.launch.gpus_per_task == 1:
        cands["per_process"].add(6, "srun --gpus-per-task=1: each task sees only cuda:0")
    if own_lists := per_process_lists(ev):
        cands["per_process"].add(6, own_lists)
    if (
        ctx.env.get("SLURM_GPUS_PER_TASK") == "1"
        or ctx.env.get("SLURM_TRES_PER_TASK") == "gres/gpu:1"
    ):
        cands["per_process"].add(5, "Slurm binds one GPU per task")
    has = [e.get("has") for e in ev.of("lightning_has")]
    if has and has[0] is not None and has[0].strip() == "0":
        cands["per_process"].add(5, "Lightning: the process sees only GPU [0]")
    entries = ctx.cvd_entries()
    if (
        entries is not None
        and len(entries) == 1
        and (ctx.launch and (ctx.launch.nproc_per_node or 0) > 1)
    ):
        cands["per_process"].add(2, "CUDA_VISIBLE_DEVICES holds a single GPU")
    hosts = {f.host for f in ev.failures if f.host}
    failing = sorted({f.rank for f in ev.failures if f.rank is not None})
    local = sorted({f.local_rank for f in ev.failures if f.local_rank is not None})
    if failing and local and min(failing) != min(local) and len(hosts) >= 1 and min(local) > 0:
        cands["oversub"].add(1, f"failing local ranks start at {min(local)}")
    tests_fail = [e for e in ev.of("invalid_ordinal") if e.get("form") == "nccl-tests"]
    ranks = sorted({e.rank for e in tests_fail if e.rank is not None})
    if ranks and min(ranks) >= 8:
        cands["RM801"].add(
            2,
            f"nccl-tests ranks {ranks[0]}-{ranks[-1]} fail: nccl-tests counts local ranks by host "
            "hash, two hosts with one identity give local ranks >= GPUs (nccl.md (b), unverified)",
        )
    return sorted(cands.values(), key=lambda c: -c.score)


def _wrap_pattern(ev: Evidence) -> str | None:
    """``cudaDev`` repeating with period k < ranks on a host: ranks wrapped modulo k GPUs."""
    by_host: dict[str | None, list[tuple[int, int]]] = {}
    for r in ev.rankmap.main_comm():
        if r.cuda_index is not None:
            by_host.setdefault(r.host, []).append((r.rank, r.cuda_index))
    for host, pairs in by_host.items():
        devs = [d for _, d in pairs]
        if len(devs) > len(set(devs)) > 1:
            return (
                f"on {host or 'one host'} {len(devs)} ranks use only {len(set(devs))} distinct "
                "CUDA indices: local ranks wrap modulo the GPU count"
            )
    pairs2 = [e.ranks for e in ev.of("duplicate_gpu") if len(e.ranks) == 2]
    diffs = {abs(a - b) for a, b in pairs2}
    if len(pairs2) >= 2 and len(diffs) == 1 and min(diffs) >= 2:
        d = min(diffs)
        return f"every duplicate pair is {d} ranks apart: {d} GPUs shared by {2 * d} or more ranks"
    return None


def _skipped_peers(ctx: Context, ev: Evidence, cands: dict[str, Candidate]) -> None:
    """A rank that reports a higher rank as its duplicate skipped the ranks between: NCCL stops
    at the lowest conflicting peer (reference/nccl.md, "Each rank stops at the first conflicting
    peer"). "rank 0 and rank 8" says ranks 1-7 of its host use other GPUs, so the ranks do select
    their devices and the selection wraps every 8 ranks: more processes than GPUs, or two hosts
    of 8 ranks each that NCCL took for one. Not every rank left on cuda:0."""
    for e in ev.of("duplicate_gpu"):
        reporter, peer = e.ranks[0], e.ranks[-1]
        if reporter is not None and peer is not None and abs(peer - reporter) == 1:
            # (only where nothing else is known of the shared GPU: per-process lists, a host
            # identity, a narrowed list explain neighbours too; review 61)
            known = any(c.score > 0 for k, c in cands.items() if k != "RM301")
            if not ev.rankmap.main_comm() and not known:
                _neighbours_share(ctx, ev, (reporter, peer), cands)
            return
        if reporter is None or peer is None or peer - reporter < 2:
            continue
        gap = peer - reporter
        between = f"{reporter + 1}-{peer - 1}" if gap > 2 else str(reporter + 1)
        cands["RM301"].add(
            -4,
            f"rank {reporter} reports rank {peer} as its first conflicting peer: ranks {between} "
            "use other GPUs, so the ranks select their devices (NCCL stops at the lowest "
            "conflicting rank, reference/nccl.md)",
        )
        cands["oversub"].add(1, f"the selection wraps every {gap} ranks: {gap} GPUs for more ranks")
        nranks = max((r.nranks or 0 for r in ev.rankmap.main_comm()), default=0)
        nodes = ctx.launch.nnodes if ctx.launch and ctx.launch.nnodes else 0
        if nodes >= 2 or nranks >= 2 * gap:
            cands["RM801"].add(
                2 if nodes >= 2 else 1,
                f"or {max(nodes, nranks // gap)} hosts of {gap} ranks each that share one host "
                "identity (reference/nccl.md (b))",
            )
        return


def _neighbours_share(
    ctx: Context, ev: Evidence, pair: tuple[int, int], cands: dict[str, Candidate]
) -> None:
    """Neighbouring ranks on one GPU: a selection that wraps over k >= 2 GPUs puts ranks k
    apart together, never neighbours (each rank reports its lowest conflicting peer,
    reference/nccl.md). Neighbours share when every rank stays on one GPU: no per-rank
    selection, or a single GPU visible to the processes. A host known to show them two or more
    GPUs leaves the first. Only for a bare WARN line (Init lines place the ranks themselves)
    and where nothing says the ranks run on different machines (one rank per machine, merged
    into one host, shares as neighbours too)."""
    a, b = pair
    why = (
        f"ranks {a} and {b} are neighbours: a selection that wraps over two or more GPUs never "
        "puts neighbours together, so every rank stays on one GPU"
    )
    visible = _cvd_count(ctx, ev) or ctx.gpus_per_node()
    if visible is not None and visible >= 2:
        cands["RM301"].add(3, f"{why}, though {visible} GPUs are visible")
    elif visible is None:
        cands["RM301"].add(2, f"{why} (or only one GPU is visible)")


def name_of_several_addresses(ev: Evidence) -> tuple[str, list[str], str] | None:
    """(host name, its addresses, the line kind) of the first name whose processes give different
    addresses in
    lines of one kind (Bootstrap's, NET/Socket's first interface, NET/IB's out-of-band one): two
    machines (or containers) behind one name (reference/nccl.md (b)). Lines of different kinds
    may name different interfaces of one machine."""
    addresses: dict[tuple[str, str], set[str]] = {}
    for e in ev.of("bootstrap_ip"):
        if e.host and (ip := e.get("ip")):
            addresses.setdefault((e.host, str(e.get("kind"))), set()).add(ip)
    return next(
        ((h, sorted(ips), kind) for (h, kind), ips in addresses.items() if len(ips) >= 2), None
    )


def one_name_two_addresses(ev: Evidence) -> str | None:
    """The reason :func:`name_of_several_addresses` gives, in words."""
    found = name_of_several_addresses(ev)
    if found is None:
        return None
    host, ips, kind = found
    verb = "bootstrap from" if kind == "Bootstrap" else f"use ({kind})"
    return (
        f"processes named {host} {verb} {len(ips)} addresses ({', '.join(ips[:3])}): "
        "several machines or containers share that host name"
    )


def _fits_each_node(ctx: Context, gpus: int | None) -> bool:
    """Whether the launch puts its processes on two or more machines, each with enough GPUs."""
    launch = ctx.launch
    nproc = launch.nproc_per_node if launch else None
    return bool(launch and nproc and gpus and (launch.nnodes or 0) >= 2 and nproc <= gpus)


def _launch_nodes_apart(ctx: Context, ev: Evidence) -> str | None:
    """A duplicate pair the launch puts on different nodes: ranks are numbered node by node
    (node_rank x processes per node + local rank: torchrun, srun's block layout, mpirun by slot),
    so ranks a and b with a // n != b // n run on different machines, yet NCCL saw one host. Not
    under nested launchers (srun around torchrun): each task's launcher numbers its own workers
    (review 75)."""
    launch = ctx.launch
    nproc = launch.nproc_per_node if launch else None
    if not (launch and nproc and (launch.nnodes or 0) >= 2):
        return None
    if launch.nested_in:  # every outer task runs its own launcher: the layout is not node by node
        return None
    for e in ev.of("duplicate_gpu"):
        a, b = e.ranks
        if a is not None and b is not None and a // nproc != b // nproc:
            return (
                f"the launch runs {nproc} process(es) on each of {launch.nnodes} nodes, so ranks "
                f"{a} and {b} start on different nodes (node {a // nproc} and {b // nproc}), yet "
                "NCCL took them for one host"
            )
    return None


def _split_hosts(ev: Evidence) -> str | None:
    """A duplicate pair whose ranks the Init lines place on different host names."""
    host_of = {r.rank: r.host for r in ev.rankmap.main_comm() if r.host}
    for e in ev.of("duplicate_gpu"):
        a, b = e.ranks
        if a in host_of and b in host_of and host_of[a] != host_of[b]:
            return (
                f"ranks {a} and {b} are on different hosts ({host_of[a]}, {host_of[b]}) yet NCCL "
                "saw one host: their host identities collide"
            )
    return None
