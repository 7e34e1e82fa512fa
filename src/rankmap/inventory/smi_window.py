"""The parts of a big text that may be nvidia-smi output: windows of lines around its markers.

A 13 MB log with a PCI bus id on every line is no nvidia-smi output, but reading it line by line
through the paste normaliser costs seconds per megabyte. Every form prints something a log line
does not (samples: reference/nvidia_smi_formats.md): the table's banner and its ``|``-separated
GPU rows, ``-L``'s ``(UUID: GPU-…)``, ``-q``'s ``GPU 00000000:…`` sections and
``Product Name``/``Bus Id`` keys, the XML root and ``<pci_bus_id>``, the CSV header or its
comma-separated rows. One regex scan finds those *seeds*; the windows of lines around them (with
the command line above, for the machine's name) are what the readers get, in paste order.
"""

from __future__ import annotations

import re

from rankmap.inventory.smi_common import BUS

WINDOW_MIN_CHARS = 64 * 1024  # smaller texts are read whole (as before)
LINES_BEFORE = 60  # a table's header above its first GPU row; the command line naming the host
LINES_AFTER = 300  # the rest of a -q section or a table

_SEED = re.compile(
    r"NVIDIA-SMI|NVSMI LOG|<nvidia_smi_log|<pci_bus_id>|<gpu id=|\(UUID|GPU-[0-9a-fA-F]{8}"
    r"|MIG-[0-9a-fA-F]{8}|Product Name|Bus[ -]Id|pci\.bus_id|--query-gpu|Persistence-M"
    rf"|\|[^|\n]*{BUS}|,[ \t]*{BUS}|\n[ \t]*{BUS}[ \t]*,|\nGPU {BUS}"
)


def windows(text: str) -> str:
    """``text`` cut down to the windows around nvidia-smi markers (``""`` when there is none);
    a small text, or one whose windows cover most of it, comes back whole."""
    if len(text) < WINDOW_MIN_CHARS:
        return text
    seeds = [m.start() for m in _SEED.finditer(text)]
    if not seeds:
        return ""
    lines = text.split("\n")
    starts = _seed_lines(text, seeds)
    spans: list[tuple[int, int]] = []
    for n in starts:
        lo, hi = max(0, n - LINES_BEFORE), min(len(lines), n + LINES_AFTER + 1)
        if spans and lo <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(hi, spans[-1][1]))
        else:
            spans.append((lo, hi))
    if sum(hi - lo for lo, hi in spans) * 2 > len(lines):
        return text
    return "\n\n".join("\n".join(lines[lo:hi]) for lo, hi in spans)


def _seed_lines(text: str, seeds: list[int]) -> list[int]:
    """Line numbers (0-based) of the seed offsets, ascending, each once."""
    out: list[int] = []
    line, pos = 0, 0
    for seed in seeds:
        if text.startswith("\n", seed):  # a seed that begins with the line end before it
            seed += 1
        line += text.count("\n", pos, seed)
        pos = seed
        if not out or out[-1] != line:
            out.append(line)
    return out
