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
