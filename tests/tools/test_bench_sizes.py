"""Pure parts of rankmap bench: sizes, sweep, nccl-tests formulas, table, --min-busbw rule."""

from __future__ import annotations

import pytest

from rankmap.bench.link import LinkBandwidth, share, theoretical_bandwidth
from rankmap.bench.sizes import (
    avg_busbw,
    below_min,
    busbw_factor,
    element_count,
    format_size,
    make_result,
    parse_size,
    sweep,
    table_header,
    table_row,
)
from rankmap.errors import UsageError
from rankmap.topology import GpuLocality, NvLinkInfo, PcieInfo


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1K", 1024),
        ("4M", 4 * 1024**2),
        ("1G", 1024**3),
        ("512", 512),
        ("8k", 8192),
        ("2MB", 2 << 20),
    ],
)
def test_parse_size(text: str, value: int) -> None:
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["", "K", "1.5M", "-1K", "4T", "lots"])
def test_parse_size_rejects_garbage(text: str) -> None:
    with pytest.raises(UsageError):
        parse_size(text)


def test_format_size_round_trips() -> None:
    for size in (1024, 4 << 20, 1 << 30, 1536, 7):
        assert parse_size(format_size(size)) == size
    assert format_size(1536) == "1536"


def test_sweep_like_nccl_tests() -> None:
    assert sweep(1024, 4 << 20, 2)[:3] == [1024, 2048, 4096]
    assert sweep(1024, 4 << 20, 2)[-1] == 4 << 20
    assert len(sweep(1024, 4 << 20, 2)) == 13
    assert sweep(1024, 1024, 2) == [1024]
    assert sweep(1 << 10, 1 << 20, 4) == [1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20]


@pytest.mark.parametrize(("b", "e", "f"), [(2048, 1024, 2), (0, 10, 2), (1, 10, 1)])
def test_sweep_rejects_empty_or_endless(b: int, e: int, f: int) -> None:
    with pytest.raises(UsageError):
        sweep(b, e, f)


def test_busbw_factors_are_nccl_tests_formulas() -> None:
    assert busbw_factor("all_reduce", 4) == pytest.approx(1.5)
    assert busbw_factor("all_reduce", 8) == pytest.approx(1.75)
    assert busbw_factor("all_reduce", 1) == 0
    assert busbw_factor("all_gather", 4) == pytest.approx(0.75)
    assert busbw_factor("reduce_scatter", 8) == pytest.approx(0.875)
    assert busbw_factor("broadcast", 8) == 1.0
    with pytest.raises(UsageError):
        busbw_factor("alltoall", 2)


def test_element_count_rounds_to_ranks_for_gather_and_scatter() -> None:
    assert element_count("all_reduce", 1024, "float32", 3) == 256
    assert element_count("all_gather", 1024, "float32", 3) == 255
    assert element_count("reduce_scatter", 1024, "bfloat16", 3) == 510


def test_make_result_applies_formula() -> None:
    r = make_result("all_reduce", 4 << 20, (4 << 20) // 4, "float32", 0.001, 4, 0)
    assert r.algbw == pytest.approx((4 << 20) / 1e9 / 0.001)
    assert r.busbw == pytest.approx(r.algbw * 2 * 3 / 4)
    assert r.time_us == pytest.approx(1000.0)
    assert r.to_dict()["wrong"] == 0
    assert set(r.to_dict()) == {
        "op",
        "size",
        "count",
        "dtype",
        "time_us",
        "algbw",
        "busbw",
        "wrong",
    }


def test_avg_and_min_busbw_rule() -> None:
    rows = [make_result("broadcast", 1000, 250, "float32", 1e-6, 2, 0) for _ in range(3)]
    assert avg_busbw(rows) == pytest.approx(1.0)
    assert avg_busbw([]) == 0.0
    assert not below_min(0.95, 1.0)  # 0.95 >= 0.9 x 1.0
    assert below_min(0.89, 1.0)
    assert not below_min(0.0, None)


def test_table_lines_align() -> None:
    header = table_header("all_reduce")
    row = table_row(make_result("all_reduce", 1024, 256, "float32", 1e-5, 4, 0))
    assert "busbw" in header[0] and "#wrong" in header[0]
    assert len(header[0]) == len(row)
    assert row.split()[:4] == ["1024", "256", "float", "sum"]


def test_theoretical_link_bandwidth() -> None:
    h100 = GpuLocality("GPU0", 0, nvlink=NvLinkInfo(4, 18, 18), pcie=PcieInfo(5, 16))
    link = theoretical_bandwidth(h100)
    assert link == LinkBandwidth(450.0, "NVLink 4 x18")
    degraded = GpuLocality("GPU0", 0, nvlink=NvLinkInfo(3, 12, 6))
    assert theoretical_bandwidth(degraded) == LinkBandwidth(150.0, "NVLink 3 x6")
    pcie = theoretical_bandwidth(GpuLocality("GPU0", 0, pcie=PcieInfo(4, 16)))
    assert pcie is not None and pcie.gbps == pytest.approx(31.5, rel=0.01)
    assert theoretical_bandwidth(GpuLocality("GPU0", 0)) is None
    assert share(225.0, link) == pytest.approx(0.5)
    assert share(1.0, None) is None
