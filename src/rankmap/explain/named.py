"""The ranks and GPUs a text names, in every spelling the field prints them.

Devices (canonical through :mod:`rankmap.pci`, so one GPU is one id whatever the spelling):
``0000:4f:00.0`` (lspci/sysfs), ``00000000:4F:00.0`` (nvidia-smi, NVML), ``4F:00.0`` after a
``Bus-Id``/``bus id``/``pci`` word, NCCL's packed hex after ``busId`` (``4f000``,
reference/nccl.md (a); the duplicate WARN's ``CUDA device 4f000`` is read by the WARN's own
recogniser), and GPU/MIG UUIDs. Ranks on failure lines: ``[rank3]:`` (PyTorch),
``[Rank 3]``, ``Rank 3:``, ``rank 3``, ``rank=3``, ``rank: 3``, ``local_rank 3``,
``LOCAL_RANK=3``, ``--local_rank=3``, Open MPI's ``[1,3]<stderr>:`` and a line-leading ``[3]:``
(reference/launchers.md). Counters such as ``nranks``/``localRanks`` are not ranks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rankmap.pci import try_normalize_bus_id

MAX_NAMED = 8
MAX_RANKS = 64

_BUS_FULL = re.compile(r"(?<![\w:.])[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7](?![\w:])")
_BUS_AFTER_WORD = re.compile(  # short forms only where a bus-id word says what they are
    r"(?i)\b(?:(?:pci[ _.-]?)?bus[ _-]?id\s*[:=]?\s*\[?"
    r"(?P<v>[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]|(?:0x)?[0-9a-f]{2,12})"
    r"|pci\s*[:=]?\s*\[?(?P<w>[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]))(?![\w:.])"
)
_UUID = re.compile(
    r"\b(?:MIG|GPU)-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
_RANK = re.compile(
    r"\[rank(?P<a>\d{1,5})\]"
    r"|(?<![\w-])(?:local[_ ]?)?rank\s*(?:[:=]\s*|\s)(?P<b>\d{1,5})\b"
    r"|--local[_-]rank[= ](?P<c>\d{1,5})\b"
    r"|^\[\d+,(?P<d>\d{1,5})\]<std(?:out|err)>:"
    r"|^\[(?P<e>\d{1,5})\]:",
    re.IGNORECASE,
)
_FAILURE = re.compile(  # a line reporting a failure
    r"error|fail|invalid|terminat|exception|abort|killed|traceback|ordinal|timed? ?out|exitcode",
    re.IGNORECASE,
)


def devices_in(texts: Iterable[str], limit: int = MAX_NAMED) -> tuple[str, ...]:
    """Bus ids (canonical) then GPU/MIG UUIDs named in ``texts``, each once, in order."""
    buses: list[str] = []
    uuids: list[str] = []
    for text in texts:
        for m in _BUS_FULL.finditer(text):
            _add(buses, try_normalize_bus_id(m.group(0)), limit)
        for m in _BUS_AFTER_WORD.finditer(text):
            _add(buses, try_normalize_bus_id(m.group("v") or m.group("w")), limit)
        for m in _UUID.finditer(text):
            _add(uuids, m.group(0), limit)
    return tuple(buses + uuids)


def _add(out: list[str], item: str | None, limit: int) -> None:
    if item and item not in out and len(out) < limit:
        out.append(item)


def failing_ranks(lines: Iterable[str], limit: int = MAX_RANKS) -> set[int]:
    """Ranks that lines reporting a failure name (see the module docstring for the forms)."""
    out: set[int] = set()
    for line in lines:
        if "ank" not in line and "[" not in line:
            continue
        if not _FAILURE.search(line):
            continue
        for m in _RANK.finditer(line.strip()):
            num = next(g for g in m.groups() if g is not None)
            if len(out) < limit:
                out.add(int(num))
    return out
