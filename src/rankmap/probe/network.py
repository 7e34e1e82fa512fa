"""NCCL_SOCKET_IFNAME against the interfaces each rank really has (pure).

NCCL reads the variable as a prefix list; ``^`` excludes, ``=`` makes names exact
(reference/nccl.md, environment table); matching nothing ends in
``Bootstrap : no socket interface found``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from rankmap.findings import Finding, Severity, finding
from rankmap.probe.record import RankRecord


def ifname_matches(spec: str, interfaces: Sequence[str]) -> tuple[list[str], list[str]]:
    """(interfaces NCCL would consider, entries of ``spec`` that match nothing)."""
    text = spec.strip()
    exclude = text.startswith("^")
    text = text[1:] if exclude else text
    exact = text.startswith("=")
    text = text[1:] if exact else text
    entries = [e.strip() for e in text.split(",") if e.strip()]

    def hit(name: str, entry: str) -> bool:
        return name == entry if exact else name.startswith(entry)

    unmatched = [e for e in entries if not any(hit(n, e) for n in interfaces)]
    if exclude:
        return [n for n in interfaces if not any(hit(n, e) for e in entries)], []
    return [n for n in interfaces if any(hit(n, e) for e in entries)], unmatched


def check_socket_ifname(records: Sequence[RankRecord], label: dict[str, str]) -> list[Finding]:
    """NCCL_SOCKET_IFNAME naming interfaces that do not exist on a rank's machine."""
    bad: dict[tuple[str, str, bool], list[int]] = defaultdict(list)
    details: dict[tuple[str, str, bool], str] = {}
    for r in records:
        if not r.socket_ifname or r.interfaces is None:
            continue
        usable, unmatched = ifname_matches(r.socket_ifname, r.interfaces)
        if usable and not unmatched:
            continue
        group = (r.socket_ifname, r.machine_key, not usable)
        bad[group].append(r.rank)
        details[group] = f"interfaces there: {', '.join(r.interfaces) or 'none'}" + (
            f"; unmatched: {', '.join(unmatched)}" if unmatched else ""
        )
    out = []
    for (spec, key, fatal), rs in bad.items():
        what = "matches no interface" if fatal else "names interfaces that do not exist"
        out.append(
            finding(
                "RM020",
                f"NCCL_SOCKET_IFNAME={spec} {what} on {label[key]}",
                detail=details[(spec, key, fatal)]
                + (" (NCCL: `Bootstrap : no socket interface found`)" if fatal else ""),
                ranks=rs,
                hosts=[label[key]],
                severity=Severity.ERROR if fatal else Severity.WARNING,
            )
        )
    return out
