"""Listings (one nvidia-smi printout each) -> hosts, in the order of the paste.

A paste may hold several printouts: ``nvidia-smi -L`` of two servers one after the other, a
Slurm job that ran it on every node, two tables. Every reader cuts its form into listings (a new
``GPU 0``, a new banner or a new task label starts one); this module turns them into hosts:

* listings that the paste gives the same machine name and that show the same GPUs are one
  printout repeated: one host;
* every other listing is its own host (one ``--machine`` each for a multi-node simulation),
  named as the paste names it, else ``<today's name>-1``, ``-2``, ...;
* a single listing keeps today's name (the file's stem, or ``nvidia-smi``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from rankmap.inventory.normalise import PasteLine, host_of_command, host_of_prefix
from rankmap.inventory.smi_common import make_host
from rankmap.model import Gpu, Host

LOOK_BACK_LINES = 6  # how far above a printout its command line is looked for


@dataclass
class Listing:
    """One printout of one form: its GPUs and what the paste says about the machine."""

    form: str  # "nvidia-smi -L", "nvidia-smi", "nvidia-smi -q", ...
    gpus: list[Gpu] = field(default_factory=list)
    hostname: str | None = None
    label: str = ""  # srun task label / Ray ip: lines of one task belong together
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    first_line: int = 0


def name_from_paste(lines: list[PasteLine], first: int, floor: int) -> str | None:
    """The machine named by the command line (or log prefix) just above line ``first``."""
    if 0 <= first < len(lines):
        host = host_of_prefix(lines[first].prefix)
        if host:
            return host
    for pos in range(first, max(floor, first - LOOK_BACK_LINES) - 1, -1):
        if 0 <= pos < len(lines):
            host = host_of_command(lines[pos].text)
            if host:
                return host
            if pos < first and "nvidia-smi" in lines[pos].text:
                return None  # the nearest command names no machine
    return None


def hosts_from_listings(listings: list[Listing], source: str) -> list[Host]:
    """One host per distinct listing, in paste order (see the module docstring)."""
    listings = [item for item in listings if item.gpus]
    kept: list[Listing] = []
    for item in listings:
        same = next((k for k in kept if _same_printout(k, item)), None)
        if same is None:
            kept.append(item)
    hosts = [
        make_host(
            item.gpus,
            source,
            item.form,
            driver_version=item.driver_version,
            cuda_driver_version=item.cuda_driver_version,
        )
        for item in kept
    ]
    if len(hosts) < 2:
        return hosts
    return [
        replace(host, hostname=item.hostname or f"{host.hostname}-{pos}")
        for pos, (host, item) in enumerate(zip(hosts, kept, strict=True), start=1)
    ]


def _same_printout(a: Listing, b: Listing) -> bool:
    """The paste names both the same machine and both show the same GPUs."""
    if a.hostname is None or a.hostname != b.hostname:
        return False
    return [_identity(g) for g in a.gpus] == [_identity(g) for g in b.gpus]


def _identity(gpu: Gpu) -> tuple[int, str, str | None]:
    return gpu.nvml_index, gpu.uuid, gpu.pci_bus_id
