"""Findings from topology: ranks of one job placed across sockets, NVLink unused, links down.

Pure: a :class:`~rankmap.model.Host` with a ``topology`` and the job's placements in, findings
out. Call it through :func:`rankmap.topology.topology_findings`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations

from rankmap.findings import Finding, finding
from rankmap.model import Host, Placement
from rankmap.topology import Topology, host_topology, is_nvlink, link_rank

# Exhaustive search for a better GPU subset only up to this many GPUs per host (C(16,8) = 12870).
MAX_SEARCH_GPUS = 16


def _worst(topo: Topology, gpus: Sequence[int]) -> str | None:
    """The farthest link among all pairs of ``gpus`` (``None`` if a pair is unknown)."""
    worst: str | None = None
    for a, b in combinations(gpus, 2):
        link = topo.gpu_link(a, b)
        if link is None:
            return None
        if worst is None or link_rank(link) > link_rank(worst):
            worst = link
    return worst


def _best_subset(topo: Topology, k: int) -> tuple[tuple[int, ...], str] | None:
    """The k-GPU subset whose farthest pair is closest (first found in NVML order)."""
    indices = sorted(g.nvml_index for g in topo.gpus)
    if len(indices) > MAX_SEARCH_GPUS or k > len(indices):
        return None
    best: tuple[tuple[int, ...], str] | None = None
    for subset in combinations(indices, k):
        worst = _worst(topo, subset)
        if worst is not None and (best is None or link_rank(worst) < link_rank(best[1])):
            best = (subset, worst)
    return best


def _on_host(host: Host, placements: Iterable[Placement]) -> list[Placement]:
    return [
        p
        for p in placements
        if p.nvml_index is not None and p.error is None and p.node in (None, host.hostname)
    ]


def _bus_ids(host: Host, gpus: Iterable[int]) -> list[str]:
    by_index = {g.nvml_index: g for g in host.gpus}
    return [
        by_index[i].pci_bus_id or by_index[i].uuid
        for i in gpus
        if i in by_index and (by_index[i].pci_bus_id or by_index[i].uuid)
    ]


def _numa_note(topo: Topology, gpus: Sequence[int]) -> str:
    parts = []
    for i in gpus:
        loc = topo.gpu(i)
        numa = loc.numa_node if loc and loc.numa_node is not None else "?"
        parts.append(f"GPU {i}: NUMA {numa}")
    return ", ".join(parts)


def placement_findings(
    host: Host, topo: Topology, placements: Sequence[Placement]
) -> list[Finding]:
    """RM990 / RM991 for the GPUs the job's ranks use on ``host``."""
    used = sorted({p.nvml_index for p in placements if p.nvml_index is not None})
    if len(used) < 2:
        return []
    worst = _worst(topo, used)
    best = _best_subset(topo, len(used))
    if worst is None or best is None or link_rank(best[1]) >= link_rank(worst):
        return []
    subset, best_link = best
    ranks = [p.rank for p in placements]
    pairs = [
        f"GPU {a}-{b}: {topo.gpu_link(a, b)}"
        for a, b in combinations(used, 2)
        if topo.gpu_link(a, b) == worst
    ]
    cvd = ",".join(str(i) for i in subset)
    detail = (
        f"the job's ranks use GPUs {','.join(map(str, used))} of {host.hostname}; the farthest "
        f"pairs are {'; '.join(pairs[:6])} ({_numa_note(topo, used)}). GPUs {cvd} would be "
        f"connected by {best_link} or closer."
    )
    fix = (
        f"CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES={cvd} (NVML indices {cvd}; "
        "see `rankmap topo`)"
    )
    if is_nvlink(best_link) and not is_nvlink(worst):
        code, title = "RM991", f"GPU pairs of the job on {host.hostname} have no NVLink"
    elif worst == "SYS":
        code, title = "RM990", f"the job's GPUs on {host.hostname} talk across CPU sockets (SYS)"
    else:
        return []
    return [
        finding(
            code,
            title,
            detail=detail,
            ranks=ranks,
            devices=_bus_ids(host, used),
            hosts=[host.hostname],
            fix=fix,
        )
    ]


def nvlink_down_findings(
    host: Host, topo: Topology, gpus: Iterable[int] | None = None
) -> list[Finding]:
    """RM992 for every GPU (of ``gpus``, default all) with fewer active NVLinks than it has."""
    wanted = None if gpus is None else set(gpus)
    out = []
    for loc in topo.gpus:
        nv = loc.nvlink
        if wanted is not None and loc.nvml_index not in wanted:
            continue
        if nv is None or nv.links is None or nv.active is None or nv.active >= nv.links:
            continue
        out.append(
            finding(
                "RM992",
                f"GPU {loc.nvml_index} of {host.hostname}: {nv.active} of {nv.links} NVLink "
                "links active",
                detail=f"{loc.label} ({loc.pci_bus_id or 'bus id unknown'}) reports "
                f"{nv.links - nv.active} NVLink link(s) down.",
                devices=_bus_ids(host, [loc.nvml_index]),
                hosts=[host.hostname],
            )
        )
    return out


def topology_findings(host: Host, placements: Sequence[Placement] = ()) -> list[Finding]:
    """Topology findings for one host and the ranks placed on it (empty when no topology).

    With no placements only host-level facts (NVLink links down) are reported.
    """
    topo = host_topology(host)
    if topo is None:
        return []
    mine = _on_host(host, placements)
    used = sorted({p.nvml_index for p in mine if p.nvml_index is not None})
    out = placement_findings(host, topo, mine)
    out += nvlink_down_findings(host, topo, used if mine else None)
    return out


def _machine_key(host: Host) -> str | None:
    ident = host.identity
    return ident.boot_id or ident.machine_id


def _nvlink_between(hosts: Sequence[Host], bus_a: str, bus_b: str) -> str | None:
    """The NV# link between two bus ids in any of ``hosts``' topologies, else ``None``."""
    for host in hosts:
        topo = host_topology(host)
        if topo is None:
            continue
        by_bus = {g.pci_bus_id: g.nvml_index for g in topo.gpus if g.pci_bus_id}
        if bus_a in by_bus and bus_b in by_bus:
            link = topo.gpu_link(by_bus[bus_a], by_bus[bus_b])
            return link if link and is_nvlink(link) else None
    return None


def split_machine_findings(hosts: Sequence[Host], placements: Sequence[Placement]) -> list[Finding]:
    """RM803 when one machine (same boot_id / machine-id) appears as several NCCL hosts and
    ranks on its NVLink-connected GPUs are therefore split: NCCL uses the network between them.
    """
    groups: dict[str, list[Host]] = {}
    for host in hosts:
        key = _machine_key(host)
        if key:
            groups.setdefault(key, []).append(host)
    out = []
    for key, members in groups.items():
        hashes = {h.identity.nccl_host_hash_input() or h.hostname for h in members}
        if len(members) < 2 or len(hashes) < 2:
            continue
        names = {h.hostname for h in members}
        used = [p for p in placements if p.node in names and p.pci_bus_id and p.error is None]
        pairs = [
            (a, b, link)
            for a, b in combinations(used, 2)
            if a.node != b.node
            and (link := _nvlink_between(members, a.pci_bus_id or "", b.pci_bus_id or ""))
        ]
        if not pairs:
            continue
        a, b, link = pairs[0]
        out.append(
            finding(
                "RM803",
                f"one machine appears as {len(hashes)} NCCL hosts "
                f"({', '.join(sorted(names))}): NVLink between their GPUs is unused",
                detail=f"hosts {', '.join(sorted(names))} share boot_id/machine-id {key}, but "
                f"their NCCL host identities differ, so NCCL connects e.g. rank {a.rank} "
                f"({a.node}, {a.pci_bus_id}) and rank {b.rank} ({b.node}, {b.pci_bus_id}) over "
                f"the network although the GPUs are joined by {link}.",
                ranks=sorted({p.rank for pair in pairs for p in pair[:2]}),
                devices=sorted({p.pci_bus_id or "" for pair in pairs for p in pair[:2]}),
                hosts=sorted(names),
            )
        )
    return out
