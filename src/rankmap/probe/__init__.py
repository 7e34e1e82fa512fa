"""The in-job probe: ``rankmap probe`` and :func:`verify`.

Every rank builds its record (:mod:`rankmap.probe.record`), puts it in the job's own c10d store
(:mod:`rankmap.probe.store`), rank 0 collates (:mod:`rankmap.probe.collate`) and publishes the
verdict through the store, so every rank knows the outcome - ``verify()`` raises on every rank.

The engine is pure: the record, the store and the environment come in through
:class:`ProbePorts` and a mapping (``rankmap.adapters.job`` wires the real ones).
"""

from __future__ import annotations

import json
import math
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from rankmap.errors import InputError, ProbeTimeout, RankMapError, UnavailableError
from rankmap.findings import Finding, Report, Severity, finding
from rankmap.model import Placement
from rankmap.probe.collate import collate, collate_raw
from rankmap.probe.record import RankRecord
from rankmap.probe.store import StoreHandle

__all__ = ["ProbeOutcome", "ProbePorts", "RankRecord", "collate", "run_probe", "verify_job"]

# Above this world size non-zero ranks get findings only (not every rank's placement).
FULL_VERDICT_MAX_RANKS = 1024


@dataclass(frozen=True)
class ProbePorts:
    """What the probe needs from the outside world (the real ones: ``rankmap.adapters.job``).

    ``collect_record(environ, device=, machine=, allow_cuda_init=)`` builds this rank's record;
    ``open_store(environ, rank, deadline)`` connects the job's store; ``pg_initialized()`` says
    whether the job already has a default process group.
    """

    collect_record: Callable[..., RankRecord]
    open_store: Callable[[Mapping[str, str], int, float], StoreHandle]
    pg_initialized: Callable[[], bool]


@dataclass
class ProbeOutcome:
    """One rank's view of a finished probe."""

    report: Report
    rank: int
    world_size: int
    record: RankRecord
    missing: list[int] = field(default_factory=list)

    @property
    def is_reporter(self) -> bool:
        """Rank 0 prints the job-wide map."""
        return self.rank == 0


def _finding_from_dict(doc: Mapping[str, Any]) -> Finding:
    return Finding(
        code=str(doc["code"]),
        category=str(doc["category"]),
        severity=Severity(doc["severity"]),
        title=str(doc["title"]),
        detail=str(doc.get("detail", "")),
        ranks=tuple(doc.get("ranks", ())),
        devices=tuple(doc.get("devices", ())),
        hosts=tuple(doc.get("hosts", ())),
        fix=str(doc.get("fix", "")),
    )


def _placement_from_dict(doc: Mapping[str, Any]) -> Placement:
    return Placement(
        rank=int(doc["rank"]),
        local_rank=doc.get("local_rank"),
        node=doc.get("node"),
        cuda_index=doc.get("cuda_index"),
        nvml_index=doc.get("nvml_index"),
        uuid=doc.get("uuid"),
        pci_bus_id=doc.get("pci_bus_id"),
        node_rank=doc.get("node_rank"),
        error=doc.get("error"),
        source=doc.get("source"),
    )


def verdict_payload(report: Report) -> bytes:
    """What rank 0 publishes: the report (placements only for small jobs)."""
    if len(report.placements) > FULL_VERDICT_MAX_RANKS:
        sections = dict(report.sections)
        sections.update(
            nodes=[], node_groups=sections.get("node_groups", [])[:8], inventory={"hosts": []}
        )
        report = Report(command=report.command, findings=report.findings, sections=sections)
    return json.dumps(report.to_dict(), separators=(",", ":")).encode()


def report_from_payload(data: bytes) -> Report:
    """Rebuild the report a non-zero rank receives."""
    doc = json.loads(data)
    fixed = {"schema", "command", "verdict", "findings", "placements"}
    return Report(
        command="probe",
        findings=[_finding_from_dict(f) for f in doc.get("findings", [])],
        placements=[_placement_from_dict(p) for p in doc.get("placements", [])],
        sections={k: v for k, v in doc.items() if k not in fixed},
    )


def run_probe(
    environ: Mapping[str, str],
    *,
    ports: ProbePorts,
    device: Any = None,
    machine: str | None = None,
    timeout: float = 60.0,
    allow_cuda_init: bool = False,
    on_report: Callable[[Report], None] | None = None,
) -> ProbeOutcome:
    """Probe this rank and exchange with the others; every rank gets the job-wide report.

    ``on_report`` runs on rank 0 before the verdict is published: the CLI prints there, so a
    launcher that kills the job when the first rank exits non-zero cannot cut the report off.

    Raises ``InputError`` (bad ``machine``), ``UnavailableError`` (no store / unreachable) and
    ``ProbeTimeout`` (rank 0 never published a verdict).
    """
    deadline = time.monotonic() + timeout
    record = ports.collect_record(
        environ, device=device, machine=machine, allow_cuda_init=allow_cuda_init
    )
    if record.world_size <= 1 and not ports.pg_initialized():
        single = collate([record], world_size=1)
        if on_report is not None:
            on_report(single)
        return ProbeOutcome(single, record.rank, 1, record)
    from rankmap.probe import store as st
    from rankmap.probe.launch_env import parse_rank_env

    handle = ports.open_store(environ, record.rank, deadline)
    if handle.rank is not None and handle.world_size is not None:
        record = replace(record, rank=handle.rank, world_size=handle.world_size)
    renv = parse_rank_env(environ)
    prefix = st.call_prefix(renv.run_id, renv.restart_count)
    kept: dict[str, Report] = {}

    def decide(g: st.Gathered) -> bytes:
        report = collate_raw(
            g.records,
            g.shared,
            world_size=record.world_size,
            missing=g.missing,
            arrivals=g.arrivals,
            timeout=timeout,
            where=handle.where,
        )
        kept["report"] = report
        if on_report is not None:
            on_report(report)
        return verdict_payload(report)

    verdict = st.exchange(handle, prefix, record.rank, record.world_size, record, deadline, decide)
    if verdict is None:
        raise ProbeTimeout(
            f"rank 0 published no verdict within {timeout:g} s through {handle.where} "
            f"(rank {record.rank} of {record.world_size} waited)",
            hint="rank 0 died, never started, or cannot reach the store",
        )
    report = kept.get("report") or report_from_payload(verdict)
    missing = [int(m) for m in report.sections.get("missing_ranks", [])]
    return ProbeOutcome(report, record.rank, record.world_size, record, missing)


def format_findings(report: Report, *, limit: int = 8) -> str:
    """The error findings as the message ``verify()`` raises."""
    errors = [f for f in report.ordered_findings() if f.severity is Severity.ERROR]
    lines = [f"rankmap.verify: {len(errors)} error(s) in this job's rank -> GPU map:"]
    for f in errors[:limit]:
        lines.append(f"  {f.code} {f.title}")
        if f.detail:
            lines.append(f"      {f.detail}")
        if f.fix:
            lines.append(f"      fix: {f.fix}")
    if len(errors) > limit:
        lines.append(f"  ... and {len(errors) - limit} more")
    return "\n".join(lines)


def _fail_open(exc: Exception, strict: bool) -> Report:
    if strict:
        if isinstance(exc, RankMapError):
            raise exc
        raise UnavailableError(f"rankmap.verify failed: {type(exc).__name__}: {exc}") from exc
    reason = exc.message if isinstance(exc, RankMapError) else f"{type(exc).__name__}: {exc}"
    warnings.warn(
        f"rankmap.verify could not check this job ({reason}); continuing unchecked",
        RuntimeWarning,
        stacklevel=3,
    )
    return Report(command="probe", findings=[finding("RM061", f"not checked: {reason}")])


def verify_job(
    environ: Mapping[str, str],
    ports: ProbePorts,
    device: Any = None,
    *,
    timeout: float = 60.0,
    machine: str | None = None,
    strict: bool = False,
) -> Report:
    """Check the whole job's rank -> GPU map from inside the training script (every rank).

    ``device``: the CUDA index (int, ``"cuda:N"`` or ``torch.device``) this rank will use;
    ``None``: the current device if CUDA is initialised, else ``cuda:LOCAL_RANK``. ``machine``
    (or ``RANKMAP_MACHINE``): a profile standing in for NVML/CUDA. Raises
    :class:`rankmap.RankMapError` on every rank when there is an error finding, and
    :class:`rankmap.errors.ProbeTimeout` when ranks are missing; a problem of the probe itself
    (store unreachable, internal error) warns and returns unless ``strict=True``.
    """
    if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
        raise InputError(f"timeout must be positive, not {timeout!r}")
    try:
        outcome = run_probe(environ, ports=ports, device=device, machine=machine, timeout=timeout)
    except (InputError, ProbeTimeout):
        raise
    except Exception as exc:  # noqa: BLE001 - never stop a healthy job for rankmap's own failure
        return _fail_open(exc, strict)
    report = outcome.report
    if outcome.missing:
        first = next((f for f in report.findings if f.code == "RM060"), None)
        raise ProbeTimeout(
            f"rankmap.verify: {first.title if first else 'ranks missing'}"
            + (f" ({first.detail})" if first and first.detail else "")
        )
    if report.has_errors:
        raise RankMapError(format_findings(report))
    return report
