"""Machines from every source into one model: built-in profiles, profile JSON, pasted nvidia-smi.

``load_machine(spec)`` takes what ``--machine`` takes: a built-in profile name, or a path to
profile JSON (``rankmap doctor --save``) or to a paste of nvidia-smi output in any form
(:mod:`rankmap.inventory.smi`), which may hold several machines. ``read_pastes(text)`` finds
the machines in free text and returns ``[]`` where there are none.
The live NVML source is :mod:`rankmap.adapters.nvml`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from rankmap.errors import InputError
from rankmap.model import Host, clone_host
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
    """Every host of every ``--machine`` value, in order (one value may hold several hosts).
    A built-in profile named again is another node of the same kind (``-m dgx-h100 -m
    dgx-h100``: two machines), with its own hostname and boot_id, as ``--nodes 2`` clones it —
    not one machine named twice, which NCCL would take for one host (review 16)."""
    hosts: list[Host] = []
    seen: dict[str, int] = {}
    for spec in specs:
        copy = seen.get(spec, 0)
        seen[spec] = copy + 1
        loaded = load_machine(spec, files)
        builtin = "/" not in spec and not spec.endswith((".json", ".xml", ".txt", ".csv"))
        hosts += [clone_host(h, copy) for h in loaded] if builtin and copy else loaded
    return hosts


def detect_format(text: str) -> str:
    """``profile-json`` | ``smi-xml`` | ``smi-q`` | ``smi-table`` | ``smi-list`` | ``smi-csv``
    | ``unknown`` (nvidia-smi forms are recognised anywhere in the text)."""
    if text.lstrip("\ufeff \t\r\n").startswith("{"):
        return "profile-json"
    from rankmap.inventory.smi import detect_text_format

    return detect_text_format(text)


def parse_machine_text(text: str, *, source: str) -> list[Host]:
    """Parse any supported machine description; ``InputError`` (one line) names what was wrong.

    A paste of nvidia-smi output may describe several machines: one host each, in paste order.
    """
    if text.lstrip("\ufeff \t\r\n").startswith("{"):
        from rankmap.inventory.profile import parse_profile_json

        return parse_profile_json(text, source=source)
    from rankmap.inventory.smi import parse_paste

    return parse_paste(text, source=source)


def read_pastes(text: str, *, source: str = "paste") -> list[Host]:
    """The machines that nvidia-smi output inside ``text`` shows; ``[]`` when there is none.

    For readers of free text such as ``explain``: a log or an issue body that contains the
    table, ``-L``, ``-q``, XML or CSV output anywhere. Never raises for other text.
    """
    from rankmap.inventory.smi import read_pastes as read

    return read(text, source=source)
