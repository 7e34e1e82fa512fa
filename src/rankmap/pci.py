"""PCI bus ids in every spelling met in the field, and NCCL's packed integer form.

Spellings (reference/nvidia_smi_formats.md §6, reference/nccl.md (a)):

* NVML / nvidia-smi: ``00000000:4F:00.0`` (8-digit domain, upper case)
* NVML ``busIdLegacy``, cudaDeviceGetPCIBusId, old nvidia-smi: ``0000:4F:00.0``
* sysfs / lspci / NCCL topology XML: ``0000:4f:00.0``
* NCCL messages and INFO lines: packed int64 printed in hex, ``4f000`` (= bus id hex digits
  run together, leading zeros dropped; ``196000`` is domain 1)
* nccl-tests: ``[0x4f]`` (bus number only) or ``[0000:4f:00]`` (no function)

The canonical form used everywhere in rankmap (and in the JSON report) is ``0000:4F:00.0``:
4-digit domain (wider when needed), upper-case hex.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_FULL = re.compile(
    r"^(?:(?P<domain>[0-9a-fA-F]{1,8}):)?(?P<bus>[0-9a-fA-F]{1,2}):(?P<device>[0-9a-fA-F]{1,2})"
    r"(?:\.(?P<function>[0-7]))?$"
)
_NCCL_INT = re.compile(r"^(?:0[xX])?(?P<hex>[0-9a-fA-F]{1,16})$")


@dataclass(frozen=True, order=True)
class PciAddress:
    """A PCI address as integers; compare these, never strings."""

    domain: int
    bus: int
    device: int
    function: int = 0

    def canonical(self) -> str:
        """``0000:4F:00.0`` - the form rankmap reports."""
        return f"{self.domain:04X}:{self.bus:02X}:{self.device:02X}.{self.function:X}"

    def nvml(self) -> str:
        """``00000000:4F:00.0`` - the NVML / nvidia-smi form."""
        return f"{self.domain:08X}:{self.bus:02X}:{self.device:02X}.{self.function:X}"

    def sysfs(self) -> str:
        """``0000:4f:00.0`` - sysfs, lspci and NCCL's topology form."""
        return f"{self.domain:04x}:{self.bus:02x}:{self.device:02x}.{self.function:x}"

    def nccl_int(self) -> int:
        """NCCL's ``busIdToInt64`` value."""
        return (self.domain << 20) | (self.bus << 12) | (self.device << 4) | self.function

    def nccl(self) -> str:
        """The hex number NCCL prints (``4f000``)."""
        return f"{self.nccl_int():x}"


def from_nccl_int(value: int) -> PciAddress:
    """Unpack NCCL's int64 (``int64ToBusId`` in NCCL's src/misc/utils.cc)."""
    if value < 0:
        raise ValueError(f"negative NCCL bus id {value}")
    if (value >> 4) & 0xFF > 0x1F or value & 0xF > 7:  # PCI: 5-bit device, 3-bit function
        raise ValueError(f"not a PCI address: NCCL bus id {value:x}")
    return PciAddress(
        domain=value >> 20,
        bus=(value >> 12) & 0xFF,
        device=(value >> 4) & 0xFF,
        function=value & 0xF,
    )


def parse_nccl_bus_id(text: str) -> PciAddress:
    """Parse the hex number in NCCL messages (``4f000``, ``0x4f000``, ``10``, ``196000``)."""
    match = _NCCL_INT.match(text.strip())
    if not match:
        raise ValueError(f"not an NCCL bus id: {text!r}")
    return from_nccl_int(int(match.group("hex"), 16))


def parse_bus_id(text: str) -> PciAddress:
    """Parse any spelling of a PCI bus id into a :class:`PciAddress`.

    Accepts ``domain:bus:device.function`` with any domain width (or none), nccl-tests'
    ``[0000:4f:00]`` / ``[0x4f]`` (bus number only), and NCCL's packed hex (a bare hex number
    without ``:``). Raises ``ValueError`` for anything else.
    """
    raw = text.strip()
    if raw.startswith("[") and raw.endswith("]"):
        inner = raw[1:-1].strip()
        if inner.lower().startswith("0x") and ":" not in inner:
            # nccl-tests prints the bus *number* only: "[0x4f]"
            return PciAddress(0, int(inner, 16), 0, 0)
        raw = inner
    match = _FULL.match(raw)
    if match:
        return PciAddress(
            domain=int(match.group("domain") or "0", 16),
            bus=int(match.group("bus"), 16),
            device=int(match.group("device"), 16),
            function=int(match.group("function") or "0", 16),
        )
    if ":" not in raw:
        return parse_nccl_bus_id(raw)
    raise ValueError(f"not a PCI bus id: {text!r}")


def normalize_bus_id(text: str) -> str:
    """Any spelling -> canonical ``0000:4F:00.0``. Raises ``ValueError`` when unparseable."""
    return parse_bus_id(text).canonical()


def try_normalize_bus_id(text: str | None) -> str | None:
    """Like :func:`normalize_bus_id` but returns ``None`` for ``None``/``N/A``/garbage."""
    if not text:
        return None
    if len(text) <= 64:  # a log names a few GPUs on every line: each spelling parsed once
        return _try_normalize_short(text)
    return _try_normalize(text)


def _try_normalize(text: str) -> str | None:
    try:
        return normalize_bus_id(text)
    except ValueError:
        return None


_try_normalize_short = lru_cache(maxsize=1024)(_try_normalize)


def nccl_form(bus_id: str) -> str:
    """Canonical (or any) spelling -> the hex NCCL prints (``0000:4F:00.0`` -> ``4f000``)."""
    return parse_bus_id(bus_id).nccl()
