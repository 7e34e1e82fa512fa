"""``nvidia-smi -q`` plain text -> listings, whole or in part.

Read from its ``Key : value`` lines and ``GPU 00000000:4F:00.0`` section headers (the -q layout
of every driver from R375 on, Linux and Windows): the whole report, one GPU's section
(``-i 0``), a filtered report (``-d MEMORY``: bus id and memory, no name or UUID) or an excerpt
that starts anywhere (at ``GPU 00000000:...``, at ``Attached GPUs``, at ``Product Name``). What
a part does not show stays unknown and is said: a GPU without UUID gets the placeholder and a
note, one without its section header or ``Bus Id`` gets no bus id and a note. The GPU's place in
the report is its NVML index (-q prints GPUs in NVML order and no index).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from rankmap.inventory.normalise import PasteLine
from rankmap.inventory.smi_common import BUS, UNKNOWN_UUID_PREFIX, bus_id, leading_int, shown_uuid
from rankmap.inventory.smi_hosts import Listing, name_from_paste
from rankmap.model import Gpu, MigDevice

FORM = "nvidia-smi -q"
_BANNER = re.compile(r"=+ ?NVSMI LOG ?=+")
_SECTION = re.compile(rf"^\s*GPU ({BUS})\s*$")
_KEY_VALUE = re.compile(r"^(\s*)(\S[^:]{0,60}?)\s+:\s?(.*)$")
_GPU_KEYS = frozenset({"product name", "gpu uuid", "minor number", "bus id", "product brand"})
_MIG_KEYS = {"index": "index", "gpu instance id": "gi", "compute instance id": "ci"}


@dataclass
class _Gpu:
    bus: str | None = None
    values: dict[str, str] = field(default_factory=dict)
    migs: list[dict[str, str]] = field(default_factory=list)


@dataclass
class _State:
    listing: Listing
    gpus: list[_Gpu] = field(default_factory=list)
    header: str = ""
    mig_indent: int | None = None
    attached: int | None = None


def looks_like_q(lines: list[PasteLine]) -> bool:
    keys = {m.group(2).lower() for x in lines if ":" in x.text and (m := _KEY_VALUE.match(x.text))}
    return any(_BANNER.search(x.text) or _SECTION.match(x.text) for x in lines) or (
        "product name" in keys and bool(keys & {"gpu uuid", "bus id"})
    )


def read_q(lines: list[PasteLine]) -> list[Listing]:
    """Every -q report in the paste, one listing each."""
    states: list[_State] = []
    state: _State | None = None
    for pos, line in enumerate(lines):
        text = line.text
        starts = _BANNER.search(text) is not None or text.strip().startswith("Attached GPUs")
        if state is None or (starts and state.gpus):
            floor = states[-1].listing.first_line + 1 if states else 0
            listing = Listing(FORM, first_line=pos, hostname=name_from_paste(lines, pos, floor))
            state = _State(listing)
            states.append(state)
        section = _SECTION.match(text)
        if section:
            state.gpus.append(_Gpu(bus=section.group(1)))
            state.header, state.mig_indent = "", None
            continue
        pair = _KEY_VALUE.match(text)
        if pair is None:
            _header(state, text)
            continue
        _value(state, len(pair.group(1)), pair.group(2).strip().lower(), pair.group(3).strip())
    return [_finish(s) for s in states if s.gpus]


def _header(state: _State, text: str) -> None:
    title = text.strip()
    if not title or not re.fullmatch(r"[A-Za-z][\w ./()-]{0,60}", title):
        return
    indent = len(text) - len(text.lstrip())
    if state.mig_indent is not None and indent <= state.mig_indent and title != "MIG Device":
        state.mig_indent = None
    if title == "MIG Device" and state.gpus:
        state.gpus[-1].migs.append({})
        state.mig_indent = indent
    state.header = title.lower()


def _value(state: _State, indent: int, key: str, value: str) -> None:
    if state.mig_indent is not None and indent <= state.mig_indent:
        state.mig_indent = None
    if key == "attached gpus":
        state.attached = leading_int(value)
    elif key == "driver version":
        state.listing.driver_version = value or None
    elif key == "cuda version":
        state.listing.cuda_driver_version = value if value not in ("", "N/A") else None
    if key in _GPU_KEYS and not state.gpus:
        state.gpus.append(_Gpu())  # an excerpt that starts inside a GPU's section
    if not state.gpus:
        return
    gpu = state.gpus[-1]
    if state.mig_indent is not None and gpu.migs:
        if key in _MIG_KEYS and _MIG_KEYS[key] not in gpu.migs[-1]:
            gpu.migs[-1][_MIG_KEYS[key]] = value
        elif key == "total" and state.header == "fb memory usage":
            gpu.migs[-1].setdefault("memory", value)
        return
    if key == "current" and state.header == "mig mode":
        gpu.values.setdefault("mig", value)
    elif key == "total" and state.header == "fb memory usage":
        gpu.values.setdefault("memory", value)
    elif key in _GPU_KEYS:
        gpu.values.setdefault(key, value)


def _finish(state: _State) -> Listing:
    gpus = [_gpu(index, raw) for index, raw in enumerate(state.gpus)]
    shown = len(gpus)
    if state.attached is not None and state.attached > shown and gpus:
        last = gpus[-1]
        note = (
            f"nvidia-smi reports {state.attached} attached GPUs; the paste shows {shown} "
            "(cut, or one GPU chosen with -i)"
        )
        gpus[-1] = replace(last, errors=(*last.errors, note))
    state.listing.gpus = gpus
    return state.listing


def _gpu(index: int, raw: _Gpu) -> Gpu:
    values = raw.values
    uuid, notes = shown_uuid(values.get("gpu uuid"), index, "-q excerpt without GPU UUID")
    bus = bus_id(raw.bus) or bus_id(values.get("bus id"))
    if bus is None:
        notes.append("the paste does not show this GPU's PCI bus id")
    minor = values.get("minor number", "")
    return Gpu(
        nvml_index=index,
        uuid=uuid,
        pci_bus_id=bus,
        name=values.get("product name") or None,
        memory_mib=leading_int(values.get("memory")),
        mig_mode=values.get("mig", "").lower() == "enabled" or bool(raw.migs),
        mig_devices=tuple(_mig(index, m) for m in raw.migs if "gi" in m or "index" in m),
        minor_number=int(minor) if minor.isdecimal() else None,
        errors=tuple(notes),
    )


def _mig(index: int, raw: dict[str, str]) -> MigDevice:
    gi, ci = _int(raw.get("gi")), _int(raw.get("ci"))
    return MigDevice(
        uuid=f"{UNKNOWN_UUID_PREFIX}gpu{index}-gi{gi}-ci{ci}",
        gi=gi,
        ci=ci,
        index=_int(raw.get("index")),
        memory_mib=leading_int(raw.get("memory")),
    )


def _int(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdecimal() else None
