"""Theoretical per-direction link bandwidth of one GPU (pure), for ``rankmap bench``'s share.

NOTE: the per-link numbers are NVIDIA's published product figures, not from our references
(unverified here): NVLink 1 (P100) 20 GB/s per link and direction, NVLink 2-4 (V100, A100,
H100) 25 GB/s, NVLink 5 (B200) 50 GB/s; PCIe per lane and direction after line coding: gen1
0.25, gen2 0.5, gen3 0.985, gen4 1.969, gen5 3.938, gen6 7.563 GB/s. A100 = 12 x 25 = 300 GB/s
and H100 = 18 x 25 = 450 GB/s per direction match the published 600 / 900 GB/s bidirectional.
"""

from __future__ import annotations

from dataclasses import dataclass

from rankmap.topology import GpuLocality

NVLINK_GBPS_PER_LINK: dict[int, float] = {1: 20.0, 2: 25.0, 3: 25.0, 4: 25.0, 5: 50.0}
PCIE_GBPS_PER_LANE: dict[int, float] = {
    1: 0.25,
    2: 0.5,
    3: 0.985,
    4: 1.969,
    5: 3.938,
    6: 7.563,
}


@dataclass(frozen=True)
class LinkBandwidth:
    """The fastest link a GPU has, and its bandwidth per direction in GB/s."""

    gbps: float
    description: str  # "NVLink 4 x18" / "PCIe gen4 x16"


def theoretical_bandwidth(gpu: GpuLocality) -> LinkBandwidth | None:
    """NVLink (generation x active links) when present, else PCIe (generation x width)."""
    nv = gpu.nvlink
    if nv is not None and nv.generation in NVLINK_GBPS_PER_LINK:
        links = nv.active if nv.active is not None else nv.links
        if links:
            per = NVLINK_GBPS_PER_LINK[nv.generation]
            return LinkBandwidth(per * links, f"NVLink {nv.generation} x{links}")
    pcie = gpu.pcie
    if pcie is not None and pcie.generation in PCIE_GBPS_PER_LANE and pcie.width:
        gbps = PCIE_GBPS_PER_LANE[pcie.generation] * pcie.width
        return LinkBandwidth(gbps, f"PCIe gen{pcie.generation} x{pcie.width}")
    return None


def share(avg_busbw: float, link: LinkBandwidth | None) -> float | None:
    """``avg_busbw`` as a fraction of the link's bandwidth (``None`` when unknown)."""
    if link is None or link.gbps <= 0:
        return None
    return avg_busbw / link.gbps
