"""Rules for single messages (version mismatch, launcher/framework errors, sockets, OOM, ...).

Each rule reads the evidence (and context) and returns findings; :data:`RULES` is in the order
their first findings should appear when no shared-GPU / ordinal finding leads.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from rankmap.explain.causes import name_of_several_addresses, one_name_two_addresses
from rankmap.explain.collect import Evidence
from rankmap.explain.context import Context
from rankmap.explain.findings_map import oom_findings, quote
from rankmap.explain.patterns import Event
from rankmap.explain.rank_claims import claimed_twice
from rankmap.explain.score_model import UNDECIDED_MARK
from rankmap.findings import Finding, Severity, finding
from rankmap.ranks import rank_phrase


def _simple(
    code: str, title: str, kinds: tuple[str, ...], **kw: Any
) -> Callable[..., list[Finding]]:
    def rule(ev: Evidence, ctx: Context) -> list[Finding]:
        evs = ev.of(*kinds)
        if not evs:
            return []
        ranks = sorted({e.rank for e in evs if e.rank is not None})
        hosts = list(dict.fromkeys(e.host for e in evs if e.host))
        return [
            finding(
                code, title, ranks=ranks, hosts=hosts, evidence=[quote(e) for e in evs[:4]], **kw
            )
        ]

    return rule


def _mismatch(ev: Evidence, ctx: Context) -> list[Finding]:
    evs = ev.of("nccl_mismatch")
    if not evs:
        return []
    e = evs[0]
    va, vb = e.get("va"), e.get("vb")
    return [
        finding(
            "RM051",
            f"Ranks load different NCCL versions: rank {e.ranks[0]} has {va}, rank {e.ranks[1]} "
            f"has {vb}",
            ranks=e.ranks,
            hosts=[x.host for x in evs if x.host],
            evidence=[quote(x) for x in evs[:4]],
        )
    ]


def _versions(ev: Evidence, ctx: Context) -> list[Finding]:
    seen = ev.nccl_versions()
    if len(seen) < 2 or ev.has("nccl_mismatch"):
        return []
    return [
        finding(
            "RM051",
            f"The log shows {len(seen)} NCCL versions: {', '.join(seen)}",
            evidence=list(seen.values())[:4],
            severity="warning",
        )
    ]


def _oom(ev: Evidence, ctx: Context) -> list[Finding]:
    if not ev.of("oom") or ev.has("duplicate_gpu", "multi_rank_gpu", "invalid_ordinal"):
        return []  # the shared GPU / ordinal finding already names the cause
    return oom_findings(ctx, ev)


def _lightning(ev: Evidence, ctx: Context) -> list[Finding]:
    req, has = ev.of("lightning_requested"), ev.of("lightning_has")
    if not req or ev.has("invalid_ordinal"):
        return []
    have = (has[0].get("has") or "").strip() if has else ""
    code = "RM501" if have == "0" else "RM102"
    quotes = [quote(e) for e in (req[:1] + has[:1])]
    title = f"Lightning asked for GPUs [{req[0].get('req')}] but the process sees [{have}]"
    narrowed = ctx.cvd_entries() is not None or ev.has("env_cvd") or _per_task_context(ctx)
    if narrowed and _renumbered_ids(req[0].get("req") or "", have):
        return [
            finding(
                "RM240",
                title,
                detail="As many GPUs as the process sees, by other ids: physical GPU ids asked "
                "for in a view that numbers the visible GPUs 0..N-1 (CUDA_VISIBLE_DEVICES, a "
                "container's device list; reference/cuda_devices.md §1).",
                evidence=quotes,
                fix="Ask Lightning for the count (`devices=2`) or the renumbered ids "
                "(`devices=[0, 1]`); CUDA_VISIBLE_DEVICES already picks the physical GPUs.",
            )
        ]
    if code == "RM501" and not _per_task_context(ctx):
        # One visible GPU is the symptom; per-task binding is one cause among a user's
        # CUDA_VISIBLE_DEVICES and a one-GPU machine: the scoring weighs the rest of the input.
        return [
            finding(
                code,
                title,
                detail=f"{UNDECIDED_MARK} why the process sees one GPU: a per-task binding "
                "(Slurm --gpus-per-task, a scheduler), a CUDA_VISIBLE_DEVICES naming one GPU, or "
                "a machine with one GPU. `echo $CUDA_VISIBLE_DEVICES; nvidia-smi -L` in the job "
                "decides.",
                evidence=quotes,
                severity="warning",
            )
        ]
    return [finding(code, title, evidence=quotes)]


def _renumbered_ids(requested: str, visible: str) -> bool:
    """Whether Lightning's requested ids fit the visible count but not its ids ([2, 3] of [0, 1])."""
    try:
        req = [int(x) for x in requested.split(",") if x.strip()]
        have = [int(x) for x in visible.split(",") if x.strip()]
    except ValueError:
        return False
    # one visible GPU ([1] of [0]) is the per-task symptom RM501 weighs; two or more renumbered
    return len(have) >= 2 and 0 < len(req) <= len(have) and not set(req) <= set(have)


def _per_task_context(ctx: Context) -> bool:
    """Whether the context shows a scheduler that binds GPUs per task (Slurm)."""
    launch = ctx.launch
    if launch is not None and (
        "srun" in (launch.launcher, launch.nested_in) or launch.gpus_per_task is not None
    ):
        return True
    return any(k.startswith("SLURM_") for k in ctx.env)


def _guess(ev: Evidence, ctx: Context) -> list[Finding]:
    evs = ev.of("device_guess")
    if not evs:
        return []
    ranks = sorted({e.rank for e in evs if e.rank is not None})
    # PyTorch prints the guess in most jobs that never pass device_id (reference/pytorch_nccl.md
    # §2); it is a cause only next to a GPU that ranks share or cannot open
    shows_harm = ev.has("duplicate_gpu", "multi_rank_gpu", "invalid_ordinal", "nvml_not_found")
    return [
        finding(
            "RM402",
            "PyTorch guessed each rank's GPU (no device bound to the process group)",
            ranks=ranks,
            evidence=[quote(e) for e in evs[:3]],
            **({} if shows_harm else {"severity": "info", "detail": _GUESS_ALONE}),
        )
    ]


_GUESS_ALONE = (
    "PyTorch prints this in most jobs that do not pass device_id to init_process_group; the "
    "guess (global rank % GPUs per node) is harmless when it is the GPU the rank uses. It "
    "matters when the log also shows ranks sharing a GPU or a hang at the first barrier."
)


_RM905 = _simple(
    "RM905",
    "Two processes claim the same global rank",
    ("bootstrap_dup_rank",),
    detail="NCCL's bootstrap root saw the same rank check in twice: two launches that number "
    "their ranks alike. On several machines, the same --node_rank / NODE_RANK on two of them "
    "(a script copied unchanged) does it; otherwise two independent launches, or RANK / "
    "WORLD_SIZE exported for every process. What would decide: `echo $NODE_RANK $RANK` and "
    "the --node_rank each host passed.",
)


def _dup_rank(ev: Evidence, ctx: Context) -> list[Finding]:
    """A rank claimed twice (NCCL's bootstrap, or a framework's own rank lines) in a launch for
    several nodes whose node rank is written into the command (the launcher's RM804: the same
    script started on every machine): the machines claim one node rank, and their ranks collide
    (contract: duplicated node ranks are host_identity). Without that launch the general RM905
    stands."""
    evs = ev.of("bootstrap_dup_rank")
    general = _RM905(ev, ctx) if evs else claimed_twice(ev)
    plan = ctx.launch.plan if ctx.launch else None
    fixed = next((i for i in plan.issues if i.code == "RM804"), None) if plan else None
    if not general or fixed is None:
        return general
    seen = (
        "NCCL saw ranks checked in twice (`Bootstrap Root : rank N of M ranks has already "
        "checked in`)"
        if evs
        else "the log shows ranks claimed twice"
    )
    return [
        finding(
            "RM804",
            f"Two machines start the same node rank: {fixed.title}, and {seen.split(' (')[0]}",
            detail=f"Every machine ran the same command, so each claims the same node rank and "
            f"the ranks of that node twice: {seen}. What would decide: `echo $NODE_RANK` / the "
            "--node_rank each host passed.",
            ranks=general[0].ranks,
            evidence=general[0].evidence,
        )
    ]


_RM906 = _simple("RM906", "The rendezvous store could not be reached or bound", ("store_error",))
# torch's store waiting for the world: "Timed out after 901 seconds waiting for clients. 1/2
# clients joined." (torch/csrc/distributed/c10d/TCPStore.cpp) — the processes never all started
_JOINED = re.compile(r"waiting for clients\.?\s*(?P<joined>\d+)/(?P<world>\d+) clients joined")


def _store(ev: Evidence, ctx: Context) -> list[Finding]:
    """RM906; a store that timed out waiting for clients names how many joined, and the fix is
    the launch (every node started, the same --nnodes / world size everywhere), not a port
    (review 29: "choose a free --master-port" for a node that was never started)."""
    evs = ev.of("store_error")
    # a machine that bound the store at an address not its own says why the others never joined
    # (review 65: "8/16 clients joined" beside errno 99 on the second machine); its bind error
    # can be the only store line (review 55: a DistNetworkError ends the traceback)
    not_own = list(ev.of("store_bind_foreign"))
    if not evs and not not_own:
        return []
    joined = next((m for e in evs if (m := _JOINED.search(e.line.text))), None)
    one_node = ctx.launch is not None and ctx.launch.nnodes == 1  # no node rank to get wrong
    if not_own:
        standalone = ctx.launch is not None and "--standalone" in ctx.launch.command
        # several machines known: the launch's --nnodes, a store that waited for more clients,
        # or the text (accelerate's num_machines: 2, "on the second node"; review 69)
        several = (
            (ctx.launch is not None and (ctx.launch.nnodes or 0) >= 2)
            or joined is not None
            or ctx.machines_told >= 2
        )
        return [
            _store_on_foreign_address(
                not_own, one_node=one_node, standalone=standalone, several=several
            )
        ]
    if joined is None:
        return _RM906(ev, ctx)
    got, want = joined.group("joined"), joined.group("world")
    return [
        finding(
            "RM906",
            f"The rendezvous waited for {want} processes and {got} joined",
            detail="The store timed out waiting for the rest of the world: a node (or its "
            "processes) was never started, the nodes were told different node counts or world "
            "sizes, or they cannot reach MASTER_ADDR:MASTER_PORT. What would decide: the launch "
            "command on every node (--nnodes, --nproc-per-node, the same --master-addr) and "
            "whether each node's launcher started.",
            evidence=[quote(e) for e in evs[:3]],
            fix=f"Start every node of the job with the same --nnodes / world size ({want} "
            "processes in all), or lower it to what runs; then check every node reaches "
            "MASTER_ADDR:MASTER_PORT.",
        )
    ]


def _store_on_foreign_address(
    evs: list[Event], *, one_node: bool, standalone: bool = False, several: bool = False
) -> Finding:
    """c10d could not bind the store to MASTER_ADDR because the address is not this machine's
    (errno 99, EADDRNOTAVAIL): the process hosting the store (rank 0's machine, node rank 0)
    runs on another machine than MASTER_ADDR names — on one node, MASTER_ADDR names another host."""
    if one_node:
        detail = (
            "Rank 0 binds the store at MASTER_ADDR; 'Cannot assign requested address' means this "
            "machine does not own that address. A job of one node must name this machine (or "
            "127.0.0.1 / --standalone). What would decide: `hostname -I` against --master_addr."
        )
        fix = "Set --master_addr to this machine's address (or 127.0.0.1)" + (
            "; --standalone already binds the store to localhost (torch/distributed/run.py sets "
            "the endpoint localhost:0): check that `localhost` resolves to this machine "
            "(/etc/hosts)."
            if standalone
            else ", or use --standalone."
        )
    else:
        detail = (
            "Only the process of global rank 0 (node rank 0) binds the store, at MASTER_ADDR; "
            "'Cannot assign requested address' means this machine does not own that address: it "
            "was started as node rank 0 (or machine_rank 0) although another machine is the "
            "master, or MASTER_ADDR names another host. What would decide: the --node_rank / "
            "machine_rank each machine passes, and `hostname -I` on the machine that printed this."
        )
        fix = (
            "Give every machine its own node rank (--node_rank / accelerate's machine_rank: 0 "
            "only on the machine MASTER_ADDR names), and set MASTER_ADDR to that machine's address."
        )
    return finding(
        # on a job known to span machines it is a machine started as node rank 0 (RM907), not a
        # network symptom
        "RM907" if several and not one_node else "RM906",
        "The store was started on a machine that MASTER_ADDR does not name (errno 99)",
        detail=detail,
        evidence=[quote(e) for e in evs[:3]],
        fix=fix,
    )


def _one_name(ev: Evidence, ctx: Context) -> list[Finding]:
    """Processes of one host name that bootstrap from several addresses, where no shared GPU
    shows it already: machines (or containers) that NCCL takes for one host (reference/nccl.md
    (b); review 29: only a duplicate GPU named them)."""
    if ev.has("duplicate_gpu", "multi_rank_gpu"):
        return []
    found, why = name_of_several_addresses(ev), one_name_two_addresses(ev)
    if found is None or why is None:
        return []
    host, ips, kind = found
    verb = "bootstrap from" if kind == "Bootstrap" else "use"
    evs = ev.of("bootstrap_ip")
    return [
        finding(
            "RM801",
            f"Different machines share one host name: processes named {host} {verb} "
            f"{len(ips)} addresses",
            detail=f"{why}. NCCL's host identity is the host name and boot_id (NCCL_HOSTID if "
            "set): their ranks are taken for one machine's, so NCCL uses shared memory or P2P "
            "between them and counts their GPUs as one host's. What would decide: `hostname; "
            "cat /proc/sys/kernel/random/boot_id` on every node.",
            hosts=sorted({e.host for e in evs if e.host}),
            evidence=[quote(e) for e in evs[:3]],
            severity="warning",
        )
    ]


def _ifname(ev: Evidence, ctx: Context) -> list[Finding]:
    evs = ev.of("no_interface")
    if not evs:
        return []
    set_to = [e.get("v") for e in ev.of("env_ifname")] or [ctx.env.get("NCCL_SOCKET_IFNAME")]
    val = next((v for v in set_to if v), None)
    extra = f" (NCCL_SOCKET_IFNAME={val})" if val else ""
    return [
        finding(
            "RM020",
            f"NCCL found no usable network interface{extra}",
            hosts=[e.host for e in evs if e.host],
            evidence=[quote(e) for e in evs[:3] + ev.of("env_ifname")[:1]],
        )
    ]


def _nvml_nf(ev: Evidence, ctx: Context) -> list[Finding]:
    evs = ev.of("nvml_not_found")
    if not evs:
        return []
    return [
        finding(
            "RM502",
            "NCCL could not find a peer's GPU on what it took for the same host",
            detail="Per-process GPU isolation (cgroups, per-task CUDA_VISIBLE_DEVICES) hides the "
            "peer's GPU, or two containers with one hostname are one NCCL host (nccl.md (b)). "
            "Would decide: `hostname` and `nvidia-smi -L` inside each rank's container.",
            hosts=[e.host for e in evs if e.host],
            evidence=[quote(e) for e in evs[:3]],
        )
    ]


def _socket(ev: Evidence, ctx: Context) -> list[Finding]:
    if ev.has("no_interface", "store_error"):
        return []
    found = _simple("RM041", "NCCL ranks could not connect to each other", ("socket_error",))(
        ev, ctx
    )
    first = own_failure(ev)
    if not found or first is None:
        return found
    # a rank that stopped on an error of its own closes its sockets: what its peers then print
    # ("Connection closed by remote peer", ncclRemoteError) is the consequence (reference/nccl.md
    # (e): "remote process exited or there was a network error")
    who = f"rank {first.rank}" if first.rank is not None else "a process"
    return [
        replace(
            found[0],
            title=f"NCCL ranks lost their connection to {who}, which stopped on its own error first",
            detail=f"{who.capitalize()} ended with `{first.get('exc')}: {first.get('msg')}`; "
            "the socket errors of the other ranks follow from it. Fix that error first.",
            severity=Severity.WARNING,
            evidence=(quote(first), *found[0].evidence[:3]),
        )
    ]


# Exceptions of the communication itself: they are what the peers print, not a failure of their own
_COMMUNICATION = re.compile(
    r"Dist|Nccl|NCCL|Rendezvous|Store|Socket|Connection|Timeout|ChildFailed|Signal|"
    r"nccl|socket|connect|store|rendezvous|timed out|watchdog|remote process|NCCL error"
)


def own_failure(ev: Evidence) -> Event | None:
    """The first exception a process stopped with that is not about the communication."""
    for e in ev.of("py_exception"):
        if not _COMMUNICATION.search(f"{e.get('exc')} {e.get('msg')}"):
            return e
    return None


# CUDA errors of a binary with no code for the GPU's architecture: NCCL's kernels are looked up
# by name when a collective is enqueued, and a build without the GPU's sm_XX finds none
# (reference/nccl.md (g); NVIDIA/nccl#1372, NVIDIA/nccl#112, NVIDIA/stdexec#888).
NO_CODE_FOR_ARCH = ("named symbol not found", "no kernel image", "invalid device function")


def _cuda_failure(ev: Evidence, ctx: Context) -> list[Finding]:
    evs = list(ev.of("cuda_failure"))
    if not evs:
        return []
    err = evs[0].get("err")
    if any(k in str(err).lower() for k in NO_CODE_FOR_ARCH):
        return [
            finding(
                "RM053",
                f"NCCL has no kernel for this GPU's architecture: Cuda failure '{err}'",
                hosts=[e.host for e in evs if e.host],
                evidence=[quote(e) for e in evs[:3]],
            )
        ]
    return [
        finding(
            "RM040",
            f"CUDA call failed inside NCCL: '{err}'",
            hosts=[e.host for e in evs if e.host],
            evidence=[quote(e) for e in evs[:3]],
        )
    ]


def _global_index(ev: Evidence, ctx: Context) -> list[Finding]:
    """NCCL's Init lines put a later node's ranks on CUDA device = global rank, past that
    node's own processes: set_device(RANK) on machines with GPUs enough to hide it."""
    if ev.has("duplicate_gpu", "multi_rank_gpu", "invalid_ordinal"):
        return []
    found = ev.rankmap.global_index_hosts()
    if not found:
        return []
    records = [r for rs in found.values() for r in rs]
    hosts = list(found)
    ranks = [r.rank for r in records]
    where = hosts[0] if len(hosts) == 1 else f"{len(hosts)} nodes ({', '.join(hosts[:3])})"
    return [
        finding(
            "RM401",
            f"{rank_phrase(ranks).capitalize()} on {where} use the CUDA devices of their global "
            "rank: the global rank as the device index",
            detail=f"NCCL initialised {rank_phrase(ranks)} on cudaDev equal to the global rank, "
            "past the processes each of these nodes runs (its local ranks count from 0). The GPUs "
            "exist, so nothing fails at once; the ranks use GPUs meant for others (another "
            "job's, or idle ones). What would decide: "
            "`grep -nE 'set_device\\(.*rank|get_rank\\(\\)' train.py`.",
            ranks=ranks,
            hosts=hosts,
            devices=[r.bus_id for r in records if r.bus_id],
            evidence=[r.evidence for r in records[:3]],
            severity="warning",
        )
    ]


RULES: tuple[Callable[[Evidence, Context], list[Finding]], ...] = (
    _mismatch,
    _dup_rank,
    _simple("RM940", "DeepSpeed was asked for a GPU slot the host does not have", ("ds_no_slot",)),
    _simple(
        "RM941",
        "The framework's device/process settings contradict the launch",
        ("lightning_world", "accelerate_gpu_ids"),
    ),
    _simple("RM901", "The script does not accept the --local-rank argument", ("local_rank_arg",)),
    _lightning,
    _one_name,
    _global_index,
    _ifname,
    _oom,  # before store/socket errors: peers of a rank that died of OOM lose their connections
    _store,
    _socket,
    _nvml_nf,
    _cuda_failure,
    _guess,
    _versions,
)
