"""Exchange records over the job's own c10d store: no NCCL, no process group, bounded waits.

Which store (reference/pytorch_nccl.md §7.4), first match wins:

1. ``RANKMAP_STORE_FILE=PATH`` - a ``FileStore`` on a shared filesystem (every rank).
2. ``RANKMAP_STORE_PORT=PORT`` (+ ``RANKMAP_STORE_ADDR``, default ``MASTER_ADDR``): a separate
   TCPStore that rank 0 hosts - for jobs whose own code binds ``MASTER_PORT`` without
   ``multi_tenant``.
3. After ``init_process_group``: the default group's store.
4. torchrun (``TORCHELASTIC_USE_AGENT_STORE=True``): clients of the agent's store at
   ``MASTER_ADDR:MASTER_PORT`` with ``world_size=None`` (no ``init/`` counter is touched).
5. Otherwise (srun, mpirun with MASTER_ADDR/PORT): rank 0 hosts a ``multi_tenant`` TCPStore
   on ``MASTER_ADDR:MASTER_PORT`` and keeps it alive (module global) so the job's own
   ``init_process_group`` reuses the same server instead of failing with EADDRINUSE.

Keys live under ``rankmap/<run id>/<restart>/<call>`` - never ``default_pg``, ``torchelastic``
or ``init``. Waiting polls ``add(key, 0)`` / ``check`` so nothing blocks past the deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from rankmap.errors import UnavailableError
from rankmap.probe.record import RankRecord
from rankmap.probe.watchdog import Progress

# Hosted servers stay alive for the life of the process (the job's init reuses them).
_KEEPALIVE: list[Any] = []
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


def _remaining(deadline: float) -> float:
    return max(0.05, deadline - time.monotonic())


# A client connects in attempts of at most this long: torch's connect retries overshoot the
# timeout they are given by up to 2x, so each attempt gets at most half of what is left and the
# last one still ends by the deadline (no thread left retrying when the process exits).
CONNECT_ATTEMPT_S = 1.0


def _tcp(host: str, port: int, *, master: bool, deadline: float, multi_tenant: bool) -> Any:
    import torch.distributed as dist

    start = time.monotonic()
    while True:
        left = deadline - time.monotonic()
        attempt = _remaining(deadline) if master else max(0.05, min(CONNECT_ATTEMPT_S, left / 2))
        try:
            return dist.TCPStore(  # type: ignore[attr-defined]
                host,
                port,
                None,
                master,
                timeout=timedelta(seconds=attempt),
                wait_for_workers=False,
                multi_tenant=multi_tenant,
            )
        except Exception as exc:  # noqa: BLE001 - DistNetworkError: refused, timed out
            if master:
                raise
            if deadline - time.monotonic() < 0.1:
                reason = " ".join(str(exc).split())[:200]
                waited = time.monotonic() - start
                raise ConnectionError(f"no connection within {waited:.1f} s ({reason})") from None


def _port(environ: Mapping[str, str], name: str) -> int:
    raw = environ.get(name, "")
    try:
        port = int(raw)
    except ValueError:
        raise UnavailableError(f"{name}={raw!r} is not a port number") from None
    if not 0 < port < 65536:
        raise UnavailableError(f"{name}={raw!r} is not a port number")
    return port


def open_store(
    environ: Mapping[str, str], rank: int, deadline: float, progress: Progress | None = None
) -> StoreHandle:
    """Connect (or host) the store for this job; ``UnavailableError`` names address and reason.

    ``progress.where`` names the store as soon as it is known (for a stall while connecting).
    """
    import torch.distributed as dist

    said = progress or Progress()
    where = "?"
    try:
        if environ.get("RANKMAP_STORE_FILE"):
            where = said.where = f"file store {environ['RANKMAP_STORE_FILE']}"
            return StoreHandle(
                dist.FileStore(environ["RANKMAP_STORE_FILE"], -1),  # type: ignore[attr-defined]
                where,
            )
        if environ.get("RANKMAP_STORE_PORT"):
            addr = environ.get("RANKMAP_STORE_ADDR") or environ.get("MASTER_ADDR") or "127.0.0.1"
            port = _port(environ, "RANKMAP_STORE_PORT")
            where = said.where = f"rankmap store {addr}:{port}"
            store = _tcp(addr, port, master=rank == 0, deadline=deadline, multi_tenant=True)
            if rank == 0:
                _KEEPALIVE.append(store)
            return StoreHandle(store, where, hosted=rank == 0)
        if dist.is_available() and dist.is_initialized():
            from torch.distributed.distributed_c10d import _get_default_store

            said.where = "the default process group's store"
            return StoreHandle(
                _get_default_store(),
                "the default process group's store",
                rank=dist.get_rank(),
                world_size=dist.get_world_size(),
            )
        addr = environ.get("MASTER_ADDR") or ""
        if not addr or not environ.get("MASTER_PORT"):
            raise UnavailableError(
                "no store to exchange records: MASTER_ADDR/MASTER_PORT are not set",
                hint="launch with torchrun, or set MASTER_ADDR/MASTER_PORT, RANKMAP_STORE_PORT "
                "or RANKMAP_STORE_FILE",
            )
        port = _port(environ, "MASTER_PORT")
        if environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
            where = said.where = f"torchrun agent store {addr}:{port}"
            return StoreHandle(
                _tcp(addr, port, master=False, deadline=deadline, multi_tenant=False), where
            )
        where = said.where = f"store {addr}:{port} (hosted by rank 0)"
        store = _tcp(addr, port, master=rank == 0, deadline=deadline, multi_tenant=True)
        if rank == 0:
            _KEEPALIVE.append(store)
        return StoreHandle(store, where, hosted=rank == 0)
    except UnavailableError:
        raise
    except Exception as exc:  # noqa: BLE001 - DistNetworkError, DistStoreError, RuntimeError
        reason = " ".join(str(exc).split())[:300]
        raise UnavailableError(f"{where} unreachable: {reason}") from None


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
    from rankmap.probe.wire import digest_of

    arrivals = wait_count(store, f"{prefix}/arrived", world_size, deadline)
    present = present_ranks(store, prefix, world_size)
    missing = sorted(set(range(world_size)) - set(present))
    records = fetch(store, [f"{prefix}/rec/{r}" for r in present])
    digests = sorted({d for d in map(digest_of, records) if d is not None})
    keys = _existing(store, [f"{prefix}/shared/{d}" for d in digests])
    blobs = fetch(store, keys)
    shared = {k.rsplit("/", 1)[1]: b for k, b in zip(keys, blobs, strict=True)}
    return Gathered(records, shared, missing, arrivals, present)


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
    ack_until: float,
    progress: Progress | None = None,
) -> bytes | None:
    """Publish, then rank 0 decides and broadcasts the verdict; every rank gets it back.

    Returns the verdict bytes, or ``None`` on a non-zero rank when rank 0 never published one.
    Rank 0 then waits (until ``ack_until`` at the latest) for the others to read the verdict, so
    a rank 0 that exits (or hosts the server) does not cut them off.
    """
    said = progress or Progress()
    store = handle.store
    said.phase = "publishing this rank's record"
    publish(store, prefix, rank, record)
    verdict_key = f"{prefix}/verdict"
    if rank == 0:
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
            wait_count(store, f"{prefix}/read", readers, min(ack_until, time.monotonic() + 1.5))
        return verdict
    # Rank 0 publishes at its own deadline at the latest; allow for clock skew between starts.
    said.phase = "waiting for rank 0's verdict"
    if not wait_key(store, verdict_key, deadline + 1.0):
        return None
    verdict = bytes(store.get(verdict_key))
    store.add(f"{prefix}/read", 1)
    return verdict
