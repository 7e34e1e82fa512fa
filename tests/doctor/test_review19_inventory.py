"""Review 19: a paste that is no machine is refused, not read in part."""

from __future__ import annotations

import pytest

from rankmap.errors import InputError
from rankmap.inventory import parse_machine_text


def _listing(count: int) -> str:
    return "".join(
        f"GPU {i}: NVIDIA A100 (UUID: GPU-{i:08x}-aaaa-bbbb-cccc-dddddddddddd)\n"
        for i in range(count)
    )


def test_a_listing_with_an_index_of_1000_or_more_is_refused() -> None:
    with pytest.raises(InputError, match="1000 or more"):
        parse_machine_text(_listing(1200), source="paste")


def test_a_listing_of_a_real_machine_is_read_whole() -> None:
    (host,) = parse_machine_text(_listing(16), source="paste")
    assert len(host.gpus) == 16
