"""Listings (one nvidia-smi printout each) -> hosts, in the order of the paste.

A paste may hold several printouts: ``nvidia-smi -L`` of two servers one after the other, a
Slurm job that ran it on every node, two tables. Every reader cuts its form into listings (a new
``GPU 0``, a new banner or a new task label starts one); this module turns them into hosts:

* listings that the paste gives the same machine name and that show the same GPUs are one
  printout repeated: one host;
* every other listing is its own host (one ``--machine`` each for a multi-node simulation),
  named as the paste names it, else ``<today's name>-1``, ``-2``, ...;
* a single listing keeps today's name (the file's stem, or ``nvidia-smi``).

Printouts of different forms of one machine (``nvidia-smi -L`` then the table, as bug reports
often show) are joined first: same indices, compatible names, no conflicting UUID or bus id.
The joined GPU takes the UUID from the form that shows it and the bus id from the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from rankmap.inventory.normalise import PasteLine, host_of_command, host_of_prefix
from rankmap.inventory.smi_common import make_host, says_bus_id_unknown, says_uuid_unknown
from rankmap.model import Gpu, Host, MigDevice

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
    forms: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.forms.add(self.form)


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
    listings = _join_forms(sorted((x for x in listings if x.gpus), key=lambda x: x.first_line))
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


def _join_forms(listings: list[Listing]) -> list[Listing]:
    """Listings of other forms that show the same machine, joined into the first of them."""
    kept: list[Listing] = []
    for item in listings:
        partner = next((k for k in kept if _same_machine(k, item)), None)
        if partner is None:
            kept.append(item)
            continue
        partner.forms.add(item.form)
        partner.form = " + ".join(sorted(partner.forms))
        partner.gpus = [_join_gpu(a, b) for a, b in zip(partner.gpus, item.gpus, strict=True)]
        partner.hostname = partner.hostname or item.hostname
        partner.driver_version = partner.driver_version or item.driver_version
        partner.cuda_driver_version = partner.cuda_driver_version or item.cuda_driver_version
    return kept


def _same_machine(a: Listing, b: Listing) -> bool:
    if b.form in a.forms or [g.nvml_index for g in a.gpus] != [g.nvml_index for g in b.gpus]:
        return False
    if a.hostname and b.hostname and a.hostname != b.hostname:
        return False
    return all(_compatible(x, y) for x, y in zip(a.gpus, b.gpus, strict=True))


def _compatible(a: Gpu, b: Gpu) -> bool:
    uuid_a, uuid_b = (None if says_uuid_unknown_in(g) else g.uuid for g in (a, b))
    if uuid_a and uuid_b and uuid_a != uuid_b:
        return False
    if a.pci_bus_id and b.pci_bus_id and a.pci_bus_id != b.pci_bus_id:
        return False
    name_a, name_b = _plain_name(a.name), _plain_name(b.name)
    return not name_a or not name_b or name_a.startswith(name_b) or name_b.startswith(name_a)


def says_uuid_unknown_in(gpu: Gpu) -> bool:
    """A note of this GPU says its UUID is not shown."""
    return any(says_uuid_unknown(note) for note in gpu.errors)


def _plain_name(name: str | None) -> str:
    """``NVIDIA A100-SXM...`` and ``A100-SXM4-80GB`` compare by their common start."""
    plain = (name or "").lower().removeprefix("nvidia ").strip()
    return plain.removesuffix("...").strip()


def _join_gpu(a: Gpu, b: Gpu) -> Gpu:
    uuid_known = [g for g in (a, b) if not says_uuid_unknown_in(g)]
    bus_known = next((g.pci_bus_id for g in (a, b) if g.pci_bus_id), None)
    notes = list(dict.fromkeys(a.errors + b.errors))
    if uuid_known:
        notes = [n for n in notes if not says_uuid_unknown(n)]
    if bus_known:
        notes = [n for n in notes if not says_bus_id_unknown(n)]
    migs = max((a.mig_devices, b.mig_devices), key=lambda m: (_real_mig_uuids(m), len(m)))
    names = [g.name for g in (a, b) if g.name]
    return replace(
        a,
        uuid=uuid_known[0].uuid if uuid_known else a.uuid,
        pci_bus_id=bus_known,
        name=max(names, key=len) if names else None,
        memory_mib=a.memory_mib or b.memory_mib,
        mig_mode=a.mig_mode or b.mig_mode,
        mig_devices=migs,
        minor_number=a.minor_number if a.minor_number is not None else b.minor_number,
        processes=a.processes if a.processes is not None else b.processes,
        errors=tuple(notes),
    )


def _real_mig_uuids(migs: tuple[MigDevice, ...]) -> int:
    return sum(m.uuid.startswith("MIG-") for m in migs)
