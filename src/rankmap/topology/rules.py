"""Findings from topology: ranks of one job placed across sockets, NVLink unused, links down.

Pure: a :class:`~rankmap.model.Host` with a ``topology`` and the job's placements in, findings
out. Callers import it from here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from itertools import combinations

from rankmap.findings import Finding, finding
from rankmap.model import Host, Placement
from rankmap.topology import Topology, host_topology, is_nvlink, link_rank

# Exhaustive search for a better GPU subset only up to this many GPUs per host (C(16,8) = 12870).
MAX_SEARCH_GPUS = 16
MAX_HOSTS_LISTED = 64  # hosts named in one widened finding
MAX_PAIRS = 4096  # rank pairs of one split machine examined for NVLink
MAX_SPLIT_RANKS = 256  # ranks of one split machine paired up


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


def _best_subset(
    topo: Topology, k: int, candidates: Sequence[int]
) -> tuple[tuple[int, ...], str] | None:
    """The k-GPU subset of ``candidates`` whose farthest pair is closest (first in NVML order)."""
    indices = sorted(candidates)
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


def topo_index(topo: Topology, p: Placement) -> int | None:
    """The topology's GPU (NVML index of the matrix) behind a placement: by PCI bus id when the
    topology knows bus ids (a container renumbers NVML indices), else by NVML index."""
    if p.pci_bus_id:
        for g in topo.gpus:
            if g.pci_bus_id == p.pci_bus_id:
                return g.nvml_index
        if any(g.pci_bus_id for g in topo.gpus):
            return None
    return p.nvml_index


def _candidates(host: Host, topo: Topology) -> list[int]:
    """Topology GPUs this host can use (a container profile sees a subset of the machine)."""
    if not host.gpus:
        return sorted(g.nvml_index for g in topo.gpus)
    buses = {g.pci_bus_id for g in host.gpus if g.pci_bus_id}
    if buses and any(g.pci_bus_id for g in topo.gpus):
        return sorted(g.nvml_index for g in topo.gpus if g.pci_bus_id in buses)
    indices = {g.nvml_index for g in host.gpus}
    return sorted(g.nvml_index for g in topo.gpus if g.nvml_index in indices)


def _host_index(host: Host, topo: Topology, index: int) -> int:
    """The host's own NVML index (what CUDA_VISIBLE_DEVICES names) of a topology GPU."""
    loc = topo.gpu(index)
    gpu = host.gpu_by_bus_id(loc.pci_bus_id) if loc is not None and loc.pci_bus_id else None
    return gpu.nvml_index if gpu is not None else index


def _bus_ids(host: Host, topo: Topology, gpus: Iterable[int]) -> list[str]:
    by_index = {g.nvml_index: g for g in host.gpus}
    out = []
    for i in gpus:
        loc = topo.gpu(i)
        if loc is not None and loc.pci_bus_id:
            out.append(loc.pci_bus_id)
        elif i in by_index and (by_index[i].pci_bus_id or by_index[i].uuid):
            out.append(by_index[i].pci_bus_id or by_index[i].uuid)
    return out


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
    used = sorted({i for p in placements if (i := topo_index(topo, p)) is not None})
    if len(used) < 2:
        return []
    worst = _worst(topo, used)
    best = _best_subset(topo, len(used), _candidates(host, topo))
    if worst is None or best is None or link_rank(best[1]) >= link_rank(worst):
        return []
    subset, best_link = best
    ranks = [p.rank for p in placements]
    pairs = [
        f"GPU {a}-{b}: {topo.gpu_link(a, b)}"
        for a, b in combinations(used, 2)
        if topo.gpu_link(a, b) == worst
    ]
    cvd = ",".join(str(_host_index(host, topo, i)) for i in subset)
    shown = ",".join(str(_host_index(host, topo, i)) for i in used)
    detail = (
        f"the job's ranks use GPUs {shown} of {host.hostname}; the farthest "
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
            devices=_bus_ids(host, topo, used),
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
                devices=_bus_ids(host, topo, [loc.nvml_index]),
                hosts=[host.hostname],
            )
        )
    return out


def topology_findings(
    host: Host, placements: Sequence[Placement] = (), *, topo: Topology | None = None
) -> list[Finding]:
    """Topology findings for one host and the ranks placed on it (empty when no topology).

    ``topo`` overrides ``host.topology`` (a probe record's compact topology). With no
    placements only host-level facts (NVLink links down) are reported.
    """
    topo = topo if topo is not None else host_topology(host)
    if topo is None:
        return []
    mine = _on_host(host, placements)
    used = sorted({i for p in mine if (i := topo_index(topo, p)) is not None})
    out = placement_findings(host, topo, mine)
    out += nvlink_down_findings(host, topo, used if mine else None)
    return out


def for_more_hosts(found: Finding, hosts: Sequence[str], ranks: Sequence[int]) -> Finding:
    """``found`` (computed for ``hosts[0]``) widened to every host with the same layout."""
    if len(hosts) < 2:
        return found
    more = len(hosts) - 1
    return replace(
        found,
        title=f"{found.title} (and {more} more node{'s' if more > 1 else ''} laid out alike)",
        hosts=tuple(hosts[:MAX_HOSTS_LISTED]),
        ranks=tuple(sorted(ranks)),
    )


def _machine_key(host: Host) -> str | None:
    ident = host.identity
    return ident.boot_id or ident.machine_id


def _nvlink_between(topos: Sequence[Topology], bus_a: str, bus_b: str) -> str | None:
    """The NV# link between two bus ids in any of the machine's topologies, else ``None``."""
    for topo in topos:
        by_bus = {g.pci_bus_id: g.nvml_index for g in topo.gpus if g.pci_bus_id}
        if bus_a in by_bus and bus_b in by_bus:
            link = topo.gpu_link(by_bus[bus_a], by_bus[bus_b])
            return link if link and is_nvlink(link) else None
    return None


def split_machine_findings(
    hosts: Sequence[Host],
    placements: Sequence[Placement],
    *,
    topologies: Mapping[str, Topology] | None = None,
    nccl_keys: Mapping[str, str] | None = None,
    without_nvlink: bool = True,
) -> list[Finding]:
    """RM803 when one machine (same boot_id / machine-id) appears as several NCCL hosts and
    ranks of the job run under more than one of them: NCCL uses the network between them.

    ``topologies``: hostname -> topology (default: each host's own); the finding names an
    NVLink pair it leaves unused when one is known. ``nccl_keys``: hostname -> the string NCCL
    hashes (``NCCL_HOSTID`` set for the launch wins; default the host's hostname + boot_id).
    ``without_nvlink=False`` reports only splits that leave NVLink unused (the probe has its
    own generic RM803).
    """
    groups: dict[str, list[Host]] = {}
    for host in hosts:
        key = _machine_key(host)
        if key:
            groups.setdefault(key, []).append(host)
    out = []
    for key, members in groups.items():
        found = _split_finding(key, members, placements, topologies, nccl_keys, without_nvlink)
        if found is not None:
            out.append(found)
    return out


def _nccl_key(host: Host, nccl_keys: Mapping[str, str] | None) -> str:
    if nccl_keys and host.hostname in nccl_keys:
        return nccl_keys[host.hostname]
    return host.identity.nccl_host_hash_input() or host.hostname


def _split_finding(
    key: str,
    members: list[Host],
    placements: Sequence[Placement],
    topologies: Mapping[str, Topology] | None,
    nccl_keys: Mapping[str, str] | None,
    without_nvlink: bool,
) -> Finding | None:
    ident_of = {h.hostname: _nccl_key(h, nccl_keys) for h in members}
    if len(members) < 2 or len(set(ident_of.values())) < 2:
        return None
    used = [p for p in placements if p.node in ident_of and p.error is None]
    idents = {ident_of[p.node or ""] for p in used}
    if len(idents) < 2:
        return None
    split = _cross_identity_pairs(used, ident_of)
    shared = [(a, b) for a, b in split if a.pci_bus_id == b.pci_bus_id]
    nvlinked = _nvlinked_pairs(members, topologies, split)
    if not nvlinked and not without_nvlink:
        return None
    names = sorted({p.node or "" for p in used})
    title, detail = _split_text(key, names, len(idents), nvlinked, shared)
    pairs = nvlinked or split
    return finding(
        "RM803",
        title,
        detail=detail,
        ranks=sorted({p.rank for pair in pairs for p in pair[:2]}),
        devices=sorted({p.pci_bus_id or "" for pair in pairs[:MAX_PAIRS] for p in pair[:2]}),
        hosts=names,
        fix="Run the ranks of one machine in one container/pod (or with a shared UTS namespace, "
        "e.g. hostNetwork), or give exactly those processes the same NCCL_HOSTID.",
    )


_Pair = tuple[Placement, Placement]
_LinkedPair = tuple[Placement, Placement, str]


def _cross_identity_pairs(used: Sequence[Placement], ident_of: Mapping[str, str]) -> list[_Pair]:
    """Pairs of placed ranks (first MAX_SPLIT_RANKS with a GPU) under different NCCL hosts."""
    return [
        (a, b)
        for a, b in combinations([p for p in used if p.pci_bus_id][:MAX_SPLIT_RANKS], 2)
        if ident_of[a.node or ""] != ident_of[b.node or ""]
    ]


def _nvlinked_pairs(
    members: Sequence[Host], topologies: Mapping[str, Topology] | None, split: Sequence[_Pair]
) -> list[_LinkedPair]:
    """The first MAX_PAIRS split pairs on distinct GPUs that NVLink joins, with the link."""
    topos = [
        t
        for h in members
        if (t := (topologies or {}).get(h.hostname) or host_topology(h)) is not None
    ]
    return [
        (a, b, link)
        for a, b in split[:MAX_PAIRS]
        if a.pci_bus_id != b.pci_bus_id
        and (link := _nvlink_between(topos, a.pci_bus_id or "", b.pci_bus_id or ""))
    ]


def _split_text(
    key: str,
    names: Sequence[str],
    n_idents: int,
    nvlinked: Sequence[_LinkedPair],
    shared: Sequence[_Pair],
) -> tuple[str, str]:
    """RM803's title and detail, with one NVLinked and one GPU-sharing example if any."""
    title = f"one machine appears as {n_idents} NCCL hosts ({', '.join(names)})"
    detail = (
        f"hosts {', '.join(names)} share boot_id/machine-id {key}, but their NCCL host "
        "identities (hostname + boot_id, or NCCL_HOSTID) differ, so NCCL connects their ranks "
        "over the network: no shared memory or CUDA P2P between them."
    )
    if nvlinked:
        a, b, link = nvlinked[0]
        title += ": NVLink between their GPUs is unused"
        detail += (
            f" E.g. rank {a.rank} ({a.node}, {a.pci_bus_id}) and rank {b.rank} ({b.node}, "
            f"{b.pci_bus_id}) are joined by {link}."
        )
    if shared:
        a, b = shared[0]
        # NOTE: NCCL's duplicate-GPU check compares only ranks with the same host hash
        # (reference/nccl.md (a)), so this sharing is not reported by NCCL (unverified further).
        detail += (
            f" Ranks {a.rank} ({a.node}) and {b.rank} ({b.node}) also share GPU {a.pci_bus_id},"
            " which NCCL cannot detect across host identities."
        )
    return title, detail
