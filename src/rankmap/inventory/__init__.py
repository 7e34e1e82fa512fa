"""Machines from every source into one model: built-in profiles, profile JSON, pasted nvidia-smi.

``load_machine(spec)`` takes what ``--machine`` takes: a built-in profile name, or a path to
profile JSON (``rankmap doctor --save``), ``nvidia-smi -q -x`` XML, ``nvidia-smi -L`` text,
``nvidia-smi --query-gpu=... --format=csv`` output or the default ``nvidia-smi`` table.
The live NVML source is :mod:`rankmap.adapters.nvml`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from rankmap.errors import InputError
from rankmap.model import Host
from rankmap.sources import Files, NoFiles


@dataclass(frozen=True)
class BuiltinProfile:
    """A profile shipped inside the package (``rankmap machines`` lists them)."""

    name: str
    description: str


def builtin_profiles() -> list[BuiltinProfile]:
    """All built-in profiles, by name."""
    out = []
    for entry in sorted(resources.files("rankmap.profiles").iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".json"):
            doc = json.loads(entry.read_text(encoding="utf-8"))
            out.append(BuiltinProfile(entry.name[: -len(".json")], str(doc.get("description", ""))))
    return out


def _builtin_text(name: str) -> str | None:
    entry = resources.files("rankmap.profiles").joinpath(f"{name}.json")
    return entry.read_text(encoding="utf-8") if entry.is_file() else None


def load_machine(spec: str, files: Files | None = None) -> list[Host]:
    """Resolve one ``--machine`` value into hosts. Bad input raises :class:`InputError`.

    A built-in profile name needs no ``files``; a path is read through that port.
    """
    text = (
        _builtin_text(spec)
        if "/" not in spec and not spec.endswith((".json", ".xml", ".txt", ".csv"))
        else None
    )
    if text is not None:
        return parse_machine_text(text, source=f"profile:{spec}")
    files = files or NoFiles()
    path = Path(spec)
    if not files.exists(path):
        names = ", ".join(p.name for p in builtin_profiles())
        raise InputError(
            f"--machine {spec!r}: no such built-in profile or file (built-in: {names})"
        )
    text = files.read_text(path, kind="machine", what=f"--machine {spec!r}")
    if not text.strip():
        raise InputError(f"--machine {spec!r} is empty")
    return parse_machine_text(text, source=str(path))


def load_machines(specs: Iterable[str], files: Files | None = None) -> list[Host]:
    """Every host of every ``--machine`` value, in order (one value may hold several hosts)."""
    return [host for spec in specs for host in load_machine(spec, files)]


def detect_format(text: str) -> str:
    """``profile-json`` | ``smi-xml`` | ``smi-list`` | ``smi-csv`` | ``smi-table`` | ``unknown``."""
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith("{"):
        return "profile-json"
    if stripped.startswith("<?xml") or "<nvidia_smi_log" in stripped[:2000]:
        return "smi-xml"
    from rankmap.inventory.smi import detect_text_format

    return detect_text_format(stripped)


def parse_machine_text(text: str, *, source: str) -> list[Host]:
    """Parse any supported machine description; ``InputError`` names what was wrong."""
    fmt = detect_format(text)
    if fmt == "profile-json":
        from rankmap.inventory.profile import parse_profile_json

        return parse_profile_json(text, source=source)
    if fmt == "unknown":
        raise InputError(
            f"{source}: not a machine description (expected profile JSON, nvidia-smi -q -x XML, "
            "nvidia-smi -L, nvidia-smi --query-gpu CSV or the nvidia-smi table)"
        )
    from rankmap.inventory.smi import parse

    return parse(fmt, text, source=source)
