"""This machine's GPU topology through NVML (the doctor engineer's gateway ``nvml_call``).

Calls (reference/cuda_devices.md §5.1): ``nvmlDeviceGetTopologyCommonAncestor`` (INTERNAL 0,
SINGLE 10, MULTIPLE 20, HOSTBRIDGE 30, NODE 40, SYSTEM 50 -> PIX/PXB/PHB/NODE/SYS),
``nvmlDeviceGetNvLinkState`` per link (0 .. NVML_NVLINK_MAX_LINKS-1, absent links raise),
``nvmlDeviceGetNvLinkRemotePciInfo`` to count the links bonded between two GPUs (``NV#``),
``nvmlDeviceGetNumaNodeId`` and ``nvmlDeviceGetCpuAffinity`` for locality. NVML knows no NICs:
NIC columns come only from a profile or a pasted ``nvidia-smi topo -m``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rankmap.errors import UnavailableError
from rankmap.pci import try_normalize_bus_id
from rankmap.topology import (
    GpuLocality,
    NvLinkInfo,
    PcieInfo,
    Topology,
    format_cpu_list,
)

NvmlCall = Callable[..., Any]
NVLINK_MAX_LINKS = 36  # NVML_NVLINK_MAX_LINKS in nvidia-ml-py 13.615 (cuda_devices.md §5.1)
_ANCESTOR = {0: "PIX", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
# NOTE: INTERNAL (0, two GPUs on one board) is shown as PIX; nvidia-smi's exact word for
# multi-GPU boards is unverified in our references.
CPU_SET_WORDS = 64  # enough 64-bit words for 4096 CPUs


def default_call() -> NvmlCall:
    """The NVML gateway ``rankmap.adapters.nvml.nvml_call``."""
    from rankmap.adapters import nvml

    call: NvmlCall = nvml.nvml_call
    return call


def _try(call: NvmlCall, name: str, *args: Any) -> Any:
    try:
        return call(name, *args)
    except Exception:  # noqa: BLE001 - NvmlError (NotSupported, ...) means "unknown" here
        return None


def _bus_id(call: NvmlCall, handle: Any) -> str | None:
    info = _try(call, "nvmlDeviceGetPciInfo", handle)
    raw = getattr(info, "busId", None) if info is not None else None
    if isinstance(raw, bytes):
        raw = raw.decode("ascii", "replace")
    return try_normalize_bus_id(str(raw)) if raw else None


def _nvlinks(call: NvmlCall, handle: Any) -> tuple[NvLinkInfo | None, list[str | None]]:
    """(link summary, remote bus id per active link)."""
    present = active = 0
    remotes: list[str | None] = []
    for link in range(NVLINK_MAX_LINKS):
        state = _try(call, "nvmlDeviceGetNvLinkState", handle, link)
        if state is None:
            continue
        present += 1
        if int(state) != 1:  # NVML_FEATURE_ENABLED
            continue
        active += 1
        remote = _try(call, "nvmlDeviceGetNvLinkRemotePciInfo", handle, link)
        raw = getattr(remote, "busId", None) if remote is not None else None
        if isinstance(raw, bytes):
            raw = raw.decode("ascii", "replace")
        remotes.append(try_normalize_bus_id(str(raw)) if raw else None)
    if not present:
        return None, []
    version = _try(call, "nvmlDeviceGetNvLinkVersion", handle, 0)
    return NvLinkInfo(int(version) if version is not None else None, present, active), remotes


def _cpu_affinity(call: NvmlCall, handle: Any) -> str | None:
    words = _try(call, "nvmlDeviceGetCpuAffinity", handle, CPU_SET_WORDS)
    if not words:
        return None
    cpus = [
        w * 64 + bit for w, word in enumerate(words) for bit in range(64) if int(word) >> bit & 1
    ]
    return format_cpu_list(cpus) or None


def collect_topology(call: NvmlCall | None = None) -> Topology:
    """The GPU x GPU matrix with NVLink, NUMA and CPU affinity of this machine."""
    call = call or default_call()
    try:
        count = int(call("nvmlDeviceGetCount"))
    except Exception as exc:  # noqa: BLE001 - NvmlError carries the explained reason
        raise UnavailableError(f"NVML is not available: {exc}") from None
    handles = [call("nvmlDeviceGetHandleByIndex", i) for i in range(count)]
    buses = [_bus_id(call, h) for h in handles]
    gpus, remotes = [], []
    for i, handle in enumerate(handles):
        nvlink, remote = _nvlinks(call, handle)
        remotes.append(remote)
        gen = _try(call, "nvmlDeviceGetCurrPcieLinkGeneration", handle)
        width = _try(call, "nvmlDeviceGetCurrPcieLinkWidth", handle)
        numa = _try(call, "nvmlDeviceGetNumaNodeId", handle)
        gpus.append(
            GpuLocality(
                label=f"GPU{i}",
                nvml_index=i,
                pci_bus_id=buses[i],
                cpu_affinity=_cpu_affinity(call, handle),
                numa_node=int(numa) if numa is not None and int(numa) >= 0 else None,
                nvlink=nvlink,
                pcie=PcieInfo(gen, width) if gen is not None or width is not None else None,
            )
        )
    rows = []
    for i in range(count):
        row = []
        for j in range(count):
            row.append("X" if i == j else _link(call, handles, buses, remotes, i, j))
        rows.append(tuple(row))
    labels = tuple(g.label for g in gpus)
    return Topology(labels, tuple(rows), tuple(gpus), (), source="nvml")


def _link(
    call: NvmlCall,
    handles: list[Any],
    buses: list[str | None],
    remotes: list[list[str | None]],
    i: int,
    j: int,
) -> str:
    direct = sum(1 for r in remotes[i] if r is not None and r == buses[j])
    if direct:
        return f"NV{direct}"
    # Through NVSwitch the remote of every link is the switch: count the links on both sides.
    # NOTE: nvidia-smi shows NV# = links of the GPU for NVSwitch systems; the exact rule is
    # unverified in our references.
    known = set(buses)
    if remotes[i] and remotes[j] and not any(r in known for r in remotes[i] + remotes[j]):
        return f"NV{min(len(remotes[i]), len(remotes[j]))}"
    level = _try(call, "nvmlDeviceGetTopologyCommonAncestor", handles[i], handles[j])
    return _ANCESTOR.get(int(level), "SYS") if level is not None else "SYS"


def gpu_locality_by_bus_id(pci_bus_id: str, call: NvmlCall | None = None) -> GpuLocality | None:
    """NVLink / PCIe / NUMA facts of the GPU at ``pci_bus_id`` (``None`` when NVML cannot say)."""
    try:
        call = call or default_call()
        handle = call("nvmlDeviceGetHandleByPciBusId", pci_bus_id.lower())
        index = int(call("nvmlDeviceGetIndex", handle))
    except Exception:  # noqa: BLE001 - no NVML, or no such GPU: the share is simply unknown
        return None
    nvlink, _ = _nvlinks(call, handle)
    gen = _try(call, "nvmlDeviceGetCurrPcieLinkGeneration", handle)
    width = _try(call, "nvmlDeviceGetCurrPcieLinkWidth", handle)
    return GpuLocality(
        label=f"GPU{index}",
        nvml_index=index,
        pci_bus_id=try_normalize_bus_id(pci_bus_id),
        nvlink=nvlink,
        pcie=PcieInfo(gen, width) if gen is not None or width is not None else None,
    )
