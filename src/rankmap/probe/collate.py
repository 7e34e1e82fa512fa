"""Rank 0's collation: every rank's record -> one ``probe`` report (pure, no I/O).

The report carries the job-wide rank -> node -> GPU map (``placements``), the findings of
:mod:`rankmap.probe.checks`, an ``inventory`` of the GPUs each machine reported, ``nodes`` (one
entry per machine) and ``node_groups`` (machines with an identical layout grouped, so a
1,000-node job reads as "998 nodes like this, 2 outliers").
"""

from __future__ import annotations

import gc
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from operator import attrgetter
from typing import Any

import rankmap.probe.checks as checks
from rankmap.findings import Finding, Report, finding
from rankmap.model import Gpu, Host, MigRef, Placement
from rankmap.probe.network import check_socket_ifname
from rankmap.probe.record import RankRecord
from rankmap.ranks import rank_phrase, rank_ranges
from rankmap.topology import Topology, rules
from rankmap.topology.wire import from_wire


def node_labels(by_machine: Mapping[str, Sequence[RankRecord]]) -> dict[str, str]:
    """machine key -> a readable node name (hostname, made unique with the boot_id)."""
    keys_by_name: dict[str, list[str]] = defaultdict(list)
    for key, recs in by_machine.items():
        keys_by_name[recs[0].hostname or "?"].append(key)  # the hostname is part of the key
    out = {}
    for name, keys in keys_by_name.items():
        for key in keys:
            boot = key.split("|", 1)[1]
            out[key] = name if len(keys) == 1 else f"{name}#{boot[:8] or 'noboot'}"
    return out


def _short_error(r: RankRecord) -> str | None:
    if not r.device_error:
        return None
    head = r.device_error.split(":", 1)[0]
    seen = f" ({len(r.visible_uuids)} visible)" if r.visible_uuids is not None else ""
    return head + seen


_FAST_PLACEMENT = not hasattr(Placement, "__slots__") and not hasattr(Placement, "__post_init__")


def placement_of(r: RankRecord, node: str) -> Placement:
    """The contract's placement for one record."""
    mig = MigRef(r.uuid, r.mig_parent_uuid) if r.mig_parent_uuid and r.uuid else None
    values: dict[str, Any] = {
        "rank": r.rank,
        "local_rank": r.local_rank,
        "node": node,
        "cuda_index": r.cuda_index,
        "nvml_index": r.nvml_index,
        "uuid": r.mig_parent_uuid or r.uuid,
        "pci_bus_id": r.pci_bus_id,
        "mig": mig,
        "node_rank": r.node_rank,
        "error": _short_error(r),
        "source": "probe",
    }
    if not _FAST_PLACEMENT:
        return Placement(**values)
    # Every field is given: filling __dict__ skips 11 frozen object.__setattr__ calls per rank
    # (100,000 ranks). Falls back to the constructor if Placement ever gains slots/validation.
    p = object.__new__(Placement)
    object.__setattr__(p, "__dict__", values)
    return p


def _missing_finding(
    missing: Sequence[int],
    records: Sequence[RankRecord],
    label: dict[str, str],
    timeout: float | None,
    where: str | None,
) -> Finding:
    # torchrun/Slurm/MPI place ranks contiguously per node: rank // LOCAL_WORLD_SIZE is the
    # node rank (an expectation, said as such).
    by_node_rank = {r.node_rank: label[r.machine_key] for r in records if r.node_rank is not None}
    lws = next((r.local_world_size for r in records if r.local_world_size), None)
    expected: dict[str, list[int]] = defaultdict(list)
    for m in missing:
        node = by_node_rank.get(m // lws) if lws else None
        expected[node or "an unknown node"].append(m)
    where_txt = "; ".join(f"{_rank_list(v)} expected on {k}" for k, v in expected.items())
    within = f" within {timeout:g} s" if timeout is not None else ""
    return finding(
        "RM060",
        f"{_rank_list(list(missing))} never reported{within}",
        detail=f"{len(records)} of {len(records) + len(missing)} ranks reported"
        + (f" through {where}" if where else "")
        + f"; {where_txt}.",
        ranks=missing,
        hosts=[k for k in expected if k != "an unknown node"],
    )


def _unreadable_finding(unreadable: Mapping[int, str]) -> Finding:
    ranks = sorted(unreadable)
    first = ranks[0]
    return finding(
        "RM063",
        f"{_rank_list(ranks)} sent a probe record rankmap cannot read",
        detail=f"rank {first}: {unreadable[first]}"
        + (f" (and {len(ranks) - 1} more)" if len(ranks) > 1 else "")
        + ". These ranks reported, but their GPUs were not checked.",
        ranks=ranks,
    )


def _unreadable_placement(rank: int) -> Placement:
    return Placement(rank=rank, error="unreadable probe record", source="probe")


def _rank_findings(records: Sequence[RankRecord], label: dict[str, str]) -> list[Finding]:
    out = []
    conv = [r.rank for r in records if r.device_selected_by in ("local_rank", "default")]
    if conv:
        out.append(
            finding(
                "RM005",
                f"{_rank_list(conv)}: checked at cuda:LOCAL_RANK (the torchrun convention)",
                detail="No device was given and CUDA was not initialised yet, so each rank was "
                "checked at the device the convention gives it.",
                fix="Pass device= to rankmap.verify() (or call it after torch.cuda.set_device) "
                "when the script selects its GPU differently.",
                ranks=conv,
            )
        )
    blind: dict[str, list[int]] = defaultdict(list)
    notes: list[tuple[int, str]] = []
    for r in records:
        if r.device_source == "none":
            blind[label[r.machine_key]].append(r.rank)
        if r.device_notes:
            notes += [(r.rank, n) for n in r.device_notes]
    for node, rs in blind.items():
        sample = next(
            (p for r in records if r.rank == rs[0] for p in r.problems), "no GPU information"
        )
        out.append(
            finding(
                "RM001",
                f"{node}: the GPUs of ranks {rank_ranges(rs)} are unknown",
                detail=f"{sample}. Run on the GPU node, or pass machine= / RANKMAP_MACHINE.",
                ranks=rs,
                hosts=[node],
            )
        )
    if notes:
        out.append(
            finding(
                "RM062",
                f"CUDA and NVML disagree for ranks {rank_ranges(r for r, _ in notes)}",
                detail=notes[0][1],
                ranks=[r for r, _ in notes],
            )
        )
    if len({r.world_size for r in records}) > 1:
        sizes = checks.version_groups(records, "world_size")
        out.append(
            finding(
                "RM905",
                "ranks disagree on WORLD_SIZE: "
                + ", ".join(f"{v} (ranks {rank_ranges(rs)})" for v, rs in sorted(sizes.items())),
                ranks=[r.rank for r in records],
            )
        )
    return out


def _layout(recs: list[RankRecord]) -> tuple[Any, ...]:
    # a signature: any fixed order works, and an unknown (None) index must not break the sort
    rows = [
        (r.local_rank, r.cuda_index, r.nvml_index, r.device_error is None, r.device_source)
        for r in recs
    ]
    try:
        return tuple(sorted(rows))  # the usual case: known indexes (C-level comparisons)
    except TypeError:  # None against an int: the same multiset always gets here
        return tuple(sorted(rows, key=_none_first))


def _none_first(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((v is not None, v if v is not None else 0) for v in row)


def _layout_text(recs: list[RankRecord]) -> str:
    parts = []
    for r in sorted(recs, key=lambda r: (r.local_rank or 0, r.rank)):
        gpu = (
            "invalid"
            if r.device_error
            else (f"GPU {r.nvml_index}" if r.nvml_index is not None else "GPU ?")
        )
        parts.append(f"{r.local_rank}->cuda:{r.cuda_index}->{gpu}")
    return ", ".join(parts[:16]) + (f", ... ({len(parts)} ranks)" if len(parts) > 16 else "")


def node_sections(
    by_machine: dict[str, list[RankRecord]], label: dict[str, str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """(nodes, node_groups, inventory) sections."""
    nodes, hosts = [], []
    groups: dict[tuple[Any, ...], list[str]] = defaultdict(list)
    sample: dict[tuple[Any, ...], list[RankRecord]] = {}
    for key, recs in sorted(by_machine.items(), key=lambda kv: min(r.rank for r in kv[1])):
        first = recs[0]
        nodes.append(
            {
                "node": label[key],
                "hostname": first.hostname,
                "boot_id": first.boot_id,
                "nccl_hostid": first.nccl_hostid,
                "node_rank": first.node_rank,
                "ranks": rank_ranges(r.rank for r in recs),
                "count": len(recs),
            }
        )
        gpus = next((r.gpus for r in recs if r.gpus is not None), None)
        if gpus is not None:
            hosts.append({"hostname": label[key], "gpus": [dict(g) for g in gpus]})
        sig = _layout(recs)
        groups[sig].append(label[key])
        sample.setdefault(sig, recs)
    node_groups = [
        {
            "nodes": names,
            "count": len(names),
            "ranks_per_node": len(sample[sig]),
            "layout": _layout_text(sample[sig]),
        }
        for sig, names in sorted(groups.items(), key=lambda kv: -len(kv[1]))
    ]
    return nodes, node_groups, {"hosts": hosts}


def collate(
    records: Sequence[RankRecord],
    *,
    world_size: int | None = None,
    missing: Sequence[int] = (),
    arrivals: int | None = None,
    timeout: float | None = None,
    where: str | None = None,
    unreadable: Mapping[int, str] | None = None,
) -> Report:
    """Every check over the records that arrived; ``missing`` ranks become RM060, ``unreadable``
    ones (rank -> why) RM063."""
    records = sorted(records, key=attrgetter("rank"))
    unreadable = dict(unreadable or {})
    machine_keys = [r.machine_key for r in records]  # (derived: once per record)
    by_machine: dict[str, list[RankRecord]] = defaultdict(list)
    for key, r in zip(machine_keys, records, strict=True):
        by_machine[key].append(r)
    label = node_labels(by_machine)
    found: list[Finding] = []
    if missing:
        found.append(_missing_finding(missing, records, label, timeout, where))
    if world_size is not None and arrivals is not None and arrivals > world_size:
        found.append(
            finding(
                "RM905",
                f"{arrivals} processes reported for a world of {world_size}: "
                "several processes claim the same rank",
            )
        )
    found += checks.check_identity(by_machine, label)
    found += checks.check_duplicates(records, label)
    found += checks.check_ordinals(records, label, by_machine)
    found += checks.check_node_consistency(
        by_machine, label, complete=not missing and not unreadable
    )
    found += checks.check_versions(records)
    found += check_socket_ifname(records, label)
    found += _rank_findings(records, label)
    placements = [placement_of(r, label[k]) for r, k in zip(records, machine_keys, strict=True)]
    found = topology_findings(by_machine, label, placements, found)
    if unreadable:
        found.append(_unreadable_finding(unreadable))
        placements = sorted(
            placements + [_unreadable_placement(r) for r in unreadable], key=lambda p: p.rank
        )
    nodes, node_groups, inventory = node_sections(by_machine, label)
    return Report(
        command="probe",
        findings=found,
        placements=placements,
        sections={
            "world_size": world_size if world_size is not None else len(records),
            "missing_ranks": list(missing),
            "store": where,
            "nodes": nodes,
            "node_groups": node_groups,
            "inventory": inventory,
        },
    )


def _topologies(by_machine: dict[str, list[RankRecord]]) -> dict[str, Topology]:
    """machine key -> its parsed topology (each distinct text parsed once); bad text skipped."""
    out = {}
    for key, recs in by_machine.items():
        text = next((r.topology for r in recs if r.topology), None)
        if text:
            try:
                out[key] = from_wire(text)
            except ValueError:
                continue  # NOTE: a garbled topology only loses these findings
    return out


def _host(key: str, recs: list[RankRecord], label: dict[str, str]) -> Host:
    """The machine as the topology rules need it: name, identity and the GPUs it can use (the
    inventory local rank 0 sent; a better GPU set is only sought among those)."""
    inventory = next((r.gpus for r in recs if r.gpus), ())
    gpus = tuple(
        Gpu(
            nvml_index=int(g["nvml_index"]), uuid=str(g.get("uuid")), pci_bus_id=g.get("pci_bus_id")
        )
        for g in inventory
        if isinstance(g, Mapping) and isinstance(g.get("nvml_index"), int)
    )
    return Host(hostname=label[key], gpus=gpus, identity=recs[0].identity)


def topology_findings(
    by_machine: dict[str, list[RankRecord]],
    label: dict[str, str],
    placements: Sequence[Placement],
    found: list[Finding],
) -> list[Finding]:
    """``found`` plus RM990/991/992 for machines whose records carry a topology (machines with
    the same topology and the same GPUs in use examined once), and the generic RM803 of a split
    machine replaced by one that names the NVLink pair it leaves unused."""
    topos = _topologies(by_machine)
    if not topos:
        return found
    mine: dict[str, list[Placement]] = defaultdict(list)
    key_of = {name: key for key, name in label.items()}
    for p in placements:
        mine[key_of[p.node or ""]].append(p)
    groups: dict[tuple[object, ...], list[str]] = defaultdict(list)
    for key, topo in topos.items():
        used = tuple([p.pci_bus_id or p.nvml_index for p in mine[key]])  # alike nodes match
        groups[(id(topo), used)].append(key)
    out = list(found)
    for keys in groups.values():
        key = keys[0]
        names = [label[k] for k in keys]
        ranks = [p.rank for k in keys for p in mine[k]]
        host = _host(key, by_machine[key], label)
        for f in rules.topology_findings(host, mine[key], topo=topos[key]):
            out.append(rules.for_more_hosts(f, names, ranks))
    return _with_nvlink_split(out, by_machine, label, placements, topos)


def _with_nvlink_split(
    found: list[Finding],
    by_machine: dict[str, list[RankRecord]],
    label: dict[str, str],
    placements: Sequence[Placement],
    topos: dict[str, Topology],
) -> list[Finding]:
    generic = [f for f in found if f.code == "RM803"]
    if not generic:
        return found
    hosts = [_host(k, recs, label) for k, recs in by_machine.items() if k in topos]
    split = rules.split_machine_findings(
        hosts,
        placements,
        topologies={label[k]: t for k, t in topos.items()},
        nccl_keys={label[k]: recs[0].nccl_host_key for k, recs in by_machine.items()},
        without_nvlink=False,
    )
    out = []
    for f in found:
        better = next((s for s in split if f.code == "RM803" and set(s.hosts) & set(f.hosts)), None)
        if better is not None:
            f = replace(f, title=better.title, detail=better.detail, devices=better.devices,
                        fix=better.fix)  # fmt: skip
        out.append(f)
    return out


def collate_raw(
    raw: Sequence[bytes],
    shared: Mapping[str, bytes],
    ranks: Sequence[int] | None = None,
    **kwargs: Any,
) -> Report:
    """Collate records as they come out of the store (own parts + shared parts by digest).

    ``ranks``: the rank each part was stored under. A part that cannot be read is RM063 about
    that rank (it reported; its placement says the record was unreadable).

    The cyclic garbage collector is paused meanwhile: building 100,000 records (no cycles)
    otherwise triggers full collections that cost more than the collation itself.
    """
    from rankmap.probe.wire import decode_many

    paused = gc.isenabled()
    gc.disable()
    try:
        decoded = decode_many(raw, shared, ranks)
        return collate(decoded.records, unreadable=decoded.unreadable, **kwargs)
    finally:
        if paused:
            gc.enable()


def _rank_list(ranks: Sequence[int]) -> str:
    return rank_phrase(ranks, max_runs=None)
