"""The probe wired to this process: its environment, torch's c10d store, NVML, the host.

:mod:`rankmap.probe` is the engine (collate, exchange, verdict); this module reads
``os.environ`` and hands it down as a mapping, with the ports that reach torch and the store.
"""

from __future__ import annotations

import os
from typing import Any

from rankmap.findings import Report
from rankmap.probe import ProbePorts


def local_ports(*, job_reuses_store: bool = True) -> ProbePorts:
    """The real ports: record from this process, the job's store (``job_reuses_store``: see
    :func:`rankmap.adapters.c10d_store.open_store`; False for ``rankmap probe``)."""
    from functools import partial

    from rankmap.adapters.c10d_store import load_store_library, open_store, pg_initialized
    from rankmap.adapters.rank_record import collect_record

    return ProbePorts(
        collect_record=collect_record,
        open_store=partial(open_store, job_reuses_store=job_reuses_store),
        pg_initialized=pg_initialized,
        load_store_library=load_store_library,
    )


def verify(
    device: Any = None,
    *,
    timeout: float = 60.0,
    machine: str | None = None,
    strict: bool = False,
) -> Report:
    """:func:`rankmap.probe.verify_job` with this process's environment (see ``rankmap.verify``)."""
    from rankmap.probe import verify_job

    return verify_job(
        dict(os.environ),
        local_ports(),
        device,
        timeout=timeout,
        machine=machine,
        strict=strict,
    )
