"""Hypothesis strategies of text for the explain tests that compare a fast form with its full one."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st


def joined_fragments(
    fragments: Sequence[str], *, filler: int, count: int
) -> st.SearchStrategy[str]:
    """Up to ``count`` pieces joined: each one of ``fragments`` (the words a gate looks for, and
    near misses) or any text of up to ``filler`` characters."""
    return st.lists(
        st.sampled_from(list(fragments)) | st.text(max_size=filler), max_size=count
    ).map("".join)
