"""Rank lists as people read them: ``[0, 1, 2, 3, 6]`` -> ``0-3, 6``."""

from __future__ import annotations

from collections.abc import Iterable


def rank_runs(ranks: Iterable[int]) -> list[str]:
    """Runs of consecutive ranks, sorted and de-duplicated: ``["0-3", "6"]``."""
    ordered = sorted(set(ranks))
    runs: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        runs.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return runs


def rank_ranges(ranks: Iterable[int], *, sep: str = ", ", max_runs: int | None = None) -> str:
    """``0-3, 6``; with ``max_runs`` the list is cut and ends in ``...``."""
    runs = rank_runs(ranks)
    if max_runs is not None and len(runs) > max_runs:
        runs = [*runs[:max_runs], "..."]
    return sep.join(runs)


def ranks_text(ranks: Iterable[int], *, max_runs: int | None = 8) -> str:
    """``[0, 1, 2, 3, 6]`` -> ``0-3, 6``; ``[0, 4]`` -> ``0 and 4`` (cut after ``max_runs`` runs)."""
    vals = sorted(set(ranks))
    if len(vals) == 2:
        return f"{vals[0]} and {vals[1]}"
    return rank_ranges(vals, max_runs=max_runs)


def rank_phrase(ranks: Iterable[int], *, max_runs: int | None = 8) -> str:
    """``rank 3`` / ``ranks 0 and 4`` / ``ranks 0-3, 6``: a rank list as the subject of a sentence."""
    vals = sorted(set(ranks))
    if len(vals) == 1:
        return f"rank {vals[0]}"
    return f"ranks {ranks_text(vals, max_runs=max_runs)}"


def listed(items: Iterable[str], *, limit: int = 160) -> str:
    """``items`` joined with commas, whole entries only: a list longer than ``limit`` characters
    ends with ``,…`` after the last entry that fits (a UUID is never cut in two)."""
    out = ""
    for item in items:
        joined = f"{out},{item}" if out else item
        if len(joined) > limit:
            return f"{out},…" if out else item[:limit] + "…"
        out = joined
    return out
