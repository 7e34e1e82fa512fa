"""``nvidia-smi -q -x`` XML -> listings (reference/nvidia_smi_formats.md §5).

Any DTD version (v10-v13 seen), one listing per ``<nvidia_smi_log>`` in the paste. Parsed with
``xml.etree`` only after rejecting every ``<!ENTITY`` declaration, so entity-expansion bombs and
external entities never reach the parser; the external DTD named by ``<!DOCTYPE ... SYSTEM ...>``
is never fetched by expat.

A log cut off before ``</nvidia_smi_log>`` (the usual pasted excerpt) is closed where it stops:
every element still open is closed, the text after the last complete tag is dropped, and the GPU
that was cut says so (what it shows is kept; nothing after the cut is guessed).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import replace

from rankmap.errors import InputError
from rankmap.inventory.normalise import PasteLine
from rankmap.inventory.smi_common import (
    UNKNOWN_UUID_PREFIX,
    bus_id,
    leading_int,
    shown_uuid,
)
from rankmap.inventory.smi_hosts import Listing
from rankmap.model import Gpu, GpuProcess, MigDevice

FORM = "nvidia-smi -q -x"
_ROOT_OPEN = "<nvidia_smi_log"
_ROOT_CLOSE = "</nvidia_smi_log>"
_TAG = re.compile(r"<(/?)([A-Za-z_][\w.:-]{0,80})(?![\w.:-])[^<>]{0,2000}>")


def looks_like_xml(lines: list[PasteLine]) -> bool:
    return any(_ROOT_OPEN in x.text for x in lines)


def read_xml(lines: list[PasteLine], source: str) -> list[Listing]:
    """Every ``<nvidia_smi_log>`` of the paste; ``InputError`` for XML that is not its output."""
    text = "\n".join(x.text for x in lines)
    if re.search(r"<!ENTITY", text, re.IGNORECASE):
        raise InputError(f"{source}: XML declares entities; refused (not nvidia-smi output)")
    listings = []
    start = text.find(_ROOT_OPEN)
    while start >= 0:
        nxt = text.find(_ROOT_OPEN, start + 1)
        end = text.find(_ROOT_CLOSE, start, nxt if nxt >= 0 else len(text))
        if end >= 0:
            body, cut_at = text[start : end + len(_ROOT_CLOSE)], None
        else:
            body, cut_at = _close_cut(text[start : nxt if nxt >= 0 else len(text)])
        listings.append(_listing(body, cut_at, source))
        listings[-1].first_line = text.count("\n", 0, start)
        start = nxt
    return listings


def _close_cut(body: str) -> tuple[str, str]:
    """``(closed xml, last complete tag)``: a cut log with every open element closed."""
    last = body.rfind(">")
    body = body[: last + 1]
    stack: list[str] = []
    last_tag = ""
    for match in _TAG.finditer(body):
        if match.group(0).endswith("/>"):
            continue
        name = match.group(2)
        last_tag = name
        if not match.group(1):
            stack.append(name)
        elif name in stack:
            while stack and stack.pop() != name:
                pass
    return body + "".join(f"</{name}>" for name in reversed(stack)), last_tag


def _listing(body: str, cut_at: str | None, source: str) -> Listing:
    try:
        root = ET.fromstring(body)
    except ET.ParseError as exc:
        raise InputError(f"{source}: malformed nvidia-smi XML ({exc})") from None
    if root.tag != "nvidia_smi_log":
        raise InputError(f"{source}: XML root is <{root.tag}>, not <nvidia_smi_log>")
    gpus = [_xml_gpu(el, pos, source) for pos, el in enumerate(root.findall("gpu"))]
    attached = leading_int(_xt(root, "attached_gpus"))
    if cut_at is not None and gpus:
        note = f"the paste cuts the XML after <{cut_at}>; nothing after it is shown"
        if attached is not None and attached > len(gpus):
            note += f" (nvidia-smi reports {attached} GPUs, the paste shows {len(gpus)})"
        gpus[-1] = replace(gpus[-1], errors=(*gpus[-1].errors, note))
    return Listing(
        FORM,
        gpus=gpus,
        driver_version=_xt(root, "driver_version"),
        cuda_driver_version=_xt(root, "cuda_version"),
    )


def _xt(el: ET.Element, path: str) -> str | None:
    found = el.find(path)
    if found is None or found.text is None:
        return None
    value = found.text.strip()
    return None if value in ("", "N/A", "None") else value


def _xint(el: ET.Element, path: str) -> int | None:
    value = _xt(el, path)
    return int(value) if value is not None and value.isdecimal() else None


def _xml_gpu(el: ET.Element, pos: int, source: str) -> Gpu:
    raw_uuid = _xt(el, "uuid")
    bus = bus_id(el.get("id")) or bus_id(_xt(el, "pci/pci_bus_id"))
    if raw_uuid is None and bus is None:
        raise InputError(f"{source}: <gpu> number {pos} has neither a uuid nor a bus id")
    # NOTE: the XML order is taken as the NVML index order (unverified that it is guaranteed;
    # reference/nvidia_smi_formats.md §5). nvidia-smi prints GPUs in PCI order.
    uuid, errors = shown_uuid(raw_uuid, pos, "nvidia-smi XML gave no UUID")
    mig_devices = tuple(
        MigDevice(
            uuid=_xt(m, "uuid")
            or f"{UNKNOWN_UUID_PREFIX}gpu{pos}-gi{_xt(m, 'gpu_instance_id')}"
            f"-ci{_xt(m, 'compute_instance_id')}",
            gi=_xint(m, "gpu_instance_id"),
            ci=_xint(m, "compute_instance_id"),
            index=_xint(m, "index"),
            memory_mib=leading_int(_xt(m, "fb_memory_usage/total")),
        )
        for m in el.findall("mig_devices/mig_device")
    )
    if mig_devices and not any(m.find("uuid") is not None for m in el.iter("mig_device")):
        errors.append("nvidia-smi XML gives no MIG UUIDs; use nvidia-smi -L for them")
    procs = tuple(
        GpuProcess(
            pid=int(_xt(p, "pid") or 0),
            name=_xt(p, "process_name"),
            used_memory_mib=leading_int(_xt(p, "used_memory")),
        )
        for p in el.findall("processes/process_info")
        if (_xt(p, "pid") or "").isdecimal()
    )
    return Gpu(
        nvml_index=pos,
        uuid=uuid,
        pci_bus_id=bus,
        name=_xt(el, "product_name"),
        memory_mib=leading_int(_xt(el, "fb_memory_usage/total")),
        mig_mode=(_xt(el, "mig_mode/current_mig") or "").lower() == "enabled",
        mig_devices=mig_devices,
        minor_number=_xint(el, "minor_number"),
        processes=procs if el.find("processes") is not None else None,
        errors=tuple(errors),
    )
