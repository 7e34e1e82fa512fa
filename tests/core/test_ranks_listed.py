"""rankmap.ranks.listed: lists shown in findings keep whole entries."""

from __future__ import annotations

from rankmap.ranks import listed


def test_a_short_list_is_joined_whole() -> None:
    assert listed(["0", "1", "2"]) == "0,1,2"


def test_a_long_list_ends_after_the_last_whole_entry() -> None:
    uuids = [f"MIG-{i:08x}-7b3d-5e91-a2c4-6d8f0b1e3a57" for i in range(6)]
    shown = listed(uuids, limit=90)
    assert shown.endswith(",…")
    assert all(part in uuids for part in shown[: -len(",…")].split(","))


def test_one_entry_longer_than_the_limit_is_cut_with_a_mark() -> None:
    assert listed(["x" * 10], limit=4) == "xxxx…"
