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
from rankmap.probe.watchdog import Progress, Stalled, run_until

__all__ = ["ProbeOutcome", "ProbePorts", "RankRecord", "collate", "run_probe", "verify_job"]

# Above this world size non-zero ranks get findings only (not every rank's placement).
FULL_VERDICT_MAX_RANKS = 1024


@dataclass(frozen=True)
class ProbePorts:
    """What the probe needs from the outside world (the real ones: ``rankmap.adapters.job``).

    ``collect_record(environ, device=, machine=, allow_cuda_init=)`` builds this rank's record;
    ``open_store(environ, rank, deadline, progress, world_size=)`` connects the job's store
    (naming it in ``progress.where`` as soon as it is known); ``pg_initialized()`` says whether
    the job already has a default process group; ``load_store_library()`` loads torch's c10d in
    the caller's thread before the deadline starts (loading it holds the GIL for seconds, which
    would keep the watchdog from waking up in time).
    """

    collect_record: Callable[..., RankRecord]
    open_store: Callable[..., StoreHandle]
    pg_initialized: Callable[[], bool]
    load_store_library: Callable[[], object] = lambda: None


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

    One deadline - ``timeout`` seconds from when this rank's record is built and torch is
    loaded - covers connecting (retries included), publishing, waiting and reading; the store
    work is abandoned at the timeout + 1.5 s
    (:mod:`rankmap.probe.watchdog`). Raises ``InputError`` (bad ``machine``),
    ``UnavailableError`` (no store, unreachable, or no answer while connecting) and
    ``ProbeTimeout`` (rank 0 published no verdict; the store stopped answering or went away).
    """
    _check_rank_env(environ)
    record = ports.collect_record(
        environ, device=device, machine=machine, allow_cuda_init=allow_cuda_init
    )
    if record.world_size <= 1 and not ports.pg_initialized():
        single = collate([record], world_size=1)
        if on_report is not None:
            on_report(single)
        return ProbeOutcome(single, record.rank, 1, record)
    _check_world(record)
    ports.load_store_library()
    deadline = time.monotonic() + timeout  # from here: connect, publish, wait, read
    ex = _Exchange(environ, ports, record, timeout, deadline, on_report)
    where, verdict = _run_exchange(ex)
    if ex.print_error is not None:
        raise ex.print_error
    return _outcome(ex, where, verdict)


@dataclass
class _Exchange:
    """One rank's exchange through the job's store, and what it learns on the way: its record
    with the rank the store gave it, rank 0's report, an error of the printer (raised only after
    the verdict is published: the other ranks wait for it)."""

    environ: Mapping[str, str]
    ports: ProbePorts
    record: RankRecord
    timeout: float
    deadline: float
    on_report: Callable[[Report], None] | None
    report: Report | None = None
    print_error: Exception | None = None

    @property
    def hard_limit(self) -> float:
        return self.deadline + HARD_GRACE

    def decide(self, gathered: Any, where: str) -> bytes:
        """Rank 0: collate what was gathered, print it, and return the verdict to publish."""
        report = _collate_safely(gathered, self.record.world_size, self.timeout, where)
        self.report = report
        if self.on_report is not None:
            try:
                self.on_report(report)
            except Exception as exc:  # noqa: BLE001 - publish first: the others wait for it
                self.print_error = exc
        return verdict_payload(report)

    def talk(self, progress: Progress) -> tuple[str, bytes | None]:
        """Connect, publish this rank's record and read the verdict (run under the watchdog)."""
        from rankmap.probe import store as st
        from rankmap.probe.launch_env import parse_rank_env

        handle = self.ports.open_store(
            self.environ, self.record.rank, self.deadline, progress,
            world_size=self.record.world_size,
        )  # fmt: skip
        progress.connected = True
        if handle.rank is not None and handle.world_size is not None:
            self.record = replace(self.record, rank=handle.rank, world_size=handle.world_size)
        renv = parse_rank_env(self.environ)
        verdict = st.exchange(
            handle,
            st.call_prefix(renv.run_id, renv.restart_count),
            self.record.rank,
            self.record.world_size,
            self.record,
            self.deadline,
            lambda g: self.decide(g, handle.where),
            ack_until=self.hard_limit - 0.2,
            zero_budget=self.timeout,
            progress=progress,
        )
        return handle.where, verdict


def _run_exchange(ex: _Exchange) -> tuple[str, bytes | None]:
    """The exchange under the watchdog. A stall or a lost store after rank 0 published its
    verdict ends rank 0's part normally (the readers' acknowledgement is all that is missing)."""
    progress = Progress(until=ex.hard_limit)
    try:
        return run_until(ex.talk, ex.hard_limit, progress, connect_by=ex.deadline + CONNECT_GRACE)
    except Stalled:
        if not (progress.verdict_published and ex.report is not None):
            raise _stall_error(progress, ex.record, ex.timeout) from None
    except RankMapError:
        raise
    except Exception as exc:  # noqa: BLE001 - DistNetworkError, DistStoreError, RuntimeError
        if not (progress.verdict_published and ex.report is not None):
            raise _lost_error(progress, ex.record, exc) from None
    return progress.where, b""


def _outcome(ex: _Exchange, where: str, verdict: bytes | None) -> ProbeOutcome:
    """This rank's outcome from the verdict it read (rank 0: the report it made)."""
    mine = ex.record
    if verdict is None:
        raise ProbeTimeout(
            f"rank 0 published no verdict within {ex.timeout:g} s through {where} "
            f"(rank {mine.rank} of {mine.world_size} waited)",
            hint="rank 0 died, never started, or cannot reach the store",
        )
    report = ex.report or _verdict_report(verdict, where)
    missing = [int(m) for m in report.sections.get("missing_ranks", [])]
    return ProbeOutcome(report, mine.rank, mine.world_size, mine, missing)


def _check_rank_env(environ: Mapping[str, str]) -> None:
    """InputError for launcher variables no launcher sets (review 19): a rank that is no number
    (it was read as rank 0 and waited for peers), a world of no rank, a rank outside its world."""
    from rankmap.launch_vars import WORLD_SIZE_VARS
    from rankmap.probe.launch_env import first_int, parse_rank_env

    renv = parse_rank_env(environ)
    if renv.problems:
        raise InputError(f"launcher environment: {renv.problems[0].removesuffix('; ignored')}")
    world, name = first_int(environ, WORLD_SIZE_VARS, [])  # as set (parse_rank_env makes 0 one)
    if world is not None and world < 1:
        raise InputError(f"{name}={environ[str(name)]}: a world needs at least one rank")
    if name is not None and not 0 <= renv.rank < renv.world_size:
        raise InputError(
            f"rank {renv.rank} is outside its world of {renv.world_size} rank(s) "
            f"(RANK must be 0..{renv.world_size - 1})"
        )


def _check_world(record: RankRecord) -> None:
    """InputError for a world larger than rankmap simulates (one limit: MAX_RANKS): rank 0 lists
    every rank's key, so a typo such as WORLD_SIZE=10000000000 would exhaust memory."""
    from rankmap.launchers import MAX_RANKS

    if record.world_size > MAX_RANKS:
        raise InputError(
            f"world size {record.world_size}: more ranks than rankmap probes (at most "
            f"{MAX_RANKS:,})"
        )


# The store work is abandoned this long after the timeout: non-zero ranks wait for the verdict
# until the timeout + 1 s, rank 0 for the readers until the timeout + 1.3 s at most.
HARD_GRACE = 1.5
# Connecting ends here: torch's connect retries overshoot the timeout they are given (1.5-2x),
# and a port that accepts but never answers blocks the client forever.
CONNECT_GRACE = 0.25


def _collate_safely(g: Any, world_size: int, timeout: float, where: str) -> Report:
    """Rank 0's report; an internal failure becomes an RM061 verdict, so every rank gets one."""
    try:
        return collate_raw(
            g.records,
            g.shared,
            g.ranks,
            world_size=world_size,
            missing=g.missing,
            arrivals=g.arrivals,
            timeout=timeout,
            where=where,
        )
    except Exception as exc:  # noqa: BLE001 - never leave the other ranks without a verdict
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        return Report(
            command="probe",
            findings=[finding("RM061", f"not checked: rank 0 could not collate ({reason})")],
            sections={"world_size": world_size, "missing_ranks": [], "store": where},
        )


def _stall_error(progress: Progress, record: RankRecord, timeout: float) -> UnavailableError:
    who = f"rank {record.rank} of {record.world_size}"
    if not progress.connected:
        return UnavailableError(
            f"{progress.where} unreachable: no answer within {timeout:g} s while connecting "
            f"({who})",
            hint="the address accepts connections but no c10d store answers there, or connect "
            "retries ran out of time: check MASTER_ADDR:MASTER_PORT from this node",
        )
    return ProbeTimeout(
        f"{progress.where} stopped answering within {timeout:g} s while {progress.phase} ({who})",
        hint="the store's host (rank 0 under srun/mpirun, the torchrun agent) died or is stopped",
    )


def _lost_error(progress: Progress, record: RankRecord, exc: Exception) -> UnavailableError:
    reason = " ".join(str(exc).split())[:300] or type(exc).__name__
    who = f"rank {record.rank} of {record.world_size}"
    if not progress.connected:
        return UnavailableError(f"{progress.where} unreachable: {reason} ({who})")
    return ProbeTimeout(
        f"lost {progress.where} while {progress.phase} ({who}): {reason}",
        hint="the store's host (rank 0 under srun/mpirun, the torchrun agent) died",
    )


def _verdict_report(verdict: bytes, where: str) -> Report:
    try:
        return report_from_payload(verdict)
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        raise UnavailableError(
            f"rank 0's verdict through {where} cannot be read: {type(exc).__name__}"
        ) from None


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


MAX_TIMEOUT = 86400.0  # one day: beyond that a "timeout" is a typo (and overflows timedelta)


def check_timeout(timeout: Any) -> float:
    """A finite, positive number of seconds (at most a day); ``InputError`` otherwise."""
    number = isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
    seconds = float(timeout) if number else math.nan
    if not 0 < seconds <= MAX_TIMEOUT:  # False for NaN too
        raise InputError(
            f"timeout must be a number of seconds > 0 and <= {MAX_TIMEOUT:g}, not {timeout!r}"
        )
    return seconds


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
    seconds = check_timeout(timeout)
    try:
        outcome = run_probe(environ, ports=ports, device=device, machine=machine, timeout=seconds)
    except (InputError, ProbeTimeout):
        raise
    except Exception as exc:  # noqa: BLE001 - never stop a healthy job for rankmap's own failure
        return _fail_open(exc, strict)
    report = outcome.report
    failed = next((f for f in report.findings if f.code == "RM061"), None)
    if failed is not None:  # rank 0 could not collate: every rank fails open (or raises) alike
        return _fail_open(UnavailableError(failed.title), strict)
    if outcome.missing:
        first = next((f for f in report.findings if f.code == "RM060"), None)
        raise ProbeTimeout(
            f"rankmap.verify: {first.title if first else 'ranks missing'}"
            + (f" ({first.detail})" if first and first.detail else "")
        )
    if report.has_errors:
        raise RankMapError(format_findings(report))
    return report
