"""Typed errors. Every error a user can meet carries one clear line and an optional hint.

Findings are *results*, never exceptions; these errors mean rankmap could not do its job.
"""

from __future__ import annotations

from rankmap.status import ExitStatus


class RankMapError(Exception):
    """Base of rankmap's errors.

    ``rankmap.verify()`` raises it (with the findings as message) when the job's mapping has an
    error finding, so user code can ``except rankmap.RankMapError``.
    """

    exit_status: ExitStatus = ExitStatus.FINDINGS

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class UsageError(RankMapError):
    """Bad command line: unknown flag, ``--env`` without ``=``, unknown launcher..."""

    exit_status = ExitStatus.USAGE


class InputError(RankMapError):
    """Unreadable or invalid input: empty/binary/malformed file, unknown profile name..."""

    exit_status = ExitStatus.USAGE


class UnavailableError(RankMapError):
    """A required source is unavailable: NVML missing where required, store unreachable..."""

    exit_status = ExitStatus.UNAVAILABLE


class ProbeTimeout(UnavailableError):
    """Ranks did not report within the probe's timeout."""
