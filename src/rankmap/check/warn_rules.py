"""Warnings of a simulated launch: dropped/reordered devices, host names, per-process views,
independent launches sharing a GPU."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rankmap.check.nccl import device_of, host_key
from rankmap.findings import Finding, Severity, finding
from rankmap.launchers import LaunchPlan

if TYPE_CHECKING:
    from rankmap.check.engine import RankOutcome


def warnings(
    plan: LaunchPlan, outcomes: list[RankOutcome], env: Mapping[str, str]
) -> list[Finding]:
    out: list[Finding] = []
    seen_notes: set[str] = set()
    for o in outcomes:
        for d in o.view.dropped:
            if d.reason in ("duplicate",) or d.note in seen_notes:
                continue
            seen_notes.add(d.note)
            if len(seen_notes) <= 4:
                out.append(finding("RM202", d.note, hosts=[o.host.hostname]))
    first = outcomes[0] if outcomes else None
    if first and first.view.order_differs and first.view.cuda_order != "PCI_BUS_ID":
        cvd = first.view.cuda_visible_devices
        if cvd is None or any(t.strip().isdecimal() for t in cvd.split(",")):
            pairs = ", ".join(
                f"cuda:{d.cuda_index}=nvidia-smi {d.nvml_index}" for d in first.view.devices[:4]
            )
            out.append(
                finding(
                    "RM204",
                    f"CUDA order differs from nvidia-smi order on {first.host.hostname} ({pairs})",
                    hosts=[first.host.hostname],
                    fix="export CUDA_DEVICE_ORDER=PCI_BUS_ID (or use GPU UUIDs in CUDA_VISIBLE_DEVICES)",
                    # with no list to mistranslate, every rank still gets its own GPU: a heads-up
                    # for reading nvidia-smi, no alarm (review 15)
                    severity=Severity.INFO if cvd is None else Severity.WARNING,
                )
            )
    out += _identity_warnings(plan, outcomes, env)
    per_proc = [o for o in outcomes if o.error is None and len(o.view.devices) == 1]
    if (
        (plan.per_process_cvd or any("CUDA_VISIBLE_DEVICES" in o.proc.env for o in per_proc))
        and len({(o.proc.world, o.proc.node) for o in per_proc}) < len(per_proc)
        and plan.worlds == 1
    ):
        o = per_proc[0]
        out.append(
            finding(
                "RM502",
                f"each rank on {o.host.hostname} sees only its own GPU",
                detail="NCCL cannot use CUDA P2P/NVLink between GPUs a process cannot see.",
                ranks=[x.proc.rank for x in per_proc if x.proc.node == o.proc.node],
                hosts=[o.host.hostname],
            )
        )
    return out


def _identity_warnings(
    plan: LaunchPlan, outcomes: list[RankOutcome], env: Mapping[str, str]
) -> list[Finding]:
    by_name: dict[str, set[str]] = defaultdict(set)
    for i in sorted({o.proc.node for o in outcomes}):
        h = plan.hosts[i]
        by_name[h.identity.hostname or h.hostname].add(h.identity.boot_id or f"node{i}")
    return [
        finding(
            "RM802",
            f"{len(boots)} machines share the hostname {name!r}",
            detail="NCCL >= 2.5 tells them apart by boot_id, but tools and scripts that group by "
            "hostname merge them.",
            hosts=[name],
        )
        for name, boots in by_name.items()
        if len(boots) > 1
    ]


def cross_world(
    plan: LaunchPlan, outcomes: list[RankOutcome], env: Mapping[str, str]
) -> list[Finding]:
    """Independent launches (worlds) whose ranks land on the same physical GPU."""
    if plan.worlds < 2:
        return []
    users: dict[tuple[str, str], list[RankOutcome]] = defaultdict(list)
    for o in outcomes:
        dev = device_of(o)
        if dev is not None:
            users[(host_key(o, plan, env), dev[0])].append(o)
    out = []
    for (_, bus), group in users.items():
        worlds = sorted({o.proc.world for o in group})
        slices = mig_slices(group)
        if len(worlds) > 1 and len(slices) > 1 and not plan.joined:
            continue  # separate jobs on separate MIG instances: what MIG is for
        if len(worlds) > 1 and len(slices) > 1:
            out.append(
                finding(
                    "RM601",
                    f"{len(worlds)} launches use {len(slices)} MIG instances of one GPU ({bus}) on "
                    f"{group[0].host.hostname}",
                    detail=f"The lines form one job (a rank or node rank each) and their MIG "
                    f"instances {', '.join(slices[:4])} share the parent's bus id: NCCL takes "
                    "them for one GPU.",
                    devices=[bus],
                    hosts=[group[0].host.hostname],
                )
            )
        elif len(worlds) > 1 and (plan.joined or not _assumed(group)):
            out.append(_shared_by_launches(plan, group, len(worlds), bus, env))
    return out[:8]


def _assumed(group: Sequence[RankOutcome]) -> bool:
    """Whether a launch's device is only the assumed cuda:LOCAL_RANK of a program not read (a
    monitoring helper started next to the job): no evidence it uses a GPU at all (review 38)."""
    return any(o.reason.startswith("assumed") for o in group)


def _shared_by_launches(
    plan: LaunchPlan,
    group: Sequence[RankOutcome],
    launches: int,
    bus: str,
    env: Mapping[str, str],
) -> Finding:
    """RM503: launch lines of one script whose ranks land on one GPU."""
    nvml = group[0].view.devices[group[0].cuda_index or 0].nvml_index
    host = group[0].host.hostname
    narrowed = bool(env.get("CUDA_VISIBLE_DEVICES")) or any(
        o.proc.env.get("CUDA_VISIBLE_DEVICES") for o in group
    )
    why = (
        "Each launch's CUDA_VISIBLE_DEVICES gives its process the same GPU."
        if narrowed
        else "No launch line narrows CUDA_VISIBLE_DEVICES: each one numbers the machine's GPUs "
        "from cuda:0, so their ranks meet on the same GPUs."
    )
    if plan.joined:
        ranks = sorted(o.proc.rank for o in group)
        title = f"{launches} launch lines of one world put ranks {', '.join(map(str, ranks[:4]))} on GPU {nvml} ({bus}) on {host}"
        why += (
            " The lines form one job (a rank or node rank each) on this machine: NCCL stops at "
            f"init with `Duplicate GPU detected : rank {ranks[0]} and rank {ranks[1]} both on "
            "CUDA device ...` (reference/nccl.md (a))."
        )
        gpus = len(group[0].host.gpus)
        fix = (
            f"give each line its own GPUs ({_split_lists(plan)}), or one launch for the machine"
            if len(plan.procs) <= gpus
            else f"{len(plan.procs)} ranks for {gpus} GPU(s) on {host}: start at most {gpus} "
            "processes on this machine in all, or run the lines on separate machines"
        )
        return finding(
            "RM503", title, detail=why, devices=[bus], hosts=[host], ranks=ranks, fix=fix
        )
    # separate jobs on one GPU: NCCL's duplicate check is per communicator, and a GPU in the
    # default compute mode takes several processes; they share its memory and time (packed
    # sweeps do this on purpose): a warning, not a predicted failure (review 34)
    return finding(
        "RM503",
        f"{launches} independent launches all use GPU {nvml} ({bus}) on {host}",
        detail=why + " They are separate jobs: nothing stops them, but they share the GPU's "
        "memory and compute.",
        devices=[bus],
        hosts=[host],
        severity="warning",
        fix="give each launch its own GPU (CUDA_VISIBLE_DEVICES=$i) unless sharing is meant",
    )


def _split_lists(plan: LaunchPlan) -> str:
    """Disjoint CUDA_VISIBLE_DEVICES lists, one per launch line, in line order."""
    counts = [sum(1 for p in plan.procs if p.world == w) for w in range(plan.worlds)]
    starts = [sum(counts[:w]) for w in range(len(counts))]
    lists = [",".join(str(i) for i in range(a, a + n)) for a, n in zip(starts, counts, strict=True)]
    return " / ".join(f"CUDA_VISIBLE_DEVICES={x}" for x in lists[:4]) + (
        " / ..." if len(lists) > 4 else ""
    )


def mig_slices(group: Sequence[RankOutcome]) -> list[str]:
    """The distinct MIG instances (UUIDs) a group of ranks on one physical GPU uses."""
    slices = [dev.uuid for o in group if (dev := o.view.devices[o.cuda_index or 0]).mig]
    return list(dict.fromkeys(slices))
