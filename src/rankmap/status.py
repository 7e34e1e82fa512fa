"""Exit statuses of every rankmap command (see docs/cli.md and the contract)."""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    """Process exit codes. Findings are results (1); tool failures are 2 or 3."""

    OK = 0  # looked, nothing at error severity
    FINDINGS = 1  # looked, at least one error finding
    USAGE = 2  # usage error or unreadable / invalid input
    UNAVAILABLE = 3  # could not look: a required source is unavailable
    INTERRUPTED = 130  # Ctrl-C
