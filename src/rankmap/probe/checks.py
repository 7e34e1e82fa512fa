"""The rules rank 0 runs over every rank's record (pure: records in, findings out).

Duplicate GPUs are grouped the way NCCL groups them (same host hash - NCCL_HOSTID, else
hostname + boot_id - and the same physical GPU; reference/nccl.md (a), (b)); host-identity rules
compare hostname, boot_id and NCCL_HOSTID across machines (NCCL_SOCKET_IFNAME: network.py).
Every rule is linear in the number of records (100,000 ranks: benchmarks/probe_bench.py).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import attrgetter

from rankmap.findings import Finding, Severity, finding
from rankmap.gpu_sharing import (
    OrdinalFacts,
    SharedGpuFacts,
    duplicate_line,
    nccl_device,
    ordinal_code,
    shared_gpu_code,
)
from rankmap.probe.record import RankRecord
from rankmap.ranks import rank_phrase, rank_ranges

MAX_LISTED = 6


def _more(parts: list[str]) -> str:
    shown = "; ".join(parts[:MAX_LISTED])
    return shown + (f"; and {len(parts) - MAX_LISTED} more" if len(parts) > MAX_LISTED else "")


def _gpu_label(rec: RankRecord) -> str:
    idx = f"GPU {rec.nvml_index}" if rec.nvml_index is not None else "GPU"
    return f"{idx} ({rec.pci_bus_id or rec.physical_uuid})"


def _dup_code(group: list[RankRecord], peers: int) -> str:
    count = len(group[0].visible_uuids or ())
    return shared_gpu_code(
        SharedGpuFacts(
            mig_siblings=any(r.mig_parent_uuid for r in group) and len({r.uuid for r in group}) > 1,
            each_sees_one=all(
                r.visible_uuids is not None and len(r.visible_uuids) == 1 for r in group
            ),
            wraps=bool(count)
            and peers > count
            and all(
                r.local_rank is not None and r.cuda_index == r.local_rank % count for r in group
            ),
            stayed_on_default=len({r.cuda_index for r in group}) == 1
            and all(r.device_selected_by in ("current_device", "default") for r in group),
        )
    )


def _rank_list(ranks: Sequence[int]) -> str:
    return rank_phrase(ranks, max_runs=None)


def check_duplicates(records: Sequence[RankRecord], label: dict[str, str]) -> list[Finding]:
    """Two ranks on one physical GPU of one NCCL host (MIG siblings included)."""
    groups: dict[tuple[str, str], list[RankRecord]] = defaultdict(list)
    peers: dict[str, int] = defaultdict(int)
    for r in records:
        host_key = r.nccl_host_key
        peers[host_key] += 1
        gpu = r.mig_parent_uuid or r.uuid or r.pci_bus_id  # the physical GPU
        if gpu and not r.device_error:
            groups[(host_key, gpu)].append(r)
    by_code: dict[str, list[list[RankRecord]]] = defaultdict(list)
    for (host_key, _), group in groups.items():
        if len(group) < 2 or len({r.machine_key for r in group}) > 1:
            continue  # several machines merged by NCCL_HOSTID: reported by check_identity
        by_code[_dup_code(group, peers[host_key])].append(sorted(group, key=lambda r: r.rank))
    out = []
    for code, dup_groups in by_code.items():
        parts, nccl_lines = [], []
        for g in dup_groups:
            node = label[g[0].machine_key]
            parts.append(f"{_rank_list([r.rank for r in g])} on {_gpu_label(g[0])} of {node}")
            if g[0].pci_bus_id:
                nccl_lines.append(
                    duplicate_line(g[1].rank, g[0].rank, nccl_device(g[0].pci_bus_id, None))
                )
        usage = "; ".join(
            f"rank {r.rank} cuda:{r.cuda_index} ({r.device_selected_by})" for r in dup_groups[0]
        )
        what = "MIG instances of one GPU" if code == "RM601" else "the same GPU"
        detail = f"{usage}."
        if nccl_lines:
            detail += f" NCCL (2.5-2.29) would stop with `{nccl_lines[0]}`."
        out.append(
            finding(
                code,
                f"{_more(parts)}: several ranks use {what}",
                detail=detail,
                ranks=[r.rank for g in dup_groups for r in g],
                devices=[g[0].pci_bus_id or g[0].physical_uuid or "" for g in dup_groups],
                hosts=sorted({label[g[0].machine_key] for g in dup_groups}),
            )
        )
    return out


def _ordinal_code(r: RankRecord, node_records: list[RankRecord]) -> str:
    count = len(r.visible_uuids) if r.visible_uuids is not None else None
    host_gpus = next((len(p.gpus) for p in node_records if p.gpus is not None), None)
    narrowed = r.cuda_visible_devices is not None and count is not None
    seen = {tuple(p.visible_uuids) for p in node_records if p.visible_uuids is not None}
    return ordinal_code(
        OrdinalFacts(
            # a visible list with no usable entry (0,0 / 9 / abc / an unknown MIG UUID): doctor's
            # and check's RM203, not a count to fix (review 19)
            no_devices=count == 0,
            mig_listed=sum(
                e.strip().startswith("MIG-") for e in (r.cuda_visible_devices or "").split(",")
            )
            > 1,
            selection="global_rank"
            if r.cuda_index == r.rank and r.local_rank is not None and r.rank != r.local_rank
            else None,
            # each process sees its own one GPU: a node with more GPUs, or different ones per
            # process — on a one-GPU machine every process sees the one GPU (oversubscribed)
            per_process=count == 1
            and all(p.visible_uuids is not None and len(p.visible_uuids) == 1 for p in node_records)
            and (len(seen) > 1 or (host_gpus or 0) > 1),
            narrowed=narrowed
            and (
                (r.gpus is not None and len(r.gpus) > (count or 0))
                or (host_gpus is not None and host_gpus > (count or 0))
            ),
        )
    )


def check_ordinals(
    records: Sequence[RankRecord], label: dict[str, str], by_machine: dict[str, list[RankRecord]]
) -> list[Finding]:
    """Ranks whose CUDA index does not exist in their process."""
    by: dict[tuple[str, str], list[RankRecord]] = defaultdict(list)
    for r in records:
        if r.device_error:
            by[(_ordinal_code(r, by_machine[r.machine_key]), r.machine_key)].append(r)
    out = []
    for (code, key), bad in sorted(by.items(), key=lambda kv: kv[1][0].rank):
        bad.sort(key=lambda r: r.rank)
        count = len(bad[0].visible_uuids) if bad[0].visible_uuids is not None else None
        idx = ", ".join(f"cuda:{r.cuda_index}" for r in bad[:MAX_LISTED])
        seen = f"only {count} GPU(s) are visible" if count is not None else "they do not exist"
        cvd = bad[0].cuda_visible_devices
        verb = "asks" if len(bad) == 1 else "ask"
        out.append(
            finding(
                code,
                f"{_rank_list([r.rank for r in bad])} on {label[key]} {verb} for {idx} but {seen} "
                "(invalid device ordinal)",
                severity=Severity.ERROR,  # the process fails, whichever cause the code names
                detail=f"{bad[0].device_error}"
                + (f"; CUDA_VISIBLE_DEVICES={cvd}" if cvd is not None else "")
                + f"; device chosen by {bad[0].device_selected_by}.",
                ranks=[r.rank for r in bad],
                hosts=[label[key]],
            )
        )
    return out


def check_node_consistency(
    by_machine: dict[str, list[RankRecord]], label: dict[str, str], complete: bool
) -> list[Finding]:
    """Duplicated local ranks, LOCAL_WORLD_SIZE vs ranks seen, different GPU sets per node."""
    out = []
    for key, recs in by_machine.items():
        node = label[key]
        locals_: dict[int, list[int]] = defaultdict(list)
        for r in recs:
            if r.local_rank is not None:
                locals_[r.local_rank].append(r.rank)
        dups = [
            f"{_rank_list(v)} have LOCAL_RANK={k}" for k, v in sorted(locals_.items()) if len(v) > 1
        ]
        if dups:
            out.append(
                finding(
                    "RM960",
                    f"{node}: {_more(dups)}",
                    ranks=[r for v in locals_.values() if len(v) > 1 for r in v],
                    hosts=[node],
                )
            )
        sizes = {r.local_world_size for r in recs if r.local_world_size is not None}
        if complete and sizes and sizes != {len(recs)}:
            out.append(
                finding(
                    "RM961",
                    f"{node}: LOCAL_WORLD_SIZE={'/'.join(map(str, sorted(sizes)))} but "
                    f"{len(recs)} rank(s) run on this machine",
                    detail=f"ranks {rank_ranges(r.rank for r in recs)} report hostname "
                    f"{recs[0].hostname} and boot_id {recs[0].boot_id}.",
                    ranks=[r.rank for r in recs],
                    hosts=[node],
                )
            )
        out += _gpu_sets(recs, node)
    return out


def _gpu_sets(recs: list[RankRecord], node: str) -> list[Finding]:
    seen: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for r in recs:
        if r.visible_uuids is not None:
            seen[r.visible_uuids].append(r.rank)
    if len(seen) < 2:
        return []  # the usual case: every rank sees the same list (sorted once below otherwise)
    sets: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for uuids, ranks in seen.items():
        sets[tuple(sorted(uuids))] += ranks
    if len(sets) < 2:
        return []
    for ranks in sets.values():
        ranks.sort()
    singles = all(len(s) == 1 for s in sets)
    parts = [
        f"{_rank_list(v)} see {len(s)} GPU(s) {', '.join(x[:12] for x in s[:4])}"
        for s, v in sets.items()
    ]
    return [
        finding(
            "RM502" if singles else "RM260",
            f"{node}: ranks see different GPU sets",
            detail=_more(parts),
            ranks=[r for v in sets.values() for r in v],
            hosts=[node],
        )
    ]


@dataclass(frozen=True)
class _Machines:
    """Machine keys grouped by each identity NCCL or a launcher reads, and their ranks."""

    groups: dict[str, dict[object, set[str]]]  # identity kind -> value -> machine keys
    ranks_of: dict[str, list[int]]
    label: dict[str, str]

    def ranks(self, keys: set[str]) -> list[int]:
        return [x for k in keys for x in self.ranks_of[k]]

    def nodes(self, keys: set[str]) -> list[str]:
        return sorted(self.label[k] for k in keys)


def _group_machines(by_machine: dict[str, list[RankRecord]], label: dict[str, str]) -> _Machines:
    groups: dict[str, dict[object, set[str]]] = {
        kind: defaultdict(set) for kind in ("hostid", "hostname", "boot_id", "node_rank")
    }
    ranks_of: dict[str, list[int]] = {}
    for key, recs in by_machine.items():
        first = recs[0]  # hostname and boot_id make the machine key: equal for all its ranks
        ranks_of[key] = [r.rank for r in recs]
        groups["hostname"][first.hostname or "?"].add(key)
        if first.boot_id:
            groups["boot_id"][first.boot_id].add(key)
        for hostid in {r.nccl_hostid for r in recs} - {None, ""}:
            groups["hostid"][hostid].add(key)
        for node_rank in {r.node_rank for r in recs} - {None}:
            groups["node_rank"][node_rank].add(key)
    return _Machines(groups, ranks_of, label)


def _shared_hostid(m: _Machines, hostid: object, keys: set[str]) -> Finding:
    return finding(
        "RM801",
        f"NCCL_HOSTID={hostid} on {len(keys)} machines ({', '.join(m.nodes(keys))}): NCCL merges "
        "them into one host",
        detail="Equal PCI bus ids on different machines become `Duplicate GPU detected` and local "
        "ranks are miscounted.",
        ranks=m.ranks(keys),
        hosts=m.nodes(keys),
    )


def _shared_hostname(m: _Machines, name: object, keys: set[str]) -> Finding:
    return finding(
        "RM802",
        f"hostname {name} is shared by {len(keys)} machines with different boot_ids",
        detail="NCCL >= 2.5 tells them apart by boot_id; tools that group by hostname merge them. "
        + "; ".join(f"{m.label[k]}: ranks {rank_ranges(m.ranks_of[k])}" for k in sorted(keys)),
        ranks=m.ranks(keys),
        hosts=m.nodes(keys),
    )


def _shared_boot_id(m: _Machines, boot: object, keys: set[str]) -> Finding:
    return finding(
        "RM803",
        f"one machine (boot_id {str(boot)[:8]}) appears as {len(keys)} NCCL hosts: "
        f"{', '.join(m.nodes(keys))}",
        detail="NCCL treats them as separate hosts: no NVLink/shared memory between them and no "
        "duplicate-GPU detection across them.",
        ranks=m.ranks(keys),
        hosts=m.nodes(keys),
    )


def _shared_node_rank(m: _Machines, node_rank: object, keys: set[str]) -> Finding:
    return finding(
        "RM804",
        f"node rank {node_rank} is claimed by {len(keys)} machines: {', '.join(m.nodes(keys))}",
        ranks=m.ranks(keys),
        hosts=m.nodes(keys),
    )


# One identity, one finding builder, in the order the findings are reported.
_IDENTITY_CHECKS: tuple[tuple[str, Callable[[_Machines, object, set[str]], Finding]], ...] = (
    ("hostid", _shared_hostid),
    ("hostname", _shared_hostname),
    ("boot_id", _shared_boot_id),
    ("node_rank", _shared_node_rank),
)


def check_identity(by_machine: dict[str, list[RankRecord]], label: dict[str, str]) -> list[Finding]:
    """Hostname / boot_id / NCCL_HOSTID / node rank collisions across machines."""
    machines = _group_machines(by_machine, label)
    return [
        build(machines, value, keys)
        for kind, build in _IDENTITY_CHECKS
        for value, keys in machines.groups[kind].items()
        if len(keys) > 1
    ]


def version_groups(records: Sequence[RankRecord], attr: str) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = defaultdict(list)
    for r in records:
        value = getattr(r, attr)
        if value:
            groups[str(value)].append(r.rank)
    return groups


_VERSIONS = attrgetter(
    "nccl_version", "torch_version", "cuda_version", "driver_version", "cuda_driver_version"
)


def check_versions(records: Sequence[RankRecord]) -> list[Finding]:
    """NCCL (error) and torch / CUDA / driver (warning) versions that differ across ranks."""
    out: list[Finding] = []
    if len(set(map(_VERSIONS, records))) <= 1:
        return out  # the usual case, one pass
    nccl = version_groups(records, "nccl_version")
    if len(nccl) > 1:
        parts = [f"{v} (ranks {rank_ranges(rs)})" for v, rs in sorted(nccl.items())]
        out.append(finding("RM051", f"ranks load different NCCL versions: {_more(parts)}"))
    diffs = []
    for attr, name in (
        ("torch_version", "torch"),
        ("cuda_version", "CUDA (torch build)"),
        ("driver_version", "driver"),
        ("cuda_driver_version", "driver CUDA"),
    ):
        groups = version_groups(records, attr)
        if len(groups) > 1:
            diffs.append(
                f"{name}: "
                + ", ".join(f"{v} (ranks {rank_ranges(rs)})" for v, rs in sorted(groups.items()))
            )
    if diffs:
        out.append(finding("RM052", "versions differ across ranks", detail="; ".join(diffs)))
    return out
