"""Profile JSON <-> :class:`~rankmap.model.Host`.

A profile is what ``rankmap doctor --save PATH`` writes (``{"schema": "rankmap-profile/1",
"hosts": [...]}``); the ``hosts`` entries use the contract's ``inventory.hosts[]`` shape, so a
``rankmap doctor --json`` report (which carries ``inventory``) loads as a profile too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rankmap.errors import InputError
from rankmap.model import Gpu, GpuProcess, Host, HostIdentity, Inventory, MigDevice
from rankmap.numbers import loads_json
from rankmap.pci import try_normalize_bus_id

PROFILE_SCHEMA = "rankmap-profile/1"


def dump_profile(
    inventory: Inventory, *, name: str | None = None, description: str | None = None
) -> str:
    """Serialise an inventory as profile JSON (what ``doctor --save`` writes)."""
    doc: dict[str, Any] = {"schema": PROFILE_SCHEMA}
    if name:
        doc["name"] = name
    if description:
        doc["description"] = description
    doc["hosts"] = [h.to_dict() for h in inventory.hosts]
    return json.dumps(doc, indent=2) + "\n"


def parse_profile_json(text: str, *, source: str) -> list[Host]:
    """Profile JSON, a doctor report, or a bare ``{"hosts": [...]}`` -> hosts."""
    try:
        doc = loads_json(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{source}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    except ValueError as exc:  # a number too large for a machine description
        raise InputError(f"{source}: {exc}") from None
    except RecursionError:
        raise InputError(f"{source}: JSON nested too deeply (not a machine profile)") from None
    if not isinstance(doc, dict):
        raise InputError(f"{source}: a machine profile must be a JSON object")
    hosts_doc: Any = doc.get("hosts")
    if hosts_doc is None and isinstance(doc.get("inventory"), dict):
        hosts_doc = doc["inventory"].get("hosts")
    if not isinstance(hosts_doc, list) or not hosts_doc:
        raise InputError(f"{source}: no 'hosts' list found (not a rankmap profile or report)")
    description = doc.get("description") if isinstance(doc.get("description"), str) else None
    return [
        _host(h, source=source, pos=i, description=description) for i, h in enumerate(hosts_doc)
    ]


def _host(doc: Any, *, source: str, pos: int, description: str | None) -> Host:
    where = f"{source}: hosts[{pos}]"
    if not isinstance(doc, Mapping):
        raise InputError(f"{where} is not an object")
    gpus_doc = doc.get("gpus", [])
    if not isinstance(gpus_doc, list):
        raise InputError(f"{where}.gpus is not a list")
    ident = doc.get("identity") if isinstance(doc.get("identity"), Mapping) else {}
    assert isinstance(ident, Mapping)
    hostname = _str(doc.get("hostname")) or _str(ident.get("hostname")) or f"host{pos}"
    identity = HostIdentity(
        hostname=hostname,
        boot_id=_str(ident.get("boot_id", doc.get("boot_id"))),
        machine_id=_str(ident.get("machine_id", doc.get("machine_id"))),
        nccl_hostid=_str(ident.get("nccl_hostid")),
        container=_str(ident.get("container")),
        container_id=_str(ident.get("container_id")),
        container_evidence=tuple(str(e) for e in ident.get("container_evidence") or ()),
    )
    order = doc.get("cuda_fastest_first")
    return Host(
        hostname=hostname,
        gpus=tuple(_gpu(g, where=f"{where}.gpus[{i}]") for i, g in enumerate(gpus_doc)),
        identity=identity,
        driver_version=_str(doc.get("driver_version")),
        cuda_driver_version=_str(doc.get("cuda_driver_version")),
        cuda_fastest_first=_index_list(order, where=f"{where}.cuda_fastest_first"),
        view=_str(doc.get("view")) or "host",
        source=_str(doc.get("source")) or source,
        description=_str(doc.get("description")) or description,
        topology=doc.get("topology"),
    )


def _index_list(value: Any, *, where: str) -> tuple[int, ...] | None:
    """A list of NVML indices, or ``None`` when absent; ``InputError`` for anything else."""
    if not isinstance(value, list):
        return None
    if not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < 4096 for i in value):
        raise InputError(f"{where} must be a list of GPU indices")
    return tuple(value)


def _gpu(doc: Any, *, where: str) -> Gpu:
    if not isinstance(doc, Mapping):
        raise InputError(f"{where} is not an object")
    try:
        nvml_index = int(doc["nvml_index"])
        uuid = str(doc["uuid"])
    except (KeyError, TypeError, ValueError):
        raise InputError(f"{where} needs an integer 'nvml_index' and a 'uuid'") from None
    raw_bus = doc.get("pci_bus_id")
    bus = try_normalize_bus_id(str(raw_bus)) if raw_bus else None
    if raw_bus and bus is None:
        raise InputError(f"{where}: pci_bus_id {raw_bus!r} is not a PCI bus id")
    procs = doc.get("processes")
    return Gpu(
        nvml_index=nvml_index,
        uuid=uuid,
        pci_bus_id=bus,
        name=_str(doc.get("name")),
        memory_mib=_int(doc.get("memory_mib")),
        compute_capability=_str(doc.get("compute_capability")),
        mig_mode=bool(doc.get("mig_mode", False)),
        mig_devices=tuple(
            MigDevice(
                uuid=str(m["uuid"]),
                gi=_int(m.get("gi")),
                ci=_int(m.get("ci")),
                index=_int(m.get("index")),
                profile=_str(m.get("profile")),
                memory_mib=_int(m.get("memory_mib")),
            )
            for m in doc.get("mig_devices") or ()
            if isinstance(m, Mapping) and "uuid" in m
        ),
        minor_number=_int(doc.get("minor_number")),
        processes=tuple(
            GpuProcess(int(p["pid"]), _str(p.get("name")), _int(p.get("used_memory_mib")))
            for p in procs
            if isinstance(p, Mapping) and "pid" in p
        )
        if isinstance(procs, list)
        else None,
        errors=tuple(str(e) for e in doc.get("errors") or ()),
    )


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def _int(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None
