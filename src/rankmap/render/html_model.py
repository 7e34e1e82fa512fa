"""The nodes x GPUs grid behind the HTML rank map. Pure: a Report in, view values out.

GPUs come from the report's ``inventory`` section when present, else from the placements.
A rank sits on the GPU with its ``pci_bus_id``, else its UUID (or MIG parent), else its NVML
index. Ranks with an ``error`` or no GPU identity are "unplaced" (out of range / unknown).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rankmap.findings import Report, Severity
from rankmap.model import Placement
from rankmap.ranks import rank_ranges

UNKNOWN_NODE = "(unknown node)"


@dataclass
class GpuSlot:
    """One physical GPU of a node and the ranks on it."""

    nvml_index: int | None
    pci_bus_id: str | None
    uuid: str | None
    name: str | None = None
    mig_uuids: tuple[str, ...] = ()
    ranks: list[Placement] = field(default_factory=list)

    @property
    def collision(self) -> bool:
        """Several ranks on this physical GPU (MIG slices of it included)."""
        return len(self.ranks) > 1

    @property
    def label(self) -> str:
        if self.nvml_index is not None:
            return f"GPU {self.nvml_index}"
        return f"GPU {self.pci_bus_id or (self.uuid or '?')[:12]}"


@dataclass
class NodeView:
    """One node: its GPUs, the ranks that could not be placed, and its identity group."""

    name: str
    gpus: list[GpuSlot] = field(default_factory=list)
    unplaced: list[Placement] = field(default_factory=list)
    identity_group: int | None = None
    finding_severity: str | None = None  # worst severity of findings naming this node

    @property
    def ranks(self) -> list[int]:
        out = [p.rank for g in self.gpus for p in g.ranks] + [p.rank for p in self.unplaced]
        return sorted(out)

    @property
    def collisions(self) -> int:
        return sum(1 for g in self.gpus if g.collision)

    @property
    def problem(self) -> bool:
        return bool(self.collisions or self.unplaced or self.finding_severity == "error")


def compress_ranks(ranks: Iterable[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2,5"``."""
    return rank_ranges(ranks, sep=",")


def _inventory_hosts(report: Report) -> list[Mapping[str, Any]]:
    inv = report.sections.get("inventory")
    hosts = inv.get("hosts") if isinstance(inv, Mapping) else None
    return [h for h in hosts or () if isinstance(h, Mapping)]


def _slot_from_doc(doc: Mapping[str, Any]) -> GpuSlot:
    migs = tuple(str(m.get("uuid")) for m in doc.get("mig_devices") or () if isinstance(m, Mapping))
    index = doc.get("nvml_index")
    return GpuSlot(
        nvml_index=int(index) if isinstance(index, int) else None,
        pci_bus_id=str(doc["pci_bus_id"]) if doc.get("pci_bus_id") else None,
        uuid=str(doc["uuid"]) if doc.get("uuid") else None,
        name=str(doc["name"]) if doc.get("name") else None,
        mig_uuids=migs,
    )


def _find_slot(node: NodeView, p: Placement) -> GpuSlot | None:
    parent = p.mig.parent_uuid if p.mig else None
    for slot in node.gpus:
        if p.pci_bus_id and slot.pci_bus_id == p.pci_bus_id:
            return slot
        if slot.uuid and slot.uuid in (p.uuid, parent):
            return slot
        if p.uuid and p.uuid in slot.mig_uuids:
            return slot
    if p.pci_bus_id or p.uuid:
        return None
    return next((s for s in node.gpus if s.nvml_index == p.nvml_index), None)


def _place(node: NodeView, p: Placement) -> None:
    if p.error or (p.nvml_index is None and not p.pci_bus_id and not p.uuid):
        node.unplaced.append(p)
        return
    slot = _find_slot(node, p)
    if slot is None:
        slot = GpuSlot(p.nvml_index, p.pci_bus_id, p.mig.parent_uuid if p.mig else p.uuid)
        node.gpus.append(slot)
        node.gpus.sort(key=lambda s: (s.nvml_index is None, s.nvml_index or 0, s.pci_bus_id or ""))
    slot.ranks.append(p)


def _identity_groups(report: Report, hosts: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    groups: list[list[str]] = []
    for f in report.findings:
        if f.category == "host_identity" and len(f.hosts) > 1:
            groups.append(list(f.hosts))
    by_hash: dict[str, list[str]] = {}
    for h in hosts:
        ident = h.get("identity") if isinstance(h.get("identity"), Mapping) else {}
        key = ident.get("nccl_host_hash_input") if isinstance(ident, Mapping) else None
        if key:
            by_hash.setdefault(str(key), []).append(str(h.get("hostname")))
    groups += [names for names in by_hash.values() if len(names) > 1]
    merged: list[list[str]] = []
    for g in groups:
        if not any(set(g) <= set(m) for m in merged):
            merged.append(g)
    return merged


def build_grid(report: Report) -> tuple[list[NodeView], list[list[str]]]:
    """Nodes (inventory order, then placement order) and the host-identity groups."""
    hosts = _inventory_hosts(report)
    nodes: dict[str, NodeView] = {}
    for h in hosts:
        name = str(h.get("hostname") or UNKNOWN_NODE)
        node = nodes.setdefault(name, NodeView(name))
        node.gpus += [_slot_from_doc(g) for g in h.get("gpus") or () if isinstance(g, Mapping)]
    only = next(iter(nodes)) if len(nodes) == 1 else None  # one machine: ranks without a node
    for p in sorted(report.placements, key=lambda p: p.rank):
        name = p.node or only or UNKNOWN_NODE
        _place(nodes.setdefault(name, NodeView(name)), p)
    groups = _identity_groups(report, hosts)
    for i, group in enumerate(groups, start=1):
        for name in group:
            if name in nodes:
                nodes[name].identity_group = i
    for f in report.findings:
        for host_name in f.hosts:
            named = nodes.get(host_name)
            if named is None:
                continue
            if (
                named.finding_severity is None
                or f.severity.rank < Severity(named.finding_severity).rank
            ):
                named.finding_severity = f.severity.value
    return list(nodes.values()), groups
