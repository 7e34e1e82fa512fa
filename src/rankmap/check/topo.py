"""Topology findings of a simulated launch: where the ranks of each node sit on the machine's
GPU / CPU topology (RM990 across sockets, RM991 NVLink unused, RM992 links down) and one
machine split into several NCCL hosts (RM803). Rules: :mod:`rankmap.topology.rules`.

Only hosts whose profile carries a ``topology`` are examined. Nodes with the same machine and
the same GPUs in use are examined once (a 1,024-node clone costs one search) and reported as one
finding naming them all.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rankmap.check.nccl import host_key
from rankmap.findings import Finding
from rankmap.launchers import LaunchPlan
from rankmap.model import Host, Placement
from rankmap.topology import Topology, host_topology
from rankmap.topology.rules import for_more_hosts, split_machine_findings, topology_findings

if TYPE_CHECKING:
    from rankmap.check.engine import RankOutcome


def topology_findings_for(
    plan: LaunchPlan,
    outcomes: Sequence[RankOutcome],
    placements: Sequence[Placement],
    env: Mapping[str, str],
) -> list[Finding]:
    """RM990/991/992 per node (grouped) and RM803 for split machines; warnings only."""
    parsed: dict[int, Topology | None] = {}
    groups: dict[tuple[object, ...], list[tuple[Host, list[Placement]]]] = defaultdict(list)
    topo_of: dict[tuple[object, ...], Topology | None] = {}
    by_node: dict[tuple[int, int], list[Placement]] = defaultdict(list)
    for o, p in zip(outcomes, placements, strict=True):
        by_node[(o.proc.world, o.proc.node)].append(p)
    for (world, node), mine in by_node.items():
        host = plan.hosts[node]
        if host.topology is None:
            continue
        if id(host.topology) not in parsed:
            parsed[id(host.topology)] = host_topology(host)
        used = tuple(sorted((p.pci_bus_id or "", p.nvml_index or 0) for p in mine if not p.error))
        key: tuple[object, ...] = (world, id(host.topology), id(host.gpus), used)
        groups[key].append((host, mine))
        topo_of[key] = parsed[id(host.topology)]
    out: list[Finding] = []
    for gkey, members in groups.items():
        topo = topo_of[gkey]
        if topo is None:
            continue
        host, mine = members[0]
        names = [h.hostname for h, _ in members]
        ranks = [p.rank for _, ps in members for p in ps]
        out += [for_more_hosts(f, names, ranks) for f in topology_findings(host, mine, topo=topo)]
    return _dedup(out) + _split(plan, outcomes, placements, env)


def _dedup(found: list[Finding]) -> list[Finding]:
    """One RM992 per GPU and host even when several worlds use it."""
    seen: set[tuple[str, str, tuple[str, ...]]] = set()
    out = []
    for f in found:
        key = (f.code, f.title, f.hosts)
        if f.code == "RM992" and key in seen:
            continue
        seen.add(key)
        out.append(f)
    return out


def _split(
    plan: LaunchPlan,
    outcomes: Sequence[RankOutcome],
    placements: Sequence[Placement],
    env: Mapping[str, str],
) -> list[Finding]:
    boots: dict[str, set[str]] = defaultdict(set)
    first: dict[int, RankOutcome] = {}
    for o in outcomes:
        first.setdefault(o.proc.node, o)
    for node in first:
        ident = plan.hosts[node].identity
        machine = ident.boot_id or ident.machine_id
        if machine:
            boots[machine].add(plan.hosts[node].hostname)
    if all(len(names) < 2 for names in boots.values()):
        return []  # the usual case: every machine has one hostname
    hosts = list({plan.hosts[n].hostname: plan.hosts[n] for n in first}.values())
    keys = {o.host.hostname: host_key(o, plan, env) for o in first.values()}
    return split_machine_findings(hosts, placements, nccl_keys=keys)
