"""What ``rankmap explain`` says of a paste given on stdin, for the review tests."""

from __future__ import annotations

import io
from pathlib import Path

from rankmap.adapters.local import explain_files
from rankmap.findings import Finding, Severity


def findings_of(text: str) -> list[Finding]:
    """Every finding of ``text`` read as a whole paste, first finding first."""
    return explain_files([Path("-")], stdin=io.StringIO(text)).ordered_findings()


def alarms_of(text: str) -> list[Finding]:
    """The findings of a mapping category above ``info``: a false alarm on healthy input."""
    return [
        f for f in findings_of(text) if f.category != "other" and f.severity is not Severity.INFO
    ]
