"""``nvidia-smi -q -x`` XML -> :class:`~rankmap.model.Host` (see :mod:`rankmap.inventory.smi`).

Any DTD version (v10-v13 seen). Parsed with ``xml.etree`` only after rejecting every
``<!ENTITY`` declaration, so entity-expansion bombs and external entities never reach the
parser; the external DTD named by ``<!DOCTYPE ... SYSTEM ...>`` is never fetched by expat.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from rankmap.errors import InputError
from rankmap.inventory.smi_common import (
    UNKNOWN_UUID_PREFIX,
    bus_id,
    clean_text,
    leading_int,
    make_host,
    unknown_uuid,
)
from rankmap.model import Gpu, GpuProcess, Host, MigDevice
from rankmap.numbers import int_or_none, is_digits


def parse_xml(text: str, source: str) -> Host:
    """The ``<nvidia_smi_log>`` in ``text`` (prose around it is ignored) as one host."""
    body = "\n".join(clean_text(text))
    start = body.find("<?xml")
    if start < 0:
        start = body.find("<nvidia_smi_log")
    end = body.rfind("</nvidia_smi_log>")
    if start < 0 or end < 0:
        raise InputError(f"{source}: nvidia-smi XML is truncated (no </nvidia_smi_log>)")
    body = body[start : end + len("</nvidia_smi_log>")]
    if re.search(r"<!ENTITY", body, re.IGNORECASE):
        raise InputError(f"{source}: XML declares entities; refused (not nvidia-smi output)")
    try:
        root = ET.fromstring(body)
    except ET.ParseError as exc:
        raise InputError(f"{source}: malformed nvidia-smi XML ({exc})") from None
    if root.tag != "nvidia_smi_log":
        raise InputError(f"{source}: XML root is <{root.tag}>, not <nvidia_smi_log>")
    gpus = [_xml_gpu(el, pos, source) for pos, el in enumerate(root.findall("gpu"))]
    return make_host(
        gpus,
        source,
        "nvidia-smi -q -x",
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
    return int_or_none(value) if value is not None and is_digits(value) else None


def _xml_gpu(el: ET.Element, pos: int, source: str) -> Gpu:
    uuid = _xt(el, "uuid")
    bus = bus_id(el.get("id")) or bus_id(_xt(el, "pci/pci_bus_id"))
    if uuid is None and bus is None:
        raise InputError(f"{source}: <gpu> number {pos} has neither a uuid nor a bus id")
    # NOTE: the XML order is taken as the NVML index order (unverified that it is guaranteed;
    # reference/nvidia_smi_formats.md §5). nvidia-smi prints GPUs in PCI order.
    errors = [] if uuid else ["nvidia-smi XML gave no UUID"]
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
        if (_xt(p, "pid") or "").isdigit()
    )
    return Gpu(
        nvml_index=pos,
        uuid=uuid or unknown_uuid(pos),
        pci_bus_id=bus,
        name=_xt(el, "product_name"),
        memory_mib=leading_int(_xt(el, "fb_memory_usage/total")),
        mig_mode=(_xt(el, "mig_mode/current_mig") or "").lower() == "enabled",
        mig_devices=mig_devices,
        minor_number=_xint(el, "minor_number"),
        processes=procs,
        errors=tuple(errors),
    )
