"""A compact text form of a host's GPU topology, for probe records sent through the store.

Every rank of a node sends the same topology in the shared (per-node) part of its record, so it
must be small: only what the findings of :mod:`rankmap.topology.rules` use - the GPU x GPU links
and, per GPU, NVML index, PCI bus id, NUMA node and NVLink counts (no NICs, no CPU lists)::

    t1|0/0000:18:00.0/0/4/18/18,1/0000:2A:00.0/0/4/18/18|NV18|

``t1``, then the GPUs (``index/bus/numa/nvlink generation/links/active``, empty = unknown), then
the upper triangle of the link matrix: row *i* holds the links from GPU *i* to GPUs *i+1..n-1*,
rows separated by ``;``, words by blanks. About 400 bytes for an 8-GPU DGX instead of ~3 KB of
profile JSON.

NOTE: the matrix is taken to be symmetric, as ``nvidia-smi topo -m`` prints it; an asymmetric
source matrix keeps only its upper triangle.
"""

from __future__ import annotations

import functools

from rankmap.numbers import int_or_none
from rankmap.topology import GpuLocality, NvLinkInfo, Topology, normalize_link

WIRE_TAG = "t1"


def _num(value: int | None) -> str:
    return "" if value is None else str(value)


def _opt(text: str) -> int | None:
    return int_or_none(text) if text else None


def to_wire(topo: Topology) -> str | None:
    """The compact text of ``topo``'s GPUs (``None`` when it has fewer than one GPU)."""
    gpus = sorted(topo.gpus, key=lambda g: g.nvml_index)
    if not gpus:
        return None
    parts = []
    for g in gpus:
        nv = g.nvlink or NvLinkInfo()
        fields = (g.nvml_index, g.pci_bus_id or "", g.numa_node, nv.generation, nv.links, nv.active)
        parts.append("/".join(f if isinstance(f, str) else _num(f) for f in fields))
    rows = []
    for i, a in enumerate(gpus):
        words = [topo.link(a.label, b.label) or "SYS" for b in gpus[i + 1 :]]
        rows.append(" ".join(words))
    return f"{WIRE_TAG}|{','.join(parts)}|{';'.join(rows)}"


@functools.lru_cache(maxsize=256)
def from_wire(text: str) -> Topology:
    """Parse :func:`to_wire`'s text (cached: identical nodes parse once). ``ValueError`` if bad."""
    tag, _, rest = text.partition("|")
    gpu_text, _, matrix_text = rest.partition("|")
    if tag != WIRE_TAG or not gpu_text:
        raise ValueError("not a rankmap topology (t1)")
    gpus = []
    for item in gpu_text.split(","):
        idx, bus, numa, gen, links, active = (item.split("/") + [""] * 6)[:6]
        nvlink = (
            None
            if not (gen or links or active)
            else NvLinkInfo(_opt(gen), _opt(links), _opt(active))
        )
        gpus.append(GpuLocality(f"GPU{int(idx)}", int(idx), bus or None, None, _opt(numa), nvlink))
    n = len(gpus)
    matrix = [["X"] * n for _ in range(n)]
    rows = matrix_text.split(";")
    for i in range(n):
        words = rows[i].split() if i < len(rows) else []
        if len(words) != n - i - 1:
            raise ValueError(f"topology row {i}: {len(words)} links for {n - i - 1} GPUs")
        for k, word in enumerate(words):
            j = i + 1 + k
            matrix[i][j] = matrix[j][i] = normalize_link(word)
    labels = tuple(g.label for g in gpus)
    return Topology(labels, tuple(tuple(r) for r in matrix), tuple(gpus), (), "probe")
