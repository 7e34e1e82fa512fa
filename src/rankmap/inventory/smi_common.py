"""Helpers every pasted-output reader shares: id shapes, placeholder UUIDs, hosts."""

from __future__ import annotations

import re
from pathlib import PurePath

from rankmap.model import Gpu, Host
from rankmap.numbers import saturating_int
from rankmap.pci import try_normalize_bus_id

UNKNOWN_UUID_PREFIX = "unknown-uuid:"
BUS = r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]"
UUID = r"GPU-[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}"
FULL_UUID = re.compile(r"^(?:GPU|MIG)-[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}$")


_UUID_GAP_MARKS = ("gives no UUID", "show this GPU's UUID", "UUID cut or masked", "no uuid column")
_BUS_GAP_MARKS = ("gives no PCI bus id", "no pci.bus_id column", "show this GPU's PCI bus id")


def says_uuid_unknown(note: str) -> bool:
    """The note says that the GPU's UUID is not shown (another form may fill it in)."""
    return any(mark in note for mark in _UUID_GAP_MARKS)


def says_bus_id_unknown(note: str) -> bool:
    """The note says that the GPU's PCI bus id is not shown."""
    return any(mark in note for mark in _BUS_GAP_MARKS)


def make_host(gpus: list[Gpu], source: str, label: str, **kw: str | None) -> Host:
    """One host from parsed GPUs; ``kw``: ``driver_version``, ``cuda_driver_version``."""
    # A paste names no machine: the file's stem stands in, so two pasted nodes stay two hosts.
    stem = PurePath(source).stem if source else ""
    return Host(
        hostname=stem or "nvidia-smi",
        gpus=tuple(sorted(gpus, key=lambda g: g.nvml_index)),
        driver_version=kw.get("driver_version"),
        cuda_driver_version=kw.get("cuda_driver_version"),
        source=f"{label}:{source}",
    )


def shown_uuid(raw: str | None, index: int, what: str) -> tuple[str, list[str]]:
    """``(uuid, notes)``: the UUID as shown when it is whole, else the placeholder and why."""
    value = (raw or "").strip()
    if FULL_UUID.match(value) or value.startswith("MIG-GPU-"):
        return value, []
    if not value or value in ("N/A", "[N/A]"):
        return unknown_uuid(index), [f"the paste does not show this GPU's UUID ({what})"]
    return unknown_uuid(index), [f"the paste shows the UUID cut or masked ({value!r}); not used"]


def unknown_uuid(index: int) -> str:
    """Placeholder UUID for a GPU whose source gives none (unique, never matches ``GPU-``)."""
    return f"{UNKNOWN_UUID_PREFIX}nvml{index}"


def bus_id(raw: str | None) -> str | None:
    """Canonical bus id of any spelling, or ``None``."""
    return try_normalize_bus_id(raw.strip()) if raw else None


def leading_int(raw: str | None) -> int | None:
    """``"81559 MiB"`` -> 81559; ``None`` when there is no leading number."""
    match = re.match(r"\s*(\d+)", raw or "")
    return saturating_int(match.group(1)) if match else None
