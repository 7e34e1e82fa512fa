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
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from rankmap.errors import UnavailableError
from rankmap.probe.record import RankRecord

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


def _tcp(host: str, port: int, *, master: bool, deadline: float, multi_tenant: bool) -> Any:
    import torch.distributed as dist

    timeout = timedelta(seconds=_remaining(deadline))
    return dist.TCPStore(  # type: ignore[attr-defined]
        host,
        port,
        None,
        master,
        timeout=timeout,
        wait_for_workers=False,
        multi_tenant=multi_tenant,
    )


def _port(environ: Mapping[str, str], name: str) -> int:
    raw = environ.get(name, "")
    try:
        port = int(raw)
    except ValueError:
        raise UnavailableError(f"{name}={raw!r} is not a port number") from None
    if not 0 < port < 65536:
        raise UnavailableError(f"{name}={raw!r} is not a port number")
    return port


def open_store(environ: Mapping[str, str], rank: int, deadline: float) -> StoreHandle:
    """Connect (or host) the store for this job; ``UnavailableError`` names address and reason."""
    import torch.distributed as dist

    where = "?"
    try:
        if environ.get("RANKMAP_STORE_FILE"):
            where = f"file store {environ['RANKMAP_STORE_FILE']}"
            return StoreHandle(
                dist.FileStore(environ["RANKMAP_STORE_FILE"], -1),  # type: ignore[attr-defined]
                where,
            )
        if environ.get("RANKMAP_STORE_PORT"):
            addr = environ.get("RANKMAP_STORE_ADDR") or environ.get("MASTER_ADDR") or "127.0.0.1"
            port = _port(environ, "RANKMAP_STORE_PORT")
            where = f"rankmap store {addr}:{port}"
            store = _tcp(addr, port, master=rank == 0, deadline=deadline, multi_tenant=True)
            if rank == 0:
                _KEEPALIVE.append(store)
            return StoreHandle(store, where, hosted=rank == 0)
        if dist.is_available() and dist.is_initialized():
            from torch.distributed.distributed_c10d import _get_default_store

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
            where = f"torchrun agent store {addr}:{port}"
            return StoreHandle(
                _tcp(addr, port, master=False, deadline=deadline, multi_tenant=False), where
            )
        where = f"store {addr}:{port} (hosted by rank 0)"
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
