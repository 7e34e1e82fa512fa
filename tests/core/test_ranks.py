"""Rank lists as people read them."""

from rankmap.ranks import rank_ranges, rank_runs


def test_runs_sorted_and_deduplicated() -> None:
    assert rank_runs([6, 0, 1, 2, 3, 3]) == ["0-3", "6"]
    assert rank_runs([]) == []


def test_separator_and_cut() -> None:
    assert rank_ranges([0, 1, 2, 5]) == "0-2, 5"
    assert rank_ranges([0, 1, 2, 5], sep=",") == "0-2,5"
    assert rank_ranges(range(0, 40, 2), max_runs=3) == "0, 2, 4, ..."
