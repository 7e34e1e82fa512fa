"""Exchange records over the job's own c10d store: no NCCL, no process group, bounded waits.

The store itself is opened by :mod:`rankmap.adapters.c10d_store` (torch); this module only
speaks the key protocol over whatever store object it is given (``set``/``get``/``add``/
``check``). Keys live under ``rankmap/<run id>/<restart>/<call>`` - never ``default_pg``,
``torchelastic`` or ``init``. Waiting polls ``add(key, 0)`` / ``check`` so nothing blocks past
the deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rankmap.probe.record import RankRecord

_CALLS: dict[str, int] = {}
CHUNK = 1024


@dataclass
class StoreHandle:
    """An open store, where it is, and whether this process hosts its server."""

    store: Any
    where: str
    hosted: bool = False
    rank: int | None = None  # from the process group, when the store came from it
    world_size: int | None = None


def call_prefix(run_id: str, restart: int) -> str:
    """A private per-run, per-call key prefix (``verify`` may run twice in one job)."""
    base = f"rankmap/{run_id}/{restart}"
    _CALLS[base] = _CALLS.get(base, 0) + 1
    return f"{base}/call{_CALLS[base]}"


def _sleep(attempt: int) -> None:
    time.sleep(min(0.05, 0.002 * (attempt + 1)))


def wait_count(store: Any, key: str, target: int, deadline: float) -> int:
    """Poll counter ``key`` until it reaches ``target`` or the deadline; the last value."""
    attempt = 0
    while True:
        value = int(store.add(key, 0))
        if value >= target or time.monotonic() >= deadline:
            return value
        _sleep(attempt)
        attempt += 1


def wait_key(store: Any, key: str, deadline: float) -> bool:
    """Poll until ``key`` exists or the deadline passes."""
    attempt = 0
    while True:
        if store.check([key]):
            return True
        if time.monotonic() >= deadline:
            return False
        _sleep(attempt)
        attempt += 1


def fetch(store: Any, keys: Sequence[str]) -> list[bytes]:
    """Values of keys known to exist, in chunks (``multi_get`` where this torch has it)."""
    out: list[bytes] = []
    for i in range(0, len(keys), CHUNK):
        part = list(keys[i : i + CHUNK])
        try:
            out.extend(bytes(v) for v in store.multi_get(part))
        except (AttributeError, RuntimeError):
            out.extend(bytes(store.get(k)) for k in part)
    return out


def present_ranks(store: Any, prefix: str, world_size: int) -> list[int]:
    """Ranks whose record key exists (after a timeout: which ones came)."""
    return [r for r in range(world_size) if store.check([f"{prefix}/rec/{r}"])]


@dataclass
class Gathered:
    """What rank 0 gathered: own record parts, shared parts by digest, who never came."""

    records: list[bytes]
    shared: dict[str, bytes]
    missing: list[int]
    arrivals: int


def gather(store: Any, prefix: str, world_size: int, deadline: float) -> Gathered:
    """Rank 0: wait (bounded) for every rank's record and fetch them (shared parts once)."""
    from rankmap.probe.wire import digest_of

    arrivals = wait_count(store, f"{prefix}/arrived", world_size, deadline)
    if arrivals >= world_size:
        present = list(range(world_size))
    else:
        present = present_ranks(store, prefix, world_size)
    missing = sorted(set(range(world_size)) - set(present))
    records = fetch(store, [f"{prefix}/rec/{r}" for r in present])
    digests = sorted({digest_of(b) for b in records})
    blobs = fetch(store, [f"{prefix}/shared/{d}" for d in digests])
    return Gathered(records, dict(zip(digests, blobs, strict=False)), missing, arrivals)


def publish(store: Any, prefix: str, rank: int, record: RankRecord) -> None:
    """Any rank: put this rank's record (shared part first) and count the arrival."""
    from rankmap.probe.wire import encode

    own, shared, digest = encode(record)
    store.set(f"{prefix}/shared/{digest}", shared)
    store.set(f"{prefix}/rec/{rank}", own)
    store.add(f"{prefix}/arrived", 1)


def exchange(
    handle: StoreHandle,
    prefix: str,
    rank: int,
    world_size: int,
    record: RankRecord,
    deadline: float,
    decide: Callable[[Gathered], bytes],
    *,
    ack_grace: float = 1.5,
) -> bytes | None:
    """Publish, then rank 0 decides and broadcasts the verdict; every rank gets it back.

    Returns the verdict bytes, or ``None`` on a non-zero rank when rank 0 never published one.
    Rank 0 waits up to ``ack_grace`` seconds for the others to read the verdict, so a rank 0
    that exits (or hosts the server) does not cut them off.
    """
    store = handle.store
    publish(store, prefix, rank, record)
    verdict_key = f"{prefix}/verdict"
    if rank == 0:
        gathered = gather(store, prefix, world_size, deadline)
        verdict = decide(gathered)
        store.set(verdict_key, verdict)
        readers = max(0, min(gathered.arrivals, world_size) - 1)
        if readers:
            wait_count(store, f"{prefix}/read", readers, time.monotonic() + ack_grace)
        return verdict
    # Rank 0 publishes at its own deadline at the latest; allow for clock skew between starts.
    if not wait_key(store, verdict_key, deadline + 1.0):
        return None
    verdict = bytes(store.get(verdict_key))
    store.add(f"{prefix}/read", 1)
    return verdict
