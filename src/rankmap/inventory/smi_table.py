"""The default ``nvidia-smi`` table -> listings (reference/nvidia_smi_formats.md §2).

Every layout seen: R3xx/R4xx (no CUDA column, ``MB`` instead of ``MiB``, 4-digit bus domain,
``Compute processes:``, process rows without GI/CI), the 79-column <= R530 layout and the wider
R535+ one, with MIG-devices and process tables. Rows are found by their content - an index, a
name, a PCI bus id - anywhere on a line, so log prefixes, lost or rewritten borders and ragged
spacing do not matter. The table carries no UUIDs: ``unknown-uuid:nvml<N>`` stands in and says
so. A new ``NVIDIA-SMI`` banner, or an index that does not grow, starts a new listing.
"""

from __future__ import annotations

import re
from dataclasses import replace

from rankmap.inventory.normalise import PasteLine, label_of_prefix
from rankmap.inventory.smi_common import BUS, UNKNOWN_UUID_PREFIX, bus_id, unknown_uuid
from rankmap.inventory.smi_hosts import Listing, name_from_paste
from rankmap.model import Gpu, GpuProcess, MigDevice

FORM = "nvidia-smi"
_HEAD = re.compile(
    r"NVIDIA-SMI\s+(\S+)\s+Driver Version:\s*([\w.-]+)(?:\s+CUDA Version:\s*([0-9.]+|N/A))?"
)
_GPU_ROW = re.compile(rf"(?:^|\|) *(\d{{1,3}}) +(\S[^|\n]{{0,118}}?)? *(\|)? *({BUS})(?=[ |]|$)")
_HAS_BUS = re.compile(BUS)
_MEMORY = re.compile(r"(\d{1,12}) ?Mi?B */ *(\d{1,12}) ?Mi?B")
_BORDER = re.compile(r"^\s*[+|]?[-=+]{6,}")
_MIG_ROW = re.compile(
    r"(?:^|\|) *(\d{1,6}) +(\d{1,6}) +(\d{1,6}) +(\d{1,6}) *\| *(\d{1,12}) ?MiB */ *(\d{1,12}) ?MiB"
)
_PROC_ROW = re.compile(
    r"(?:^|\|) *(\d{1,3}) +(?:(?:N/A|\d+) +(?:N/A|\d+) +)?(\d{1,12}) +(C\+G|M\+C|C|G|M) +"
    r"(\S[^|\n]{0,200}?)? *(\d{1,12} ?MiB|N/A) *(?:\||$)"
)
_PERSISTENCE = ("On", "Off", "N/A")
NO_UUID = "the nvidia-smi table gives no UUID (use nvidia-smi -L or -q -x)"


def looks_like_table(lines: list[PasteLine]) -> bool:
    """A banner, or a GPU row with the table's ``|`` between name and bus id."""
    return any(_HEAD.search(x.text) for x in lines) or any(
        _HAS_BUS.search(x.text) is not None
        and (m := _GPU_ROW.search(x.text)) is not None
        and m.group(3) is not None
        for x in lines
    )


def read_table(lines: list[PasteLine]) -> list[Listing]:
    """Every table in the paste, one listing each (cut tables keep the rows they show)."""
    listings: list[Listing] = []
    current: Listing | None = None
    section = "gpus"
    migs: dict[int, list[MigDevice]] = {}
    procs: dict[int, list[GpuProcess]] | None = None
    for pos, line in enumerate(lines):
        text = line.text
        head = _HEAD.search(text)
        if head or current is None:
            if current is not None:
                _finish(current, migs, procs)
            if current is not None and not current.gpus:
                listings.pop()  # a banner only: the next one names the machine again
            current = _new_listing(lines, pos, listings, head)
            listings.append(current)
            section, migs, procs = "gpus", {}, None
            if head:
                continue
        if "MIG devices:" in text:
            section = "mig"
        elif re.search(r"\b(?:Compute )?[Pp]rocesses:", text):
            section, procs = "procs", {}
        if section == "gpus":
            gpu = _gpu(text, lines[pos + 1 : pos + 4])
            if gpu is None:
                continue
            if current.gpus and gpu.nvml_index <= current.gpus[-1].nvml_index:
                _finish(current, migs, procs)
                current = _new_listing(lines, pos, listings, None)
                listings.append(current)
                migs, procs = {}, None
            current.gpus.append(gpu)
        elif section == "mig":
            _mig_rows(text, migs)
        elif procs is not None:
            _process_rows(text, procs)
    if current is not None:
        _finish(current, migs, procs)
    return [item for item in listings if item.gpus]


def _new_listing(
    lines: list[PasteLine], pos: int, before: list[Listing], head: re.Match[str] | None
) -> Listing:
    floor = before[-1].first_line + 1 if before else 0
    item = Listing(FORM, first_line=pos, label=label_of_prefix(lines[pos].prefix))
    item.hostname = name_from_paste(lines, pos, floor)
    if head:
        item.driver_version = head.group(2)
        item.cuda_driver_version = head.group(3) if head.group(3) not in (None, "N/A") else None
    elif before:
        item.driver_version = before[-1].driver_version
        item.cuda_driver_version = before[-1].cuda_driver_version
    return item


def _gpu(text: str, following: list[PasteLine]) -> Gpu | None:
    row = _GPU_ROW.search(text) if _HAS_BUS.search(text) else None
    if row is None:
        return None
    index = int(row.group(1))
    words = row.group(2).split()
    if words and words[-1] in _PERSISTENCE:
        words = words[
            :-1
        ]  # the Persistence-M column; old layouts truncate long names: "A100-SXM..."
    body = [text[row.end() :]]
    for nxt in following:
        if _BORDER.match(nxt.text) or _HAS_BUS.search(nxt.text) or ":" in nxt.text:
            break
        body.append(nxt.text)
    joined = " ".join(body)
    memory = _MEMORY.search(joined)
    return Gpu(
        nvml_index=index,
        uuid=unknown_uuid(index),
        pci_bus_id=bus_id(row.group(4)),
        name=" ".join(words) or None,
        memory_mib=int(memory.group(2)) if memory else None,
        mig_mode=re.search(r"\bEnabled\b", joined) is not None,
        errors=(NO_UUID,),
    )


def _mig_rows(text: str, migs: dict[int, list[MigDevice]]) -> None:
    for match in _MIG_ROW.finditer(text):
        idx, gi, ci, dev = (int(match.group(i)) for i in range(1, 5))
        migs.setdefault(idx, []).append(
            MigDevice(
                uuid=f"{UNKNOWN_UUID_PREFIX}gpu{idx}-gi{gi}-ci{ci}",
                gi=gi,
                ci=ci,
                index=dev,
                memory_mib=int(match.group(6)),
            )
        )


def process_rows(text: str) -> list[tuple[int, GpuProcess]]:
    """(nvidia-smi GPU index, process) of every row of a pasted process table."""
    procs: dict[int, list[GpuProcess]] = {}
    _process_rows(text, procs)
    return [(index, proc) for index, ps in procs.items() for proc in ps]


def _process_rows(text: str, procs: dict[int, list[GpuProcess]]) -> None:
    for match in _PROC_ROW.finditer(text):
        memory = match.group(5).replace(" ", "")
        procs.setdefault(int(match.group(1)), []).append(
            GpuProcess(
                pid=int(match.group(2)),
                name=(match.group(4) or "").strip() or None,
                used_memory_mib=int(memory[:-3]) if memory != "N/A" else None,
                kind=match.group(3),
            )
        )


def _finish(
    item: Listing, migs: dict[int, list[MigDevice]], procs: dict[int, list[GpuProcess]] | None
) -> None:
    item.gpus = [
        replace(
            gpu,
            mig_mode=gpu.mig_mode or bool(migs.get(gpu.nvml_index)),
            mig_devices=tuple(migs.get(gpu.nvml_index, ())),
            processes=tuple(procs.get(gpu.nvml_index, ())) if procs is not None else None,
        )
        for gpu in item.gpus
    ]
