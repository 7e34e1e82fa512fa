"""Open the job's own c10d store through torch (the key protocol is :mod:`rankmap.probe.store`).

Which store (reference/pytorch_nccl.md §7.4), first match wins:

1. ``RANKMAP_STORE_FILE=PATH`` - a ``FileStore`` on a shared filesystem (every rank).
2. ``RANKMAP_STORE_PORT=PORT`` (+ ``RANKMAP_STORE_ADDR``, default ``MASTER_ADDR``): a separate
   store that rank 0 hosts - for jobs whose own code binds ``MASTER_PORT`` without
   ``multi_tenant``. It is rankmap's own (:mod:`rankmap.adapters.store_server`), with bounded
   memory, not a TCPStore: nothing of the job reuses it.
3. After ``init_process_group``: the default group's store.
4. torchrun (``TORCHELASTIC_USE_AGENT_STORE=True``): clients of the agent's store at
   ``MASTER_ADDR:MASTER_PORT`` with ``world_size=None`` (no ``init/`` counter is touched).
5. Otherwise (srun, mpirun with MASTER_ADDR/PORT): rank 0 hosts a store on
   ``MASTER_ADDR:MASTER_PORT``. Inside the job (``verify()``, ``job_reuses_store``) it is a
   ``multi_tenant`` TCPStore kept alive (module global), so the job's own
   ``init_process_group`` reuses the same server instead of failing with EADDRINUSE - the
   server the job's rank 0 would host anyway. For ``rankmap probe``, which exits after, it is
   rankmap's own store, as in 2.

Keys live under ``rankmap/<run id>/<restart>/<call>`` - never ``default_pg``, ``torchelastic``
or ``init``. Waiting polls ``add(key, 0)`` / ``check`` so nothing blocks past the deadline.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from rankmap.errors import UnavailableError
from rankmap.probe.store import StoreHandle
from rankmap.probe.watchdog import Progress

# Hosted servers stay alive for the life of the process (the job's init reuses them).
_KEEPALIVE: list[Any] = []


def _remaining(deadline: float) -> float:
    return max(0.05, deadline - time.monotonic())


# A client connects in attempts of at most this long: torch's connect retries overshoot the
# timeout they are given by up to 2x, so each attempt gets at most half of what is left and the
# last one still ends by the deadline (no thread left retrying when the process exits).
CONNECT_ATTEMPT_S = 1.0


def _tcp(host: str, port: int, *, master: bool, deadline: float, multi_tenant: bool) -> Any:
    dist: Any = importlib.import_module("torch.distributed")

    start = time.monotonic()
    while True:
        left = deadline - time.monotonic()
        attempt = _remaining(deadline) if master else max(0.05, min(CONNECT_ATTEMPT_S, left / 2))
        try:
            return dist.TCPStore(
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


def load_store_library() -> object:
    """torch's c10d, loaded in the caller's thread (see ``ProbePorts.load_store_library``)."""
    return importlib.import_module("torch.distributed")


def _port(environ: Mapping[str, str], name: str) -> int:
    raw = environ.get(name, "")
    try:
        port = int(raw)
    except ValueError:
        raise UnavailableError(f"{name}={raw!r} is not a port number") from None
    if not 0 < port < 65536:
        raise UnavailableError(f"{name}={raw!r} is not a port number")
    return port


# A rankmap store client's calls end this long after the deadline (the watchdog abandons the
# store work at the deadline + HARD_GRACE, 1.5 s; the client then ends on its own).
CALL_GRACE_S = 2.0


def _own(
    addr: str, port: int, rank: int, world_size: int, deadline: float, where: str
) -> StoreHandle:
    """rankmap's own store: rank 0 hosts it (and reads it in-process), the others connect."""
    from rankmap.adapters import store_client, store_server
    from rankmap.adapters.store_data import LocalStore

    if rank == 0:
        try:
            server = store_server.host(port, max_connections=world_size + 64)
        except OSError as exc:
            raise UnavailableError(
                f"{where}: rank 0 cannot listen on port {port} ({exc.strerror or exc})",
                hint="another program listens there: give every rank the same free port",
            ) from None
        return StoreHandle(LocalStore(server.data), where, hosted=True)
    client = store_client.connect(addr, port, deadline, deadline + CALL_GRACE_S)
    return StoreHandle(client, where)


def open_store(
    environ: Mapping[str, str],
    rank: int,
    deadline: float,
    progress: Progress | None = None,
    *,
    world_size: int = 1,
    job_reuses_store: bool = True,
) -> StoreHandle:
    """Connect (or host) the store for this job; ``UnavailableError`` names address and reason.

    ``progress.where`` names the store as soon as it is known (for a stall while connecting).
    ``job_reuses_store``: the job's own ``init_process_group`` may follow in this process (so
    a store rank 0 hosts on ``MASTER_PORT`` must be torch's); False for ``rankmap probe``.
    """
    dist: Any = importlib.import_module("torch.distributed")

    said = progress or Progress()
    where = "?"
    try:
        if environ.get("RANKMAP_STORE_FILE"):
            where = said.where = f"file store {environ['RANKMAP_STORE_FILE']}"
            return StoreHandle(
                dist.FileStore(environ["RANKMAP_STORE_FILE"], -1),
                where,
            )
        if environ.get("RANKMAP_STORE_PORT"):
            addr = environ.get("RANKMAP_STORE_ADDR") or environ.get("MASTER_ADDR") or "127.0.0.1"
            port = _port(environ, "RANKMAP_STORE_PORT")
            where = said.where = f"rankmap store {addr}:{port}"
            return _own(addr, port, rank, world_size, deadline, where)
        if dist.is_available() and dist.is_initialized():
            c10d: Any = importlib.import_module("torch.distributed.distributed_c10d")
            said.where = "the default process group's store"
            return StoreHandle(
                c10d._get_default_store(),
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
        if not job_reuses_store:
            where = said.where = f"rankmap store {addr}:{port} (hosted by rank 0)"
            return _own(addr, port, rank, world_size, deadline, where)
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


def pg_initialized() -> bool:
    """True when this process already ran ``init_process_group`` (False without torch)."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        return False
    dist: Any = importlib.import_module("torch.distributed")
    return bool(dist.is_available() and dist.is_initialized())
