"""NCCL ``Init START``/``Init COMPLETE`` (and nccl-tests ``Using devices``) lines -> rank map.

Mapping rule (reference/nccl.md (d)): ``cudaDev`` is the CUDA ordinal inside the process,
``nvmlDev`` the nvidia-smi index on that host, ``busId`` the physical address and ``commId`` the
communicator. Ranks are grouped by ``(host, commId)``; a bus id used by two ranks of one
communicator on one NCCL host is what NCCL's duplicate check rejects. The MIG pattern (every rank
of a host ``cudaDev 0 nvmlDev 0`` on one bus id) is reported as such.

Bounded memory: at most :data:`MAX_RECORDS` rank records are kept.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from rankmap.explain.patterns import Event
from rankmap.model import Placement
from rankmap.pci import try_normalize_bus_id

MAX_RECORDS = 200_000
_COLOR = re.compile(r"\bcolor (-?\d+)")


@dataclass(frozen=True)
class RankRecord:
    """One rank of one communicator as its Init line states it."""

    rank: int
    nranks: int | None
    host: str | None
    pid: int | None
    cuda_index: int | None
    nvml_index: int | None
    bus_id: str | None  # canonical
    comm: str  # commId, or the comm pointer / "nccl-tests" when no commId is printed
    evidence: str


MAX_CLAIMS = 64  # ranks initialised twice kept (the count of evidence, not of the problem)


def _by_id(rec: RankRecord) -> bool:
    """The record's communicator is named by NCCL's commId: two hosts' groups of one size
    (before NCCL 2.16, "nranks=8" per node) are different communicators."""
    return not rec.comm.startswith(("nranks=", "split color", "nccl-tests"))


@dataclass(frozen=True)
class Collision:
    """Several ranks of one communicator on one bus id of one NCCL host."""

    host: str | None
    bus_id: str
    ranks: tuple[int, ...]
    comm: str
    evidence: tuple[str, ...]


@dataclass
class RankMap:
    """The ranks of the main communicator, collisions of every communicator, patterns seen."""

    records: dict[tuple[str, int], RankRecord] = field(default_factory=dict)
    dropped: int = 0
    # one rank of one communicator initialised on two hosts: (the first, the other) record
    claimed_twice: list[tuple[RankRecord, RankRecord]] = field(default_factory=list)

    def add(self, ev: Event) -> None:
        """Record an ``init`` or ``tests_device`` event."""
        if len(self.records) >= MAX_RECORDS:
            self.dropped += 1
            return
        rec = _record(ev)
        if rec is None:
            return
        key = (rec.comm, rec.rank)
        old = self.records.get(key)
        if old is not None and old.host and rec.host and old.host != rec.host and _by_id(rec):
            # two machines both initialised this rank: their node ranks collide (review 29:
            # the second host vanished from the map)
            if len(self.claimed_twice) < MAX_CLAIMS:
                self.claimed_twice.append((old, rec))
            return
        # COMPLETE lines repeat START; keep the first, fill missing fields.
        if old is None or (old.nvml_index is None and rec.nvml_index is not None):
            self.records[key] = rec

    def communicators(self) -> dict[str, list[RankRecord]]:
        """Records per communicator, in first-seen order."""
        out: dict[str, list[RankRecord]] = defaultdict(list)
        for rec in self.records.values():
            out[rec.comm].append(rec)
        return _merge_versions(dict(out))

    def main_comm(self) -> list[RankRecord]:
        """The largest communicator (the world group, normally)."""
        comms = self.communicators()
        if not comms:
            return []
        best = max(comms.values(), key=lambda rs: (max(r.nranks or 0 for r in rs), len(rs)))
        return sorted(best, key=lambda r: r.rank)

    def collisions(self) -> list[Collision]:
        """Bus ids shared by two or more ranks of one communicator on one host.

        A sub-communicator numbers its ranks from 0 (NCCL's ``rank`` is the rank in that
        communicator): its ranks are named by the world rank of the same process (host, pid)
        where the main communicator has one; where it has none and the main communicator
        already shows a collision on that GPU, the sub-communicator's local numbers are left
        out (the world's ranks say it)."""
        out: list[Collision] = []
        seen: set[tuple[str | None, str, tuple[int, ...]]] = set()
        main = self.main_comm()
        main_key = main[0].comm if main else None
        world = _world_ranks(main)
        for comm, recs in sorted(self.communicators().items(), key=lambda kv: kv[0] != main_key):
            for (host, bus), rs in _by_gpu(recs).items():
                ranks = tuple(sorted({r.rank for r in rs}))
                if comm != main_key:
                    mapped = {world.get((r.host, r.pid)) if r.pid is not None else None for r in rs}
                    if None not in mapped:
                        ranks = tuple(sorted(r for r in mapped if r is not None))
                    elif any(c.host == host and c.bus_id == bus for c in out):
                        continue
                if len(ranks) < 2 or (host, bus, ranks) in seen:
                    continue
                seen.add((host, bus, ranks))
                ev = tuple(r.evidence for r in sorted(rs, key=lambda r: r.rank)[:4])
                out.append(Collision(host, bus, ranks, comm, ev))
        return out

    def all_cuda0(self) -> list[str]:
        """Hosts where every rank (two or more) reports cudaDev 0 and nvmlDev 0 (or none)."""
        hosts: dict[str | None, list[RankRecord]] = defaultdict(list)
        for r in self.main_comm():
            hosts[r.host].append(r)
        out = []
        for host, rs in hosts.items():
            if len(rs) >= 2 and all(r.cuda_index == 0 and r.nvml_index in (0, None) for r in rs):
                out.append(host or "?")
        return out

    def global_index_hosts(self) -> dict[str, list[RankRecord]]:
        """Hosts after the first whose ranks (every one with a cudaDev) use CUDA device = their
        global rank, past the host's own rank count: the global rank as the device index on
        nodes with GPUs enough to hide it (no invalid ordinal)."""
        hosts: dict[str | None, list[RankRecord]] = defaultdict(list)
        for r in self.main_comm():
            hosts[r.host].append(r)
        first = min(hosts.items(), key=lambda hr: min(r.rank for r in hr[1]))[0] if hosts else None
        return {
            host: rs
            for host, rs in hosts.items()
            if host
            and host != first
            and all(r.cuda_index == r.rank and r.rank >= len(rs) for r in rs)
        }

    def hosts(self) -> list[str]:
        """Hosts of the main communicator in rank order."""
        return list(dict.fromkeys(r.host for r in self.main_comm() if r.host))

    def placements(self) -> list[Placement]:
        """One placement per rank of the main communicator."""
        recs = self.main_comm()
        local: dict[str | None, int] = defaultdict(int)
        out = []
        for r in recs:
            lr = local[r.host]
            local[r.host] += 1
            out.append(
                Placement(
                    rank=r.rank,
                    local_rank=lr if r.host else None,
                    node=r.host,
                    cuda_index=r.cuda_index,
                    nvml_index=r.nvml_index,
                    pci_bus_id=r.bus_id,
                    source="nccl-log",
                )
            )
        return out


def _by_gpu(recs: list[RankRecord]) -> dict[tuple[str | None, str], list[RankRecord]]:
    by: dict[tuple[str | None, str], list[RankRecord]] = defaultdict(list)
    for r in recs:
        if r.bus_id:
            by[(r.host, r.bus_id)].append(r)
    return by


def _world_ranks(main: list[RankRecord]) -> dict[tuple[str | None, int], int]:
    """(host, pid) -> the main communicator's rank, for processes that hold one rank of it
    (a process driving several GPUs, as nccl-tests ``-g 2``, names no one rank)."""
    count: dict[tuple[str | None, int], int] = defaultdict(int)
    rank: dict[tuple[str | None, int], int] = {}
    for r in main:
        if r.pid is not None:
            count[(r.host, r.pid)] += 1
            rank[(r.host, r.pid)] = r.rank
    return {k: v for k, v in rank.items() if count[k] == 1}


def _record(ev: Event) -> RankRecord | None:
    rank = ev.geti("rank")
    if rank is None:
        return None
    text = f"{ev.line.where()}: {ev.line.text.strip()[:300]}"
    if ev.kind == "tests_device":
        return RankRecord(
            rank=rank,
            nranks=None,
            host=ev.get("host"),
            pid=ev.prefix.pid,
            cuda_index=ev.geti("dev"),
            nvml_index=None,
            bus_id=try_normalize_bus_id(f"[{ev.bus_id}]"),
            comm="nccl-tests",
            evidence=text,
        )
    # Before 2.16 no commId is printed: ranks of one size are taken as one communicator. The
    # ncclCommSplit lines of 2.24+ print none either (reference/nccl.md (d)): ranks of one child
    # share its color (the parent pointer is each process's own).
    comm = ev.get("commId") or f"nranks={ev.get('nranks')}"
    color = _COLOR.search(ev.line.text) if ev.get("parent") and not ev.get("commId") else None
    if color:
        comm = f"split color={color.group(1)} nranks={ev.get('nranks')}"
    return RankRecord(
        rank=rank,
        nranks=ev.geti("nranks"),
        host=ev.prefix.host,
        pid=ev.prefix.pid,
        cuda_index=ev.geti("cuda"),
        nvml_index=ev.geti("nvml"),
        bus_id=try_normalize_bus_id(ev.bus_id),
        comm=comm,
        evidence=text,
    )


def _merge_versions(comms: dict[str, list[RankRecord]]) -> dict[str, list[RankRecord]]:
    """Ranks of one job that run two NCCL releases: those before 2.16 print no commId
    (``nranks=N``), the others do. A commId-less group joins the one communicator with a commId
    and the same size whose ranks it does not repeat; with several candidates it stays apart."""
    for key in [k for k in comms if k.startswith("nranks=")]:
        ranks = {r.rank for r in comms[key]}
        size = comms[key][0].nranks
        peers = [
            k
            for k, recs in comms.items()
            if not k.startswith(("nranks=", "split ", "nccl-tests"))
            and recs[0].nranks == size
            and not ranks & {r.rank for r in recs}
        ]
        if len(peers) == 1:
            comms[peers[0]] = comms[peers[0]] + comms.pop(key)
    return comms
