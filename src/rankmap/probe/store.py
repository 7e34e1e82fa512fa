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
from dataclasses import dataclass, field
from typing import Any

from rankmap.probe.record import RankRecord
from rankmap.probe.watchdog import Progress

_CALLS: dict[str, int] = {}


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


# Values fetched per round trip: a peer may store up to torch's 8 MiB per value under its key
# (TCPStore has no size query), so one round trip holds at most 16 x 8 MiB before the parts
# over ``limit`` are cut (the decoder then says "over the limit").
FETCH_CHUNK = 16


def fetch(store: Any, keys: Sequence[str], limit: int | None = None) -> list[bytes]:
    """Values of keys known to exist, in chunks (``multi_get`` where this torch has it); each
    value longer than ``limit`` kept only to ``limit`` + 1 bytes."""
    out: list[bytes] = []
    for i in range(0, len(keys), FETCH_CHUNK):
        part = list(keys[i : i + FETCH_CHUNK])
        try:
            values = [bytes(v) for v in store.multi_get(part)]
        except (AttributeError, RuntimeError):
            values = [bytes(store.get(k)) for k in part]
        if limit is not None:
            values = [v if len(v) <= limit else v[: limit + 1] for v in values]
        out.extend(values)
        del values
    return out


def present_ranks(store: Any, prefix: str, world_size: int) -> list[int]:
    """Ranks whose record key exists: all of them in one round trip in the usual case."""
    keys = [f"{prefix}/rec/{r}" for r in range(world_size)]
    if store.check(keys):
        return list(range(world_size))
    return [r for r, key in enumerate(keys) if store.check([key])]


def _existing(store: Any, keys: list[str]) -> list[str]:
    """The keys that exist (``get`` of a missing key would block until the store's timeout)."""
    if not keys or store.check(keys):
        return keys
    return [k for k in keys if store.check([k])]


# Rank 0 publishes by its own deadline, plus collation and one poll: this much later at most.
VERDICT_SLACK_S = 1.0


def wait_verdict(
    store: Any, prefix: str, deadline: float, zero_budget: float, progress: Progress
) -> bool:
    """A non-zero rank: poll until rank 0's verdict exists; False when it never comes.

    Rank 0 publishes by its own deadline, which runs from its own start - later than this
    rank's where rank 0 loaded torch or ran the script's start-up more slowly (a loaded machine:
    seconds). So the wait is not a fixed allowance for that skew: rank 0 says how many seconds
    its deadline was away when it published (``zero_left``), and once this rank reads that, it
    waits until then + the slack - a bound measured from rank 0's actual start, capped by
    ``zero_budget`` (rank 0's timeout; a peer's number is not trusted beyond it). At most
    ``deadline`` + slack + ``zero_budget`` + slack. ``progress.until`` moves the watchdog along.
    """
    verdict_key, left_key = f"{prefix}/verdict", f"{prefix}/zero_left"
    until = deadline + VERDICT_SLACK_S
    seen = False
    attempt = 0
    while True:
        if store.check([verdict_key]):
            return True
        now = time.monotonic()
        if not seen and store.check([left_key]):
            seen = True
            later = now + _seconds(store.get(left_key), zero_budget) + VERDICT_SLACK_S
            if later > until:
                margin = (progress.until or until) - until  # the watchdog's, past this wait
                until, progress.until = later, later + margin
        if now >= until:
            return False
        _sleep(attempt)
        attempt += 1


def _seconds(raw: Any, cap: float) -> float:
    try:
        value = float(bytes(raw)[:32].decode("ascii"))
    except (ValueError, TypeError, UnicodeDecodeError):
        return 0.0
    return min(max(value, 0.0), cap) if value == value else 0.0  # NaN: none


@dataclass
class Gathered:
    """What rank 0 gathered: record parts (of ``ranks``), shared parts by digest, who never came."""

    records: list[bytes]
    shared: dict[str, bytes]
    missing: list[int]
    arrivals: int
    ranks: list[int] = field(default_factory=list)


def gather(store: Any, prefix: str, world_size: int, deadline: float) -> Gathered:
    """Rank 0: wait (bounded) for every rank's record and fetch them (shared parts once).

    Only keys that exist are fetched: the arrival counter is a hint (a peer may count without a
    record, or two processes may claim one rank), and a part may name a digest never stored.
    """
    from rankmap.probe.wire import MAX_OWN_BYTES, MAX_SHARED_BYTES, digest_of

    arrivals = wait_count(store, f"{prefix}/arrived", world_size, deadline)
    present = present_ranks(store, prefix, world_size)
    missing = sorted(set(range(world_size)) - set(present))
    records = fetch(store, [f"{prefix}/rec/{r}" for r in present], MAX_OWN_BYTES)
    digests = sorted({d for d in map(digest_of, records) if d is not None})
    keys = _existing(store, [f"{prefix}/shared/{d}" for d in digests])
    blobs = fetch(store, keys, MAX_SHARED_BYTES)
    shared = {k.rsplit("/", 1)[1]: b for k, b in zip(keys, blobs, strict=True)}
    return Gathered(records, shared, missing, arrivals, present)


def publish(store: Any, prefix: str, rank: int, record: RankRecord) -> None:
    """Any rank: put this rank's record (shared part first) and count the arrival."""
    from rankmap.probe.wire import encode

    own, shared, digest = encode(record)
    store.set(f"{prefix}/shared/{digest}", shared)
    store.set(f"{prefix}/rec/{rank}", own)
    store.add(f"{prefix}/arrived", 1)


def _forget_call(store: Any, prefix: str) -> None:
    """Every rank came and read the verdict: drop the call's keys where rank 0 holds them in
    process (rankmap's own store lives as long as the process, and ``verify()`` may run every
    epoch); a torch store keeps them, as before."""
    drop = getattr(store, "drop_prefix", None)
    if drop is not None:
        drop(f"{prefix}/")


def exchange(
    handle: StoreHandle,
    prefix: str,
    rank: int,
    world_size: int,
    record: RankRecord,
    deadline: float,
    decide: Callable[[Gathered], bytes],
    *,
    ack_until: float,
    zero_budget: float = 0.0,
    progress: Progress | None = None,
) -> bytes | None:
    """Publish, then rank 0 decides and broadcasts the verdict; every rank gets it back.

    Returns the verdict bytes, or ``None`` on a non-zero rank when rank 0 never published one
    (``zero_budget``: the seconds rank 0 has from its start - its timeout; see
    :func:`wait_verdict`).
    Rank 0 then waits (until ``ack_until`` at the latest) for the others to read the verdict, so
    a rank 0 that exits (or hosts the server) does not cut them off.
    """
    said = progress or Progress()
    store = handle.store
    said.phase = "publishing this rank's record"
    publish(store, prefix, rank, record)
    verdict_key = f"{prefix}/verdict"
    if rank == 0:
        # how far this rank's deadline is (a duration: clocks of two hosts do not compare)
        store.set(f"{prefix}/zero_left", f"{max(0.0, deadline - time.monotonic()):.3f}")
        said.phase = "waiting for the other ranks' records"
        gathered = gather(store, prefix, world_size, deadline)
        said.phase = "collating"
        verdict = decide(gathered)
        said.phase = "publishing the verdict"
        store.set(verdict_key, verdict)
        said.verdict_published = True
        said.phase = "waiting for the other ranks to read the verdict"
        readers = max(0, min(gathered.arrivals, world_size) - 1)
        if readers:
            read = wait_count(
                store, f"{prefix}/read", readers, min(ack_until, time.monotonic() + 1.5)
            )
            if gathered.arrivals >= world_size and read >= readers:
                _forget_call(store, prefix)
        return verdict
    said.phase = "waiting for rank 0's verdict"
    if not wait_verdict(store, prefix, deadline, zero_budget, said):
        return None
    verdict = bytes(store.get(verdict_key))
    store.add(f"{prefix}/read", 1)
    return verdict
