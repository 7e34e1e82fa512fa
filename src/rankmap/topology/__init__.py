"""GPU / NIC / CPU topology: the ``nvidia-smi topo -m`` matrix as data. Pure: no I/O.

A profile host's ``topology`` key (schema ``rankmap-topology/1``, documented in docs/topo.md)::

    {"labels": ["GPU0", "GPU1", "NIC0"],
     "matrix": [["X", "NV18", "PIX"], ["NV18", "X", "NODE"], ["PIX", "NODE", "X"]],
     "gpus": [{"label": "GPU0", "nvml_index": 0, "cpu_affinity": "0-55,112-167",
               "numa_node": 0, "nvlink": {"generation": 4, "links": 18, "active": 18},
               "pcie": {"generation": 5, "width": 16}}],
     "nics": [{"label": "NIC0", "device": "mlx5_0", "numa_node": 0}],
     "source": "profile"}

Link legend (reference/nvidia_smi_formats.md §3), closest first: ``X`` self, ``NV#`` a bonded set
of # NVLinks, ``PIX`` at most one PCIe bridge, ``PXB`` several bridges, ``PHB`` through a PCIe
host bridge (the CPU), ``NODE`` between host bridges of one NUMA node, ``SYS`` across the SMP
interconnect between NUMA nodes (QPI/UPI). Rows and columns use NVML indices, not CUDA ordinals.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rankmap.errors import InputError
from rankmap.numbers import saturating_int

TOPOLOGY_SCHEMA = "rankmap-topology/1"
# Closeness rank of each link kind: lower is closer. NV# sorts by its link count inside rank 1.
_LINK_RANK = {"X": 0, "NV": 1, "PIX": 2, "PXB": 3, "PHB": 4, "NODE": 5, "SYS": 6}
LINK_KINDS: tuple[str, ...] = ("X", "NV#", "PIX", "PXB", "PHB", "NODE", "SYS")
LEGEND: tuple[tuple[str, str], ...] = (
    ("X", "Self"),
    ("SYS", "Connection traversing PCIe as well as the SMP interconnect between NUMA nodes"),
    ("NODE", "Connection traversing PCIe as well as the interconnect between PCIe Host Bridges"),
    ("PHB", "Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)"),
    ("PXB", "Connection traversing multiple PCIe bridges (without the PCIe Host Bridge)"),
    ("PIX", "Connection traversing at most a single PCIe bridge"),
    ("NV#", "Connection traversing a bonded set of # NVLinks"),
)
_NV_RE = re.compile(r"^NV(\d+)$")


def normalize_link(text: str) -> str:
    """Canonical link word: strips blanks, upper-cases; old ``SOC`` becomes ``SYS``.

    Raises ``ValueError`` for a word that is not in the legend.
    """
    word = text.strip().upper()
    if word == "SOC":  # very old drivers (nvidia_smi_formats.md §3)
        word = "SYS"
    if word in _LINK_RANK and word != "NV":
        return word
    if _NV_RE.match(word):
        return word
    raise ValueError(f"unknown topology link {text.strip()!r}")


def link_rank(link: str) -> tuple[int, int]:
    """Sort key of a link word: ``(kind rank, -nvlinks)``; smaller is closer."""
    m = _NV_RE.match(link)
    if m:
        return (_LINK_RANK["NV"], -saturating_int(m.group(1)))
    return (_LINK_RANK[link], 0)


def is_nvlink(link: str) -> bool:
    """True for ``NV#``."""
    return bool(_NV_RE.match(link))


@dataclass(frozen=True)
class NvLinkInfo:
    """NVLink of one GPU: generation (NVML NvLink version), links the GPU has, links active."""

    generation: int | None = None
    links: int | None = None
    active: int | None = None


@dataclass(frozen=True)
class PcieInfo:
    """PCIe link of one GPU (current generation and width when read from NVML)."""

    generation: int | None = None
    width: int | None = None


@dataclass(frozen=True)
class GpuLocality:
    """Where one GPU sits: its matrix label, CPU/NUMA affinity and links."""

    label: str
    nvml_index: int
    pci_bus_id: str | None = None
    cpu_affinity: str | None = None  # "0-47,96-143" as nvidia-smi prints it
    numa_node: int | None = None
    nvlink: NvLinkInfo | None = None
    pcie: PcieInfo | None = None


@dataclass(frozen=True)
class NicLocality:
    """A NIC column of the matrix (``NIC0`` -> ``mlx5_0``)."""

    label: str
    device: str | None = None
    numa_node: int | None = None
    cpu_affinity: str | None = None


@dataclass(frozen=True)
class Topology:
    """The square link matrix over ``labels`` plus per-GPU and per-NIC locality."""

    labels: tuple[str, ...]
    matrix: tuple[tuple[str, ...], ...]
    gpus: tuple[GpuLocality, ...] = ()
    nics: tuple[NicLocality, ...] = ()
    source: str = "profile"

    def link(self, a: str, b: str) -> str | None:
        """Link word between two labels (``None`` when a label is unknown)."""
        try:
            return self.matrix[self.labels.index(a)][self.labels.index(b)]
        except ValueError:
            return None

    def gpu(self, nvml_index: int) -> GpuLocality | None:
        """Locality of the GPU with this NVML index."""
        for g in self.gpus:
            if g.nvml_index == nvml_index:
                return g
        return None

    def gpu_link(self, a: int, b: int) -> str | None:
        """Link word between two GPUs given by NVML index."""
        ga, gb = self.gpu(a), self.gpu(b)
        if ga is None or gb is None:
            return None
        return self.link(ga.label, gb.label)

    def has_nvlink(self) -> bool:
        """True when any GPU pair is connected by NVLink."""
        return any(is_nvlink(cell) for row in self.matrix for cell in row)

    def to_dict(self) -> dict[str, Any]:
        """The profile's ``topology`` JSON (schema ``rankmap-topology/1``)."""
        return {
            "schema": TOPOLOGY_SCHEMA,
            "labels": list(self.labels),
            "matrix": [list(row) for row in self.matrix],
            "gpus": [_gpu_dict(g) for g in self.gpus],
            "nics": [
                _drop_none(
                    {
                        "label": n.label,
                        "device": n.device,
                        "numa_node": n.numa_node,
                        "cpu_affinity": n.cpu_affinity,
                    }
                )
                for n in self.nics
            ],
            "source": self.source,
        }


def _drop_none(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if v is not None}


def _gpu_dict(g: GpuLocality) -> dict[str, Any]:
    out: dict[str, Any] = {
        "label": g.label,
        "nvml_index": g.nvml_index,
        "pci_bus_id": g.pci_bus_id,
        "cpu_affinity": g.cpu_affinity,
        "numa_node": g.numa_node,
    }
    if g.nvlink is not None:
        out["nvlink"] = _drop_none(
            {"generation": g.nvlink.generation, "links": g.nvlink.links, "active": g.nvlink.active}
        )
    if g.pcie is not None:
        out["pcie"] = _drop_none({"generation": g.pcie.generation, "width": g.pcie.width})
    return _drop_none(out)


def parse_topology(doc: Any, *, where: str = "topology") -> Topology:
    """A profile's ``topology`` value -> :class:`Topology`; :class:`InputError` when malformed."""
    if not isinstance(doc, Mapping):
        raise InputError(f"{where} is not an object")
    labels = doc.get("labels")
    matrix = doc.get("matrix")
    if not isinstance(labels, list) or not all(isinstance(s, str) for s in labels):
        raise InputError(f"{where}.labels must be a list of strings")
    if not isinstance(matrix, list) or len(matrix) != len(labels):
        raise InputError(f"{where}.matrix must have one row per label ({len(labels)})")
    rows: list[tuple[str, ...]] = []
    for i, row in enumerate(matrix):
        if not isinstance(row, list) or len(row) != len(labels):
            raise InputError(f"{where}.matrix[{i}] must have {len(labels)} entries")
        try:
            rows.append(tuple(normalize_link(str(c)) for c in row))
        except ValueError as exc:
            raise InputError(f"{where}.matrix[{i}]: {exc}") from None
    gpu_docs, nic_docs = doc.get("gpus") or [], doc.get("nics") or []
    if not isinstance(gpu_docs, list) or not isinstance(nic_docs, list):
        raise InputError(f"{where}.gpus and {where}.nics must be lists")
    gpus = tuple(_parse_gpu(g, f"{where}.gpus[{i}]") for i, g in enumerate(gpu_docs))
    nics = tuple(_parse_nic(n, f"{where}.nics[{i}]") for i, n in enumerate(nic_docs))
    if not gpus:  # derive GPU entries from labels "GPU<n>"
        gpus = tuple(
            GpuLocality(label=s, nvml_index=saturating_int(s[3:]))
            for s in labels
            if s.startswith("GPU") and s[3:].isdecimal()
        )
    return Topology(tuple(labels), tuple(rows), gpus, nics, str(doc.get("source") or "profile"))


def _opt_int(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: int(1e309)
        return None


def _parse_gpu(doc: Any, where: str) -> GpuLocality:
    if not isinstance(doc, Mapping) or _opt_int(doc.get("nvml_index")) is None:
        raise InputError(f"{where} needs an integer 'nvml_index'")
    index = int(doc["nvml_index"])
    nv = doc.get("nvlink")
    pcie = doc.get("pcie")
    return GpuLocality(
        label=str(doc.get("label") or f"GPU{index}"),
        nvml_index=index,
        pci_bus_id=str(doc["pci_bus_id"]) if doc.get("pci_bus_id") else None,
        cpu_affinity=str(doc["cpu_affinity"]) if doc.get("cpu_affinity") else None,
        numa_node=_opt_int(doc.get("numa_node")),
        nvlink=NvLinkInfo(
            _opt_int(nv.get("generation")), _opt_int(nv.get("links")), _opt_int(nv.get("active"))
        )
        if isinstance(nv, Mapping)
        else None,
        pcie=PcieInfo(_opt_int(pcie.get("generation")), _opt_int(pcie.get("width")))
        if isinstance(pcie, Mapping)
        else None,
    )


def _parse_nic(doc: Any, where: str) -> NicLocality:
    if not isinstance(doc, Mapping) or not doc.get("label"):
        raise InputError(f"{where} needs a 'label'")
    return NicLocality(
        label=str(doc["label"]),
        device=str(doc["device"]) if doc.get("device") else None,
        numa_node=_opt_int(doc.get("numa_node")),
        cpu_affinity=str(doc["cpu_affinity"]) if doc.get("cpu_affinity") else None,
    )


def host_topology(host: Any) -> Topology | None:
    """The parsed topology of a :class:`~rankmap.model.Host`, ``None`` when it has none."""
    doc = getattr(host, "topology", None)
    if doc is None:
        return None
    return parse_topology(doc, where=f"{getattr(host, 'hostname', 'host')}: topology")


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """``"0-3,8,10-11"`` -> CPU numbers; ``ValueError`` on garbage."""
    cpus: list[int] = []
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        start, end = int(lo), int(hi or lo)
        if end < start:
            raise ValueError(f"bad CPU range {part!r}")
        cpus.extend(range(start, end + 1))
    return tuple(cpus)


def format_cpu_list(cpus: Sequence[int]) -> str:
    """CPU numbers -> ``"0-3,8"`` (the form nvidia-smi prints)."""
    out: list[str] = []
    ordered = sorted(set(cpus))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)
