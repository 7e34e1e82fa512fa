"""Findings: the results of every rule, and the report that carries them.

A finding's ``code`` is stable and documented in docs/findings.md (generated from
:mod:`rankmap.codes`). Its category and default severity come from the code's registry entry.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rankmap.categories import CATEGORIES, Severity
from rankmap.codes import lookup
from rankmap.model import Placement

__all__ = [
    "CATEGORIES",
    "SCHEMA",
    "Finding",
    "Report",
    "Severity",
    "finding",
    "order_findings",
    "verdict_of",
]

SCHEMA = "rankmap/1"


@dataclass(frozen=True)
class Finding:
    """One diagnosed fact. Build it with :func:`finding` so code, category and severity agree."""

    code: str
    category: str
    severity: Severity
    title: str
    detail: str = ""
    ranks: tuple[int, ...] = ()
    devices: tuple[str, ...] = ()  # canonical PCI bus ids, or GPU/MIG UUIDs when no bus id
    hosts: tuple[str, ...] = ()
    fix: str = ""
    evidence: tuple[str, ...] = ()  # quoted input lines that support it (explain)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "category": self.category,
            "severity": self.severity.value,
            "title": self.title,
            "detail": self.detail,
            "ranks": list(self.ranks),
            "devices": list(self.devices),
            "hosts": list(self.hosts),
            "fix": self.fix,
        }
        if self.evidence:
            out["evidence"] = list(self.evidence)
        return out


def finding(
    code: str,
    title: str,
    *,
    detail: str = "",
    ranks: Iterable[int] = (),
    devices: Iterable[str] = (),
    hosts: Iterable[str] = (),
    fix: str = "",
    evidence: Iterable[str] = (),
    severity: Severity | str | None = None,
) -> Finding:
    """Build a :class:`Finding` for a registered ``code`` (``KeyError`` if unregistered)."""
    info = lookup(code)
    sev = Severity(severity) if severity is not None else info.severity
    return Finding(
        code=code,
        category=info.category,
        severity=sev,
        title=title,
        detail=detail,
        ranks=tuple(sorted(set(ranks))),
        devices=tuple(dict.fromkeys(devices)),
        hosts=tuple(dict.fromkeys(hosts)),
        fix=fix or info.fix,
        evidence=tuple(evidence),
    )


def order_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Errors first, then warnings, then info; the producer's order within a severity.

    Producers put the most likely root cause first; this keeps that order.
    """
    return sorted(findings, key=lambda f: f.severity.rank)


def verdict_of(findings: Sequence[Finding]) -> str:
    """``ok`` / ``warning`` / ``error``: the worst severity present (info counts as ok)."""
    if any(f.severity is Severity.ERROR for f in findings):
        return "error"
    if any(f.severity is Severity.WARNING for f in findings):
        return "warning"
    return "ok"


@dataclass
class Report:
    """What every command produces: findings, placements and command-specific sections.

    ``sections`` holds the extra top-level JSON keys (``inventory``, ``visible_devices``,
    ``predicted_errors``...). Values must already be JSON-ready.
    """

    command: str
    findings: list[Finding] = field(default_factory=list)
    placements: list[Placement] = field(default_factory=list)
    sections: dict[str, Any] = field(default_factory=dict)

    def ordered_findings(self) -> list[Finding]:
        return order_findings(self.findings)

    @property
    def verdict(self) -> str:
        return verdict_of(self.findings)

    @property
    def has_errors(self) -> bool:
        return self.verdict == "error"

    def to_dict(self) -> dict[str, Any]:
        """The ``rankmap/1`` JSON document."""
        out: dict[str, Any] = {
            "schema": SCHEMA,
            "command": self.command,
            "verdict": self.verdict,
            "findings": [f.to_dict() for f in self.ordered_findings()],
            "placements": [p.to_dict() for p in sorted(self.placements, key=lambda p: p.rank)],
        }
        for key, value in self.sections.items():
            if key not in out:
                out[key] = value
        return out
