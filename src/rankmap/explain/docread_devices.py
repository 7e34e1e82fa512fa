"""The devices a pasted document shows (:func:`rankmap.explain.docread.read_document` calls it):
nvidia-smi process tables and listings, the GPUs a container or pod is given, the model a
process printed for its first device, and pasted YAML/JSON configs.
"""

from __future__ import annotations

import re
from typing import Any

from rankmap.explain.configs import read_parsed
from rankmap.explain.docfacts import DocFacts
from rankmap.explain.document import Segment
from rankmap.explain.signals import machine_gpu_count
from rankmap.numbers import saturating_int

MAX_CONFIG_CHARS = 64 * 1024


_GPU_UUID = re.compile(r"\bGPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")


_REQUEST = re.compile(
    r"--gpus[ =]['\"]*(?:device=)?(?P<list>[\d,]+)\b|\bNV_GPU=['\"]?(?P<nv>[\d,]+)|"
    r"NVIDIA_VISIBLE_DEVICES=['\"]?(?P<nvd>[\d,]+)\b|"
    # a pod's GPU limit (resources.limits nvidia.com/gpu: 1)
    # (or said so: "same Job spec (nvidia.com/gpu: 8)"; not a node's Capacity/Allocatable)
    r"(?:\blimits\W{1,40})?\bnvidia\.com/gpu['\"]?\s*[:=]\s*['\"]?(?P<k8s>\d{1,3})\b"
)


# a pod's request of MIG instances under the device plugin's mixed strategy (reference/
# cuda_devices.md §4): "nvidia.com/mig-3g.20gb: 2"
_MIG_REQUEST = re.compile(r"\bnvidia\.com/mig-\d+g\.\d+gb['\"]?\s*[:=]\s*['\"]?(\d{1,3})\b")


# CUDA_VISIBLE_DEVICES in a pod spec or compose file (``CUDA_VISIBLE_DEVICES: "3"``,
# ``- name: CUDA_VISIBLE_DEVICES`` / ``value: "3"``)
_SPEC_CVD = re.compile(
    r"CUDA_VISIBLE_DEVICES['\"]?\s*:\s*['\"]?(?P<a>[\d,]+)\b|"
    r"name:\s*['\"]?CUDA_VISIBLE_DEVICES['\"]?\s*\n?\s*value:\s*['\"]?(?P<b>[\d,]+)\b"
)


def gpu_request(text: str) -> tuple[int, tuple[str, ...] | None] | None:
    """The GPUs a container was given, when the text states it (the first request found): their
    count, and their ids when it names devices (``--gpus device=2,3``, NVIDIA_VISIBLE_DEVICES,
    NV_GPU) rather than a count (``--gpus 2``)."""
    m = next(
        (
            m
            for m in _REQUEST.finditer(text)
            if not _scheduler_line(text, m.start()) and not _node_capacity(text, m)
        ),
        None,
    )
    if not m:
        return None
    if m.group("k8s") is not None:
        return int(m.group("k8s")), None
    if m.group("list") is not None and "device=" not in m.group(0):
        count = m.group("list")
        return (int(count), None) if count.isdecimal() and len(count) < 4 else None
    value = next(g for g in (m.group("list"), m.group("nv"), m.group("nvd")) if g is not None)
    ids = tuple(p for p in value.split(",") if p)
    return (len(ids), ids) if ids else None


_SCHEDULER_LINE = re.compile(r"[ \t]*(?:#SBATCH|#PBS|#\$|(?:\S*/)?(?:srun|sbatch|salloc)\b)")


_NODE_CAPACITY = re.compile(r"(?:Capacity|Allocatable|Allocated resources)\s*:", re.I)


def _node_capacity(text: str, m: re.Match[str]) -> bool:
    """Whether a pod-style GPU count is a node's (``kubectl describe node``: Capacity,
    Allocatable) rather than a container's request."""
    return m.group("k8s") is not None and bool(
        _NODE_CAPACITY.search(text, max(0, m.start() - 200), m.start())
    )


def _scheduler_line(text: str, at: int) -> bool:
    """Whether position ``at`` is on a scheduler's line (``#SBATCH --gpus=4``, ``srun --gpus
    4``): a request to Slurm, not a container's GPUs (review 57)."""
    start = text.rfind("\n", 0, at) + 1
    return _SCHEDULER_LINE.match(text, start) is not None


def _requested(text: str) -> int | None:
    """The count of :func:`gpu_request`."""
    request = gpu_request(text)
    return request[0] if request else None


# what the process printed of its first device: "torch.cuda.get_device_name(0) = NVIDIA ..."
_DEVICE_NAME_PRINTED = re.compile(
    r"get_device_name\(\s*0?\s*\)\s*(?:=|:|->)?\s*['\"]?(?P<name>(?:NVIDIA|Tesla|Quadro|GeForce|"
    r"AMD|Radeon)[^'\"\n]{2,60})"
)


_SMI_L_NAME = re.compile(r"^\s*GPU (?P<index>\d{1,3}): (?P<name>[^()\n]{2,60}?) \(UUID", re.M)


def read_smi(seg: Segment, source: str, facts: DocFacts) -> None:
    from rankmap.errors import RankMapError
    from rankmap.inventory import parse_machine_text
    from rankmap.inventory.smi_table import process_rows

    gpus_of: dict[int, set[int]] = {}
    rows: dict[int, str] = {}
    for no, line in seg.lines():
        for index, proc in process_rows(line):
            if proc.graphics_only:  # a display's Xorg / gnome-shell is no rank of the job
                continue
            gpus_of.setdefault(proc.pid, set()).add(index)
            rows.setdefault(proc.pid, f"{source}:{no}: {line.strip()[:200]}")
    pids_on: dict[int, set[int]] = {}
    for pid, gpus in gpus_of.items():
        for g in gpus:
            pids_on.setdefault(g, set()).add(pid)
    shared = [g for g, pids in sorted(pids_on.items()) if len(pids) > 1]
    facts.proc_gpus |= set(pids_on)
    one_each = all(len(g) == 1 for g in gpus_of.values()) and not shared
    if len(pids_on) >= 2 and one_each and not facts.spread:
        facts.spread = (
            f"nvidia-smi: {len(pids_on)} compute processes on {len(pids_on)} GPUs, one each"
        )
    if len(pids_on) > 1 and len({len(pids) for pids in pids_on.values()}) == 1:
        shared = []  # every GPU shows as many processes: each its own (a rank and its workers)
    if shared and facts.shared_gpu is None:
        g = shared[0]
        facts.shared_gpu = f"nvidia-smi: {len(pids_on[g])} processes on GPU {g}"
    # one process on several GPUs (nn.DataParallel, device_map="auto", a pipeline) is one rank
    # using them all, by design: the no-set_device signature is ranks that each hold GPU 0 and
    # their own GPU (review 23)
    several = len(gpus_of) > 1
    _every_gpu(gpus_of, rows, facts)
    for pid, gpus in gpus_of.items():
        if several and 0 in gpus and len(gpus) == 2 and facts.gpu0_extra is None:
            other = ", ".join(str(g) for g in sorted(gpus - {0}))
            facts.gpu0_extra = f"process {pid} holds memory on GPU 0 and on GPU {other}"
            facts.gpu0_quote = rows[pid]

    for m in _SMI_L_NAME.finditer(seg.text):  # nvidia-smi -L, even with its UUIDs cut short
        facts.smi_models.setdefault(saturating_int(m["index"]), m["name"].strip())
    try:
        hosts = parse_machine_text(seg.text, source=f"{source}:{seg.first_line}")
    except (RankMapError, ValueError, KeyError, IndexError):
        return
    if hosts and hosts[0].gpus:
        if counted := machine_gpu_count([str(g.nvml_index) for g in hosts[0].gpus]):
            facts.smi_gpus = max(facts.smi_gpus or 0, counted)
        for gpu in hosts[0].gpus:
            if gpu.name and gpu.nvml_index is not None:
                facts.smi_models.setdefault(gpu.nvml_index, gpu.name)
        if any(g.mig_mode for g in hosts[0].gpus):
            facts.smi_mig = f"{source}:{seg.first_line}: nvidia-smi shows MIG mode enabled"


def _every_gpu(gpus_of: dict[int, set[int]], rows: dict[int, str], facts: DocFacts) -> None:
    """Several processes that each hold memory on the same two or more GPUs: none selected a
    GPU of its own (TensorFlow and JAX take memory on every GPU they see; a PyTorch rank touches
    each GPU it calls); one process on several GPUs is one rank using them by design."""
    gpu_sets = {frozenset(g) for g in gpus_of.values()}
    if len(gpus_of) < 2 or len(gpu_sets) != 1 or facts.every_gpu is not None:
        return
    gpus = sorted(next(iter(gpu_sets)))
    if len(gpus) >= 2:
        listed = ", ".join(str(g) for g in gpus)
        facts.every_gpu = f"{len(gpus_of)} processes each hold memory on every GPU ({listed})"
        facts.every_gpu_quote = next(iter(rows.values()))


def read_config(seg: Segment, facts: DocFacts) -> None:
    text = seg.text[:MAX_CONFIG_CHARS]
    docs: list[Any] = []
    try:
        import json

        docs = [json.loads(text)]
    except ValueError:
        try:
            import yaml

            docs = list(yaml.safe_load_all(text))[:16]  # a manifest may hold several documents
        except Exception:  # noqa: BLE001 - YAML's errors are many; a bad paste is "not read"
            return
    for doc in docs:
        read_parsed(doc, facts.configs)


def requested_devices(text: str, facts: DocFacts) -> None:
    """What the whole document says of the devices the job was given: GPU UUIDs, a container's
    request, MIG instances a pod requests, a pod spec's CUDA_VISIBLE_DEVICES, the model the
    process printed (``text``: the document, already bounded by read_document)."""
    facts.gpu_uuids = len(set(_GPU_UUID.findall(text)))
    facts.gpus_requested = _requested(text)
    if (named := _DEVICE_NAME_PRINTED.search(text)) is not None:
        facts.device_name_printed = named["name"].strip()
    facts.mig_requested = max((saturating_int(n) for n in _MIG_REQUEST.findall(text)), default=0)
    if (spec := _SPEC_CVD.search(text)) is not None:
        facts.env.setdefault("CUDA_VISIBLE_DEVICES", spec.group("a") or spec.group("b"))
