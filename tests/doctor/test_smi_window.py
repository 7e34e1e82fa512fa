"""``read_pastes`` on big texts reads only the windows around nvidia-smi markers: the same hosts
as the printout alone, found in linear time even when every log line holds a bus id."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankmap.inventory import read_pastes
from rankmap.inventory.smi_window import WINDOW_MIN_CHARS, windows
from rankmap.model import Host

DATA = Path(__file__).resolve().parents[1] / "data" / "smi"
PRINTOUTS = sorted(
    p
    for p in [*DATA.glob("*"), *(DATA / "corpus").glob("*")]
    if p.is_file() and ".truth" not in p.name
)


def _noise(n: int, start: int = 0) -> str:
    return "\n".join(
        f"[2026-01-01 10:00:{i % 60:02d}] worker {i % 8}: using 00000000:{(i % 8) * 16 + 0x18:02X}:00.0 "
        f"step {i} loss 2.{i % 97}"
        for i in range(start, start + n)
    )


def _shape(hosts: list[Host]) -> list[tuple[object, ...]]:
    return [
        tuple((g.nvml_index, g.pci_bus_id, g.uuid, g.name, len(g.mig_devices)) for g in h.gpus)
        for h in hosts
    ]


@pytest.mark.parametrize("path", PRINTOUTS, ids=lambda p: p.name)
def test_printout_inside_a_big_log_reads_as_alone(path: Path) -> None:
    printout = path.read_text(encoding="utf-8", errors="replace")
    alone = read_pastes(printout)
    big = f"{_noise(800)}\n$ nvidia-smi\n{printout}\n{_noise(800, 800)}\n"
    assert len(big) > WINDOW_MIN_CHARS
    assert _shape(read_pastes(big)) == _shape(alone)


def test_bus_id_on_every_line_is_fast_and_no_machine() -> None:
    text = _noise(130_000)  # ~11 MB
    t0 = time.perf_counter()
    assert read_pastes(text) == []
    assert time.perf_counter() - t0 < 3.0  # was ~25 s on the development box
    assert windows(text) == ""


def test_small_text_is_read_whole() -> None:
    assert windows("GPU 0: x\nhello") == "GPU 0: x\nhello"


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "| 0  NVIDIA A100  On  | 00000000:07:00.0 Off |  0 |",
                "GPU 1: NVIDIA H100 (UUID: GPU-12345678-1234-1234-1234-123456789abc)",
                "00000000:4F:00.0, 1",
                "x" * 2000,
                "pci.bus_id, index",
                "GPU 00000000:07:00.0",
                "",
                "|",
                ",",
            ]
        ),
        max_size=200,
    )
)
def test_fuzz_windows_never_raise(parts: list[str]) -> None:
    text = "\n".join(parts)
    out = windows(text)
    assert len(out) <= len(text) + 2 * len(parts) + 2
    read_pastes(text)


def test_noheader_csv_with_a_huge_number_is_one_line_of_error() -> None:
    from rankmap.errors import InputError
    from rankmap.inventory import parse_machine_text

    rows = (DATA / "ws4_query_noheader.csv").read_text().splitlines()
    first = rows[0].split(", ")
    rows[0] = ", ".join([*first[:2], "9" * 5001, *first[3:]])  # the index column
    with contextlib.suppress(InputError):  # a host, or one line of error; never a crash
        parse_machine_text("\n".join(rows), source="x.csv")
