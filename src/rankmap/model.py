"""The machine model and report values: frozen dataclasses, no I/O.

Names follow the field: ``nvml_index`` (nvidia-smi's index, PCI order), ``cuda_index`` (the
ordinal inside one process, after CUDA_VISIBLE_DEVICES), ``uuid``, ``pci_bus_id`` (canonical
``0000:4F:00.0``, see :mod:`rankmap.pci`), ``rank``, ``local_rank``.
"""

from __future__ import annotations

import uuid as _uuid
from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class MigDevice:
    """One MIG compute instance of a physical GPU."""

    uuid: str
    gi: int | None = None
    ci: int | None = None
    index: int | None = None  # MIG device index within its parent (nvidia-smi -L "Device N")
    profile: str | None = None  # e.g. "1g.10gb"
    memory_mib: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Contract shape: ``{"uuid", "gi", "ci"}`` plus optional extras."""
        out: dict[str, Any] = {"uuid": self.uuid, "gi": self.gi, "ci": self.ci}
        if self.index is not None:
            out["index"] = self.index
        if self.profile is not None:
            out["profile"] = self.profile
        if self.memory_mib is not None:
            out["memory_mib"] = self.memory_mib
        return out


@dataclass(frozen=True)
class GpuProcess:
    """A process already holding memory on a GPU."""

    pid: int
    name: str | None = None
    used_memory_mib: int | None = None
    kind: str | None = None  # nvidia-smi's Type: C compute, G graphics (a display), C+G, M, M+C

    @property
    def graphics_only(self) -> bool:
        """A display process (Xorg, a desktop shell): no process of a CUDA job."""
        return self.kind == "G"

    def to_dict(self) -> dict[str, Any]:
        return {"pid": self.pid, "name": self.name, "used_memory_mib": self.used_memory_mib}


@dataclass(frozen=True)
class Gpu:
    """One physical GPU as NVML (nvidia-smi) numbers it."""

    nvml_index: int
    uuid: str
    pci_bus_id: str | None  # canonical, see rankmap.pci
    name: str | None = None
    memory_mib: int | None = None
    compute_capability: str | None = None  # "9.0"
    mig_mode: bool = False
    mig_devices: tuple[MigDevice, ...] = ()
    minor_number: int | None = None
    processes: tuple[GpuProcess, ...] | None = None  # None: unknown
    errors: tuple[str, ...] = ()  # why fields are missing (NVML NotSupported, NoPermission...)

    def to_dict(self) -> dict[str, Any]:
        """Contract ``inventory.hosts[].gpus[]`` shape."""
        out: dict[str, Any] = {
            "nvml_index": self.nvml_index,
            "uuid": self.uuid,
            "pci_bus_id": self.pci_bus_id,
            "name": self.name,
            "memory_mib": self.memory_mib,
            "mig_mode": self.mig_mode,
            "mig_devices": [m.to_dict() for m in self.mig_devices],
        }
        if self.compute_capability is not None:
            out["compute_capability"] = self.compute_capability
        if self.minor_number is not None:
            out["minor_number"] = self.minor_number
        if self.processes is not None:
            out["processes"] = [p.to_dict() for p in self.processes]
        if self.errors:
            out["errors"] = list(self.errors)
        return out


@dataclass(frozen=True)
class HostIdentity:
    """What makes a machine one machine - for NCCL and for people.

    NCCL (2.5.6 - 2.30.7) hashes ``hostname + boot_id``, or only ``NCCL_HOSTID`` when that is set
    (reference/nccl.md (b)).
    """

    hostname: str | None = None
    boot_id: str | None = None
    machine_id: str | None = None
    nccl_hostid: str | None = None
    container: str | None = None  # "docker", "kubernetes", "podman", "containerd", "lxc", ...
    container_id: str | None = None
    container_evidence: tuple[str, ...] = ()

    def nccl_host_hash_input(self) -> str | None:
        """The string NCCL hashes to decide "same host", or ``None`` when unknown."""
        if self.nccl_hostid:
            return self.nccl_hostid
        if self.hostname is None:
            return None
        return f"{self.hostname}{self.boot_id or ''}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "hostname": self.hostname,
            "boot_id": self.boot_id,
            "machine_id": self.machine_id,
            "nccl_hostid": self.nccl_hostid,
            "nccl_host_hash_input": self.nccl_host_hash_input(),
            "container": self.container,
            "container_id": self.container_id,
            "container_evidence": list(self.container_evidence),
        }


@dataclass(frozen=True)
class Host:
    """One machine (or one container's view of it) and its GPUs in NVML order."""

    hostname: str
    gpus: tuple[Gpu, ...]
    identity: HostIdentity = field(default_factory=HostIdentity)
    driver_version: str | None = None
    cuda_driver_version: str | None = None  # the CUDA version the driver supports, "12.4"
    nvml_version: str | None = None
    # CUDA's FASTEST_FIRST enumeration as NVML indices, when it was recorded on the machine.
    cuda_fastest_first: tuple[int, ...] | None = None
    # "host": NVML saw the whole machine; "container": only what the runtime injected.
    view: str = "host"
    source: str = ""  # where this came from: "nvml", "profile:dgx-h100", "nvidia-smi -L", ...
    description: str | None = None
    # GPU/NIC/CPU topology (the `topology` key of a profile; see rankmap.topology). JSON-ready.
    topology: Any = None

    def gpu_by_uuid(self, uuid: str) -> Gpu | None:
        """The GPU with this ``GPU-`` UUID, or the parent of this ``MIG-`` UUID."""
        for gpu in self.gpus:
            if gpu.uuid == uuid or any(m.uuid == uuid for m in gpu.mig_devices):
                return gpu
        return None

    def gpu_by_bus_id(self, pci_bus_id: str) -> Gpu | None:
        """The GPU at this canonical bus id."""
        for gpu in self.gpus:
            if gpu.pci_bus_id == pci_bus_id:
                return gpu
        return None

    def to_dict(self) -> dict[str, Any]:
        """Contract ``inventory.hosts[]`` shape (extra keys are additions)."""
        out: dict[str, Any] = {
            "hostname": self.hostname,
            "gpus": [g.to_dict() for g in self.gpus],
            "driver_version": self.driver_version,
            "cuda_driver_version": self.cuda_driver_version,
            "identity": self.identity.to_dict(),
            "view": self.view,
            "source": self.source,
        }
        if self.cuda_fastest_first is not None:
            out["cuda_fastest_first"] = list(self.cuda_fastest_first)
        if self.description:
            out["description"] = self.description
        if self.topology is not None:
            out["topology"] = self.topology
        return out


@dataclass(frozen=True)
class Inventory:
    """All machines known to one report."""

    hosts: tuple[Host, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"hosts": [h.to_dict() for h in self.hosts]}


@dataclass(frozen=True)
class MigRef:
    """A MIG instance as seen by a process, with its parent GPU."""

    uuid: str
    parent_uuid: str
    gi: int | None = None
    ci: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"uuid": self.uuid, "parent_uuid": self.parent_uuid, "gi": self.gi, "ci": self.ci}


@dataclass(frozen=True)
class VisibleDevice:
    """One CUDA device as a process sees it: ``cuda:<cuda_index>`` is this physical GPU."""

    cuda_index: int
    nvml_index: int
    uuid: str  # GPU UUID, or the MIG UUID when ``mig`` is set
    pci_bus_id: str | None
    mig: MigRef | None = None

    @property
    def physical_uuid(self) -> str:
        """UUID of the physical GPU (the MIG parent's when this is a MIG instance)."""
        return self.mig.parent_uuid if self.mig else self.uuid

    def to_dict(self) -> dict[str, Any]:
        return {
            "cuda_index": self.cuda_index,
            "nvml_index": self.nvml_index,
            "uuid": self.uuid,
            "pci_bus_id": self.pci_bus_id,
            "mig": self.mig.to_dict() if self.mig else None,
        }


@dataclass(frozen=True)
class Placement:
    """Where one rank runs: node, CUDA index and the physical GPU behind it (``None``: unknown)."""

    rank: int
    local_rank: int | None = None
    node: str | None = None
    cuda_index: int | None = None
    nvml_index: int | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    mig: MigRef | None = None
    node_rank: int | None = None
    error: str | None = None  # e.g. "invalid device ordinal" when cuda_index is out of range
    source: str | None = None  # "simulated", "probe", "nccl-log", ...

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rank": self.rank,
            "local_rank": self.local_rank,
            "node": self.node,
            "cuda_index": self.cuda_index,
            "nvml_index": self.nvml_index,
            "uuid": self.uuid,
            "pci_bus_id": self.pci_bus_id,
            "mig": self.mig.to_dict() if self.mig else None,
        }
        if self.node_rank is not None:
            out["node_rank"] = self.node_rank
        if self.error is not None:
            out["error"] = self.error
        if self.source is not None:
            out["source"] = self.source
        return out


def clone_host(host: Host, i: int) -> Host:
    """Node ``i`` built from ``host``: same GPUs, its own hostname and boot_id (node 0 unchanged)."""
    if i == 0:
        return host
    name = f"{host.hostname}-{i}" if not host.hostname[-1:].isdecimal() else _bump(host.hostname, i)
    boot = str(_uuid.uuid5(_uuid.NAMESPACE_OID, f"{host.identity.boot_id}/{i}"))
    ident = replace(host.identity, hostname=name, boot_id=boot, machine_id=None)
    return replace(host, hostname=name, identity=ident)


def _bump(hostname: str, i: int) -> str:
    """``dgx-h100-01`` -> ``dgx-h100-02`` for i=1 (keeps the digit width)."""
    digits = len(hostname) - len(hostname.rstrip("0123456789"))
    stem, num = hostname[:-digits], int(hostname[-digits:])
    return f"{stem}{num + i:0{digits}d}"
