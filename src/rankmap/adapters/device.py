"""The physical GPU behind this rank's CUDA index: from CUDA, NVML, or a profile standing in.

Which index (reference/pytorch_nccl.md §1): ``verify(device=...)``; else the current device when
CUDA is already initialised (``torch.cuda.is_initialized()`` does not initialise it); else the
torchrun convention ``cuda:LOCAL_RANK``.

Sources, best first:
* CUDA itself (``torch.cuda.get_device_properties``: ``uuid``, ``pci_domain_id/pci_bus_id/
  pci_device_id`` where this torch has them - reference/cuda_devices.md §5.2), cross-checked with
  NVML. Used when CUDA is already initialised, or by the CLI probe (its own process).
* NVML + CUDA_VISIBLE_DEVICES through :func:`rankmap.visibility.resolve_visible` - never touches
  CUDA, so ``verify()`` does not initialise CUDA behind the training script's back.
* A machine profile (``machine=`` / ``RANKMAP_MACHINE``) standing in for both.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rankmap.errors import InputError
from rankmap.model import Host, HostIdentity
from rankmap.pci import try_normalize_bus_id
from rankmap.probe.launch_env import RankEnv
from rankmap.visibility import VisibleView, resolve_visible


@dataclass(frozen=True)
class DeviceFacts:
    """What :func:`resolve_device` found about this rank's device and machine."""

    cuda_index: int | None
    selected_by: str
    uuid: str | None = None
    pci_bus_id: str | None = None
    nvml_index: int | None = None
    mig_parent_uuid: str | None = None
    gpu_name: str | None = None
    error: str | None = None
    source: str = "none"
    notes: tuple[str, ...] = ()
    visible_uuids: tuple[str, ...] | None = None
    versions: Mapping[str, str | None] = field(default_factory=dict)
    gpus: tuple[Mapping[str, Any], ...] | None = None
    problems: tuple[str, ...] = ()
    identity: HostIdentity | None = None  # set when a profile's identity stands in
    identity_source: str = "system"


def ordinal_error(index: int, count: int) -> str:
    """The error a rank asking for ``cuda:index`` with ``count`` visible devices meets."""
    return (
        f"invalid device ordinal: cuda:{index} requested but {count} CUDA device(s) visible "
        f"(valid: {('cuda:0' if count == 1 else f'cuda:0-{count - 1}') if count else 'none'})"
    )


def _torch() -> Any:
    if importlib.util.find_spec("torch") is None:
        return None
    import torch

    return torch


# torch.device's type names (torch/csrc/Device.cpp's parser): anything else is a typo
_DEVICE_TYPES = frozenset(
    {"cpu", "cuda", "mps", "xpu", "xla", "meta", "hpu", "mtia", "privateuseone", "ipu", "ve",
     "lazy", "vulkan", "opengl", "opencl", "mkldnn", "ideep", "fpga", "maia", "hip"}
)  # fmt: skip


def choose_index(
    device: Any, renv: RankEnv, torch: Any, *, profile: bool
) -> tuple[int | None, str]:
    """(cuda index, why) for this rank; ``(None, "cpu")`` when the caller says CPU."""
    if device is not None:
        wrong = InputError(f"device={device!r}: expected a CUDA index, 'cuda:N' or a torch.device")
        if isinstance(device, bool):
            raise wrong
        if isinstance(device, int):
            return device, "argument"
        if not isinstance(device, str) and not hasattr(device, "type"):
            raise wrong  # 1.7, [0]: a typo must not switch the check off (review 19)
        kind = getattr(device, "type", None)
        index = getattr(device, "index", None)
        if isinstance(device, str):
            kind, _, rest = device.strip().partition(":")
            if kind not in _DEVICE_TYPES:
                raise wrong
            if rest and not rest.strip().isdecimal():
                raise InputError(f"device={device!r}: expected 'cuda:N'")
            index = int(rest) if rest else None
        if kind != "cuda":
            return None, "cpu"
        if index is not None:
            return int(index), "argument"
    if not profile and torch is not None and torch.cuda.is_initialized():
        return int(torch.cuda.current_device()), "current_device"
    if renv.local_rank is not None and renv.local_rank >= 0:  # -1: "not distributed" (HF)
        return renv.local_rank, "local_rank"
    return 0, "default"


def _versions(torch: Any, host: Host | None) -> dict[str, str | None]:
    out: dict[str, str | None] = {"torch": None, "cuda": None, "nccl": None}
    if torch is not None:
        out["torch"] = str(torch.__version__)
        out["cuda"] = torch.version.cuda
        try:
            raw = torch.cuda.nccl.version()  # needs a CUDA build; no CUDA initialisation
            out["nccl"] = ".".join(str(p) for p in raw)
        except (AttributeError, RuntimeError):
            out["nccl"] = None
    if host is not None:
        out["driver"] = host.driver_version
        out["cuda_driver"] = host.cuda_driver_version
    return out


def _inventory(host: Host) -> tuple[Mapping[str, Any], ...]:
    keep = ("nvml_index", "uuid", "pci_bus_id", "name", "memory_mib", "mig_mode", "mig_devices")
    return tuple({k: v for k, v in g.to_dict().items() if k in keep} for g in host.gpus)


def pick_host(hosts: list[Host], hostname: str | None, node_rank: int | None) -> Host:
    """The profile host for this rank: same hostname, else by node rank, else the first."""
    for host in hosts:
        if hostname and host.hostname == hostname:
            return host
    if node_rank is not None and 0 <= node_rank < len(hosts):
        return hosts[node_rank]
    return hosts[0]


def _from_view(view: VisibleView, host: Host, index: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {"visible_uuids": tuple(d.uuid for d in view.devices)}
    if index is None:
        return out
    dev = view.by_cuda_index(index)
    if dev is None:
        out["error"] = ordinal_error(index, len(view.devices))
        return out
    gpu = host.gpu_by_uuid(dev.physical_uuid)
    out.update(
        uuid=dev.uuid,
        pci_bus_id=dev.pci_bus_id,
        nvml_index=dev.nvml_index,
        mig_parent_uuid=dev.mig.parent_uuid if dev.mig else None,
        gpu_name=gpu.name if gpu else None,
    )
    return out


def _profile_identity(host: Host, real: HostIdentity) -> HostIdentity | None:
    ident = host.identity
    if not (ident.boot_id or ident.machine_id):
        return None  # the profile records no identity: the real machine's stands
    return HostIdentity(
        hostname=ident.hostname or host.hostname,
        boot_id=ident.boot_id,
        machine_id=ident.machine_id,
        nccl_hostid=real.nccl_hostid,
        container=ident.container or real.container,
        container_id=ident.container_id or real.container_id,
    )


def _nvml_host(environ: Mapping[str, str]) -> tuple[Host | None, list[str]]:
    from rankmap.adapters import nvml

    host, findings = nvml.collect_host(environ)
    return host, [f"{f.code}: {f.title}" for f in findings]


def _cuda_facts(torch: Any, index: int | None) -> dict[str, Any]:
    """Ask CUDA (initialises it when not already). Empty when CUDA has no device."""
    count = int(torch.cuda.device_count())
    if count == 0:
        return {}
    out: dict[str, Any] = {"count": count}
    uuids = []
    for i in range(count):
        props = torch.cuda.get_device_properties(i)
        uuid = getattr(props, "uuid", None)
        text = str(uuid) if uuid is not None else None
        if text and not text.startswith(("GPU-", "MIG-")):
            text = f"GPU-{text}"  # torch prints the CUDA UUID without the prefix
        uuids.append(text)
        if i == index:
            out["uuid"] = text
            out["gpu_name"] = str(props.name)
            parts = [
                getattr(props, a, None) for a in ("pci_domain_id", "pci_bus_id", "pci_device_id")
            ]
            if all(isinstance(p, int) for p in parts):
                out["pci_bus_id"] = try_normalize_bus_id(
                    f"{parts[0]:04x}:{parts[1]:02x}:{parts[2]:02x}.0"
                )
    if all(uuids):
        out["visible_uuids"] = tuple(u for u in uuids if u)
    if index is not None and index >= count:
        out["error"] = ordinal_error(index, count)
    return out


def _merge_cuda_nvml(
    cuda: dict[str, Any], host: Host | None, nvml: dict[str, Any], index: int | None
) -> tuple[dict[str, Any], list[str]]:
    """CUDA is the truth for the device; NVML adds the nvidia-smi index and MIG parent."""
    notes: list[str] = []
    out = dict(cuda)
    if host is not None:
        gpu = host.gpu_by_bus_id(cuda["pci_bus_id"]) if cuda.get("pci_bus_id") else None
        gpu = gpu or (host.gpu_by_uuid(cuda["uuid"]) if cuda.get("uuid") else None)
        if gpu is not None:
            out["nvml_index"] = gpu.nvml_index
            out.setdefault("pci_bus_id", gpu.pci_bus_id)
            if (cuda.get("uuid") or "").startswith("MIG-"):
                out["mig_parent_uuid"] = gpu.uuid
        if nvml.get("mig_parent_uuid") and nvml.get("pci_bus_id") == out.get("pci_bus_id"):
            # NOTE: which UUID torch's device properties give for a MIG instance (the MIG
            # instance's, without the "MIG-" prefix?) is unverified (cuda_devices.md §5.2); on the
            # same bus id NVML's MIG identity is taken.
            out["uuid"] = nvml["uuid"]
            out["mig_parent_uuid"] = nvml["mig_parent_uuid"]
        for key in ("uuid", "pci_bus_id"):
            if nvml.get(key) and out.get(key) and nvml[key] != out[key]:
                notes.append(
                    f"cuda:{index}: CUDA reports {key} {out[key]} but NVML with "
                    f"CUDA_VISIBLE_DEVICES/CUDA_DEVICE_ORDER predicts {nvml[key]}"
                )
    return out, notes


def resolve_device(
    environ: Mapping[str, str],
    renv: RankEnv,
    identity: HostIdentity,
    *,
    device: Any = None,
    machine: str | None = None,
    allow_cuda_init: bool = False,
) -> DeviceFacts:
    """Find this rank's device. ``machine``: profile spec standing in for NVML and CUDA."""
    torch = _torch()
    index, selected_by = choose_index(device, renv, torch, profile=machine is not None)
    if machine is not None:
        from rankmap.adapters.files import LocalFiles
        from rankmap.inventory import load_machine

        chosen = pick_host(load_machine(machine, LocalFiles()), identity.hostname, renv.node_rank)
        facts = _from_view(resolve_visible(chosen, environ), chosen, index)
        ident = _profile_identity(chosen, identity)
        return DeviceFacts(
            cuda_index=index,
            selected_by=selected_by,
            source=f"profile:{machine}",
            versions=_versions(torch, chosen),
            gpus=_inventory(chosen),
            identity=ident,
            identity_source=f"profile:{machine}" if ident else "system",
            **facts,
        )
    host, problems = _nvml_host(environ)
    nvml = _from_view(resolve_visible(host, environ), host, index) if host else {}
    cuda: dict[str, Any] = {}
    if torch is not None and (torch.cuda.is_initialized() or allow_cuda_init):
        try:
            cuda = _cuda_facts(torch, index)
        except Exception as exc:  # noqa: BLE001 - a driver failure is a finding, not a crash
            problems.append(f"CUDA: {type(exc).__name__}: {exc}")
    notes: list[str] = []
    if cuda:
        facts, notes = _merge_cuda_nvml(cuda, host, nvml, index)
        source = "cuda+nvml" if host else "cuda"
        facts.pop("count", None)
    elif nvml:
        facts, source = nvml, "nvml"
    else:
        facts, source = {}, "none"
        count = int(torch.cuda.device_count()) if torch is not None else 0
        if count and index is not None and index >= count:
            facts["error"] = ordinal_error(index, count)
        if not count:
            problems.append("no GPU information: NVML unavailable and CUDA sees no device")
    return DeviceFacts(
        cuda_index=index,
        selected_by=selected_by,
        source=source,
        notes=tuple(notes),
        versions=_versions(torch, host),
        gpus=_inventory(host) if host else None,
        problems=tuple(problems),
        **facts,
    )
