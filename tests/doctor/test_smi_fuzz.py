"""Fuzzing every nvidia-smi reader: no exception but InputError, bounded time on long lines.

Inputs are built from the characters and tokens nvidia-smi output is made of, from cut and
spliced pieces of our own samples, and from long lines of the tokens that make regexes
backtrack (spaces, pipes, digits, ``GPU 0: ``, ``<gpu``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from doctor_fakes import SMI
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankmap.errors import InputError
from rankmap.inventory import parse_machine_text, read_pastes
from rankmap.inventory.normalise import PasteLine, paste_lines
from rankmap.inventory.smi_csv import read_csv
from rankmap.inventory.smi_list import read_list
from rankmap.inventory.smi_q import read_q
from rankmap.inventory.smi_table import read_table
from rankmap.inventory.smi_xml import read_xml

SAMPLES = [
    p.read_text(encoding="utf-8") for p in sorted(SMI.glob("ws4_*")) + [SMI / "a100mig_q.xml"]
]
TOKENS = [
    "|",
    "+",
    "-",
    "=",
    " ",
    "  ",
    "\n",
    ":",
    ".",
    ",",
    "(",
    ")",
    "<",
    ">",
    "/",
    "`",
    ">",
    "*",
    "GPU ",
    "GPU 0: ",
    "(UUID: ",
    "GPU-65d5d04d-361f-56b7-b8f2-dfe6196ff9cf",
    "MIG ",
    "Device ",
    "MIG-",
    "00000000:4F:00.0",
    "0000:05:00.0",
    "NVIDIA-SMI 550.54.15",
    "Driver Version: ",
    "CUDA Version: ",
    "MiB",
    " / ",
    "Off",
    "On",
    "N/A",
    "Enabled",
    "Processes:",
    "MIG devices:",
    "<nvidia_smi_log>",
    "</nvidia_smi_log>",
    '<gpu id="00000000:01:00.0">',
    "</gpu>",
    "<uuid>",
    "==============NVSMI LOG==============",
    "Product Name : ",
    "GPU UUID : ",
    "Bus Id : ",
    "MIG Device",
    "GPU Instance ID : ",
    "index, uuid, pci.bus_id",
    "--query-gpu=",
    "(task, pid=1) ",
    "0: ",
    "2026-12-01T09:00:00Z ",
    "> ",
    "```",
    "\u2502",
    "\u2014",
    "0",
    "7",
]
READERS: dict[str, Callable[[list[PasteLine]], object]] = {
    "xml": lambda lines: read_xml(lines, "fuzz"),
    "q": read_q,
    "table": read_table,
    "list": read_list,
    "csv": lambda lines: read_csv(lines, "fuzz"),
}
token_text = st.lists(st.sampled_from(TOKENS), max_size=120).map("".join)


@st.composite
def spliced(draw: st.DrawFn) -> str:
    """A sample cut at two places, with a token run spliced in."""
    text = draw(st.sampled_from(SAMPLES))
    a = draw(st.integers(0, len(text)))
    b = draw(st.integers(a, len(text)))
    return text[:a] + draw(token_text) + text[b:]


def _tolerates(call: Callable[[], object]) -> None:
    try:
        call()
    except InputError as exc:
        assert "\n" not in exc.message


@pytest.mark.parametrize("reader", sorted(READERS))
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(token_text, spliced(), st.text(max_size=300)))
def test_every_reader_raises_nothing_but_input_error(reader: str, text: str) -> None:
    _tolerates(lambda: READERS[reader](paste_lines(text)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(token_text, spliced()))
def test_the_whole_pipeline_raises_nothing_but_input_error(text: str) -> None:
    _tolerates(lambda: parse_machine_text(text, source="fuzz"))
    assert isinstance(read_pastes(text), list)


@pytest.mark.parametrize(
    "unit",
    [
        " ",
        "| ",
        "|  0 ",
        "0 ",
        "GPU 0: ",
        "(UUID: G",
        "a=b,",
        "+-",
        "<gpu ",
        "<a",
        "x : ",
        "0, ",
        "'a, b', ",
        "MIG 1g Device 0: ",
        "(a=b ",
        "ssh -o ",
    ],
)
def test_long_lines_are_read_in_bounded_time(unit: str) -> None:
    long, under_cap = unit * (200_000 // len(unit)), unit * (16_000 // len(unit))
    for line in (long, under_cap, "nvidia-smi " + under_cap, "| Processes: |\n" + under_cap):
        started = time.perf_counter()
        _tolerates(lambda line=line: parse_machine_text(line, source="fuzz"))
        assert time.perf_counter() - started < 5.0, unit
