"""Parse a pasted ``nvidia-smi topo -m`` matrix into a :class:`~rankmap.topology.Topology`.

Shapes (reference/nvidia_smi_formats.md §3): TAB-separated columns ``GPU0 … NIC0 … CPU Affinity
NUMA Affinity [GPU NUMA ID]``; older drivers name NIC columns directly (``mlx5_0``) and have only
``CPU Affinity``; ``X`` is printed as `` X ``; a ``NIC Legend:`` maps ``NIC0`` to ``mlx5_0``.
Tabs often become spaces when pasted, so cells are split on any whitespace.
"""

from __future__ import annotations

import re

from rankmap.errors import InputError
from rankmap.numbers import saturating_int
from rankmap.topology import GpuLocality, NicLocality, Topology, normalize_link

_AFFINITY_HEADERS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_NIC_LEGEND = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")


def _header(line: str) -> list[str] | None:
    if "GPU0" not in line:
        return None
    text = line
    for name in _AFFINITY_HEADERS:
        text = text.replace(name, name.replace(" ", "_"))
    cols = text.split()
    if not cols or cols[0] != "GPU0" or (len(cols) > 1 and cols[1] == "X"):
        return None  # a GPU0 row, not the header
    return cols


def _int_or_none(text: str | None) -> int | None:
    if text is None or not text.strip().lstrip("-").isdecimal():
        return None
    return saturating_int(text)


def parse_topo_matrix(text: str, *, source: str = "nvidia-smi topo -m") -> Topology:
    """``nvidia-smi topo -m`` text -> Topology; :class:`InputError` when no matrix is found."""
    if "\x00" in text:
        raise InputError(f"{source}: binary data, not `nvidia-smi topo -m` output")
    lines = text.replace("\r", "").split("\n")
    start = next((i for i, line in enumerate(lines) if _header(line)), None)
    if start is None:
        raise InputError(f"{source}: no `nvidia-smi topo -m` header (a line starting with GPU0)")
    header = _header(lines[start]) or []
    labels = [c for c in header if not c.endswith(("_Affinity", "_ID")) and c != "GPU_NUMA_ID"]
    extras = header[len(labels) :]
    rows: dict[str, list[str]] = {}
    affinity: dict[str, dict[str, str]] = {}
    nic_names: dict[str, str] = {}
    for line in lines[start + 1 :]:
        m = _NIC_LEGEND.match(line)
        if m:
            nic_names[m.group(1)] = m.group(2)
            continue
        cells = line.split()
        if not cells or cells[0] not in labels or cells[0] in rows:
            continue
        links = cells[1 : 1 + len(labels)]
        if len(links) != len(labels):
            raise InputError(f"{source}: row {cells[0]} has {len(links)} of {len(labels)} cells")
        try:
            rows[cells[0]] = [normalize_link(c) for c in links]
        except ValueError as exc:
            raise InputError(f"{source}: row {cells[0]}: {exc}") from None
        affinity[cells[0]] = dict(zip(extras, cells[1 + len(labels) :], strict=False))
    missing = [lab for lab in labels if lab not in rows]
    if missing:
        raise InputError(f"{source}: no row for {', '.join(missing)}")
    return _build(labels, rows, affinity, nic_names, source)


def _build(
    labels: list[str],
    rows: dict[str, list[str]],
    affinity: dict[str, dict[str, str]],
    nic_names: dict[str, str],
    source: str,
) -> Topology:
    gpus, nics = [], []
    for label in labels:
        aff = affinity.get(label, {})
        cpu = aff.get("CPU_Affinity")
        cpu = cpu if cpu and cpu != "N/A" else None
        numa = _int_or_none(aff.get("NUMA_Affinity"))
        if label.startswith("GPU") and label[3:].isdecimal():
            gpus.append(
                GpuLocality(
                    label=label,
                    nvml_index=saturating_int(label[3:]),
                    cpu_affinity=cpu,
                    numa_node=numa,
                )
            )
        else:
            device = nic_names.get(label, None if label.startswith("NIC") else label)
            nics.append(NicLocality(label=label, device=device, numa_node=numa, cpu_affinity=cpu))
    return Topology(
        labels=tuple(labels),
        matrix=tuple(tuple(rows[lab]) for lab in labels),
        gpus=tuple(gpus),
        nics=tuple(nics),
        source=source,
    )
