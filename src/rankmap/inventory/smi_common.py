"""Helpers every pasted-output reader shares: cleaning a paste, placeholder UUIDs, hosts."""

from __future__ import annotations

import re
from pathlib import PurePath

from rankmap.model import Gpu, Host
from rankmap.numbers import saturating_int
from rankmap.pci import try_normalize_bus_id

UNKNOWN_UUID_PREFIX = "unknown-uuid:"
_ANSI = re.compile(r"\x1b\[[0-9;?]{0,32}[ -/]{0,4}[@-~]|\x1b\][^\x07\x1b]{0,256}\x07")
_PROMPT = re.compile(r"^\s*(?:\S*[$#%>]\s+)?(?:sudo\s+)?nvidia-smi(?:\s.*)?$")


def clean_text(text: str) -> list[str]:
    """Lines of a paste without CRLF, ANSI codes, a BOM or ``$ nvidia-smi ...`` prompt lines."""
    text = _ANSI.sub("", text.replace("\ufeff", "")).replace("\r\n", "\n").replace("\r", "\n")
    return [line.rstrip() for line in text.split("\n") if not _PROMPT.match(line)]


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
