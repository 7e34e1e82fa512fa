"""``nvidia-smi -L`` -> listings (reference/nvidia_smi_formats.md §1).

GPU lines, R470+ MIG lines and pre-R470 ``MIG-GPU-<uuid>/<gi>/<ci>`` UUIDs, found anywhere on a
line: behind log prefixes, behind a host name (``node1: GPU 0: ...``, ``$(hostname) with GPU 0:``)
and several on one line (``echo $(nvidia-smi -L)`` joins them). A new ``GPU 0`` (or any index
that does not grow), a new host name or a new task label starts a new listing; lines of
interleaved ``srun -l`` tasks are kept apart by their labels. ``-L`` shows no PCI bus id.
"""

from __future__ import annotations

import re
from dataclasses import replace

from rankmap.errors import InputError
from rankmap.inventory.normalise import PasteLine, label_of_prefix
from rankmap.inventory.smi_common import shown_uuid
from rankmap.inventory.smi_hosts import Listing, name_from_paste
from rankmap.model import Gpu, MigDevice

FORM = "nvidia-smi -L"
NO_BUS_ID = "nvidia-smi -L gives no PCI bus id"
_GPU = re.compile(r"\bGPU (\d{1,3}): ([^\n]{1,160}?) \(UUID: ?(G[^)\s]{0,79})\)?")
_MIG = re.compile(r"\bMIG ([\w.+-]{1,40}) +Device +(\d{1,3}): \(UUID: ?(MIG-[^)\s]{1,120})\)?")
_LEGACY_MIG = re.compile(r"^MIG-GPU-[0-9A-Fa-f-]+/(\d+)/(\d+)$")
_HOST_BEFORE = re.compile(r"^\s*\[?([A-Za-z][\w-]*(?:\.[\w-]+)*)\]?\s*(?:with|:|\|)?\s*$")


def looks_like_list(lines: list[PasteLine]) -> bool:
    return any(_GPU.search(x.text) for x in lines)


# An index of four digits: no machine has a thousand GPUs (NVML indices of one host are small);
# the paste is generated or corrupt, and reading its first thousand would be a silent guess
_HUGE_INDEX = re.compile(r"\bGPU \d{4,}: [^\n]{1,160}\(UUID: ?G")


def read_list(lines: list[PasteLine]) -> list[Listing]:
    """Every ``-L`` printout in the paste, one listing each."""
    if any(_HUGE_INDEX.search(x.text) for x in lines):
        raise InputError(
            "nvidia-smi -L: a GPU index of 1000 or more; no machine has that many GPUs "
            "(a generated or corrupt paste)"
        )
    listings: list[Listing] = []
    open_by_label: dict[str, Listing] = {}
    for pos, line in enumerate(lines):
        label = label_of_prefix(line.prefix)
        matches = list(_GPU.finditer(line.text))
        if not matches:
            current = open_by_label.get(label)
            if current is not None and current.gpus:
                _add_migs(current, line.text)
                # the paste's last line only: torch's collect_env prints "GPU 0: NVIDIA A100"
                # lines without a UUID in the middle of a paste (review 25)
                if pos == len(lines) - 1 and (cut := _CUT_GPU.search(line.text)):
                    _note_cut(current, cut.group(0).strip())
            continue
        for number, match in enumerate(matches):
            end = matches[number + 1].start() if number + 1 < len(matches) else len(line.text)
            line_host = _host_before(
                line.text[matches[number - 1].end() if number else 0 : match.start()]
            )
            gpu = _gpu(match)
            current = open_by_label.get(label)
            if current is None or _starts_new(current, gpu, line_host):
                current = Listing(FORM, label=label, first_line=pos)
                floor = listings[-1].first_line + 1 if listings else 0
                current.hostname = line_host or name_from_paste(lines, pos, floor)
                listings.append(current)
                open_by_label[label] = current
            current.gpus.append(_unique(current, gpu))
            _add_migs(current, line.text[match.end() : end])
        cut = _CUT_GPU.search(line.text[matches[-1].end() :]) if pos == len(lines) - 1 else None
        current = open_by_label.get(label)
        if cut and current is not None and current.gpus:
            _note_cut(current, cut.group(0).strip())
    return [item for item in listings if item.gpus]


# A GPU line cut before its UUID ("GPU 3: NVIDIA H100 80GB HB" as the paste's last line): the
# GPU is not shown, and the listing says so (review 19: it was dropped silently)
_CUT_GPU = re.compile(r"\bGPU \d{1,3}: (?![^\n]*\(UUID: ?G)[^\n]{0,160}$")


def _note_cut(current: Listing, text: str) -> None:
    gpu = current.gpus[-1]
    note = f"the paste cuts a GPU line before its UUID (`{text[:80]}`): that GPU is not shown"
    current.gpus[-1] = replace(gpu, errors=(*gpu.errors, note))


def _unique(current: Listing, gpu: Gpu) -> Gpu:
    """``gpu``, noted when an earlier GPU of its listing shows the same UUID (one GPU listed
    twice, or UUIDs masked or edited by hand): NVML gives every GPU its own UUID."""
    twin = next((g for g in current.gpus if g.uuid == gpu.uuid), None)
    if twin is None:
        return gpu
    note = f"the same UUID as GPU {twin.nvml_index}: a paste edited by hand or masked"
    return replace(gpu, errors=(*gpu.errors, note))


def _starts_new(current: Listing, gpu: Gpu, line_host: str | None) -> bool:
    if not current.gpus or gpu.nvml_index <= current.gpus[-1].nvml_index:
        return bool(current.gpus)
    return line_host is not None and line_host != current.hostname


def _host_before(text: str) -> str | None:
    """``paula10.example.org with`` / ``node1:`` / ``[node1]`` in front of ``GPU 0:``."""
    match = _HOST_BEFORE.match(text) if text.strip() else None
    if match is None or match.group(1) in ("GPU", "with"):
        return None
    return match.group(1)


def _gpu(match: re.Match[str]) -> Gpu:
    index = int(match.group(1))
    uuid, notes = shown_uuid(match.group(3), index, "its -L line is cut or masked")
    return Gpu(
        nvml_index=index,
        uuid=uuid,
        pci_bus_id=None,
        name=match.group(2).strip(),
        errors=(NO_BUS_ID, *notes),
    )


def _add_migs(current: Listing, text: str) -> None:
    found = [_mig(m) for m in _MIG.finditer(text)]
    if found:
        gpu = current.gpus[-1]
        current.gpus[-1] = replace(gpu, mig_mode=True, mig_devices=gpu.mig_devices + tuple(found))


def _mig(match: re.Match[str]) -> MigDevice:
    uuid = match.group(3)
    gi = ci = None
    legacy = _LEGACY_MIG.match(uuid)
    if legacy:  # pre-R470: MIG-GPU-<gpu uuid>/<gi>/<ci>
        gi, ci = int(legacy.group(1)), int(legacy.group(2))
    return MigDevice(uuid=uuid, gi=gi, ci=ci, index=int(match.group(2)), profile=match.group(1))
