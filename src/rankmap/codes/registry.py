"""The code registry: :func:`define` records one code; the area modules call it."""

from __future__ import annotations

from dataclasses import dataclass

from rankmap.categories import CATEGORIES, Severity


@dataclass(frozen=True)
class CodeInfo:
    """Documentation and defaults of one finding code."""

    code: str
    category: str
    severity: Severity
    summary: str  # one line: what the code means
    cause: str  # why it happens
    fix: str  # the default fix (findings usually give a concrete one)
    example: str  # an example title/detail or the command that shows it


_REGISTRY: dict[str, CodeInfo] = {}


def define(
    code: str,
    category: str,
    severity: str,
    summary: str,
    *,
    cause: str,
    fix: str,
    example: str,
) -> CodeInfo:
    """Register a code. Duplicate codes and unknown categories are programming errors."""
    if category not in CATEGORIES:
        raise ValueError(f"{code}: unknown category {category!r}")
    if code in _REGISTRY:
        raise ValueError(f"finding code {code} defined twice")
    info = CodeInfo(code, category, Severity(severity), summary, cause, fix, example)
    _REGISTRY[code] = info
    return info
