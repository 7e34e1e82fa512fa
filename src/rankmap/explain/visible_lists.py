"""Visible-devices lists against what the input shows of the job (combinations of the whole-paste
reader's facts, :mod:`rankmap.explain.combinations` calls them): a list that did not reach the
process (the work seen on GPU 0 that it leaves out, a misspelled name, a list set in code after
CUDA started, "the wrong GPU" under a list the writer chose), neighbours sharing the one GPU a
list leaves, ROCR's list under HIP's, an engine sharded over more GPUs than the machine has.
"""

from __future__ import annotations

import re

from rankmap.explain.context import Context
from rankmap.explain.docfacts import DocFacts
from rankmap.explain.score_model import Scores
from rankmap.findings import Finding
from rankmap.numbers import saturating_int

# Frameworks and schedulers that set each process's list themselves: dask-cuda, jax.distributed
# (local_device_ids, https://jax.readthedocs.io/en/latest/multi_process.html), Slurm's per-task
# binding (launchers.md §5), Ray (each worker's CUDA_VISIBLE_DEVICES, launchers.md §8). Not
# mpirun: it sets no list (launchers.md §6).
LIST_AGENTS = (
    "dask-cuda",
    "jax-distributed",
    "gpus-per-task",
    "jsrun-gpu-per-set",
    "ray",
    "ray-named",
)


def list_agent(doc: DocFacts) -> str | None:
    """The first of :data:`LIST_AGENTS` the input names, if any."""
    return next((k for k in LIST_AGENTS if k in doc.hits), None)


def _lists_set_for_the_user(doc: DocFacts) -> bool:
    """Whether a scheduler or framework sets the processes' lists (not the writer)."""
    return "scheduler-sets-cvd" in doc.hits or list_agent(doc) is not None


def writers_list(doc: DocFacts) -> list[str]:
    """The CUDA_VISIBLE_DEVICES entries the paste sets, else the list a sentence or code says
    was set."""
    return [e for e in doc.cvd_entries() if e] or _told_list(doc)


def list_not_applied(doc: DocFacts | None, s: Scores) -> None:
    """The reporter narrows CUDA_VISIBLE_DEVICES and sees a GPU of the list idle, or the work on
    GPU 0 that the list leaves out: the list did not reach the process, which sees every GPU and
    uses the first (set after CUDA initialised, overwritten, misspelled or not exported), or
    nvidia-smi and CUDA number the GPUs differently (CUDA_DEVICE_ORDER; reference/cuda_devices.md
    §1-2). What a message says ("OOM on GPU 0") is no such sighting: PyTorch names the first
    visible GPU "GPU 0" under any list. Not where a scheduler or framework sets the lists."""
    if doc is None or _lists_set_for_the_user(doc):
        return
    if "cvd-misspelled" in doc.hits and not doc.cvd_spelled:
        s.failure = s.mapping_failure = True
        hit = doc.hits["cvd-misspelled"]
        s.add(
            "visible_devices_mismatch",
            6.0,
            f"`{hit.excerpt.strip()[:60]}` is not CUDA_VISIBLE_DEVICES: CUDA reads that name only, "
            "so the process sees every GPU (reference/cuda_devices.md §1)",
            doc.quoted("cvd-misspelled"),
        )
        s.name_fix("visible_devices_mismatch", 6.0, _APPLY_THE_LIST)
    if doc.cvd_after_cuda and doc.failed:
        s.failure = s.mapping_failure = True
        s.add(
            "visible_devices_mismatch",
            5.0,
            "the code sets CUDA_VISIBLE_DEVICES after a call that initialised CUDA: the runtime "
            "read the variable then, so the assignment changes nothing in this process "
            "(reference/cuda_devices.md §1)",
            doc.cvd_after_cuda,
        )
        s.name_fix("visible_devices_mismatch", 5.0, _APPLY_THE_LIST)
    if (code_list := _per_process_code_list(doc)) and doc.failed:
        s.failure = s.mapping_failure = True
        s.add(
            "visible_devices_mismatch",
            5.0,
            f"the code sets each process's own list (`{code_list[:70]}`), yet the reporter sees "
            "every process on GPU 0: the assignment did not apply — CUDA had read the variable "
            "before (set after torch initialised CUDA) (reference/cuda_devices.md §1)",
            doc.quoted("cvd-set-in-code"),
        )
        s.name_fix("visible_devices_mismatch", 5.0, _APPLY_THE_LIST)
        s.add(
            "no_set_device",
            -3.0,
            "the code does select each process's GPU (through its own list): the selection is "
            "there, it did not take effect",
        )
    entries = writers_list(doc)
    if not entries or not all(e.isdecimal() for e in entries):
        return
    # a GPU of the list seen idle counts beside the work seen on GPU 0, not alone (before or
    # after a run, or beside fewer processes than GPUs, it is idle for other reasons; review 61)
    idle = _idle_indices(doc) & set(entries) if "gpu0-named-used" in doc.hits else set()
    if "gpu0-named-used" in doc.hits and "0" not in entries:
        why = "the list leaves GPU 0 out, yet the reporter sees the work on GPU 0"
        if idle:
            why += f" and GPU {min(idle)}, which the list names, idle"
        where = doc.quoted("gpu0-named-used")
    elif "wrong-gpu-picked" in doc.hits and any(e != "0" for e in entries):
        # (a list the writer pointed at a GPU of their choice; "Slurm gave me the wrong GPU"
        # under the scheduler's CUDA_VISIBLE_DEVICES=0 is the node's hardware, review 62)
        why = "the reporter says it picks the wrong GPU"
        where = doc.quoted("wrong-gpu-picked")
    else:
        return
    s.failure = s.mapping_failure = True
    s.add(
        "visible_devices_mismatch",
        4.0,
        f"CUDA_VISIBLE_DEVICES={','.join(entries)[:40]}: {why}: the list did not reach the process "
        "(set after CUDA initialised, overwritten, misspelled, not exported) or nvidia-smi numbers "
        "the GPUs otherwise than CUDA (reference/cuda_devices.md §1-2)",
        where,
    )
    s.name_fix("visible_devices_mismatch", 4.0, _APPLY_THE_LIST)


# a value each process computes for itself: its rank, its GPU id (`= str(gpu_id)`,
# `= str(args.local_rank)`), not a literal list or a configured set (`cfg["gpus"]`)
_OWN_VALUE = re.compile(
    r"=\s*[^#\n]*\b\w*(?:rank|localid|gpu_?id|gpu_?idx|gpu_?index|device_?id|dev_?id|gpu)\b",
    re.IGNORECASE,
)


def _per_process_code_list(doc: DocFacts) -> str | None:
    """The code line that sets CUDA_VISIBLE_DEVICES to a value of its own process (an argument,
    a rank) where the reporter sees every process on GPU 0; None otherwise."""
    hit = doc.hits.get("cvd-set-in-code")
    if hit is None or "all-on-gpu0" not in doc.hits:
        return None
    value = hit.excerpt.split("CUDA_VISIBLE_DEVICES", 1)[-1]
    return hit.excerpt.strip() if _OWN_VALUE.search(value) else None


# What says the job runs in a container, where the NVIDIA runtime reads NVIDIA_VISIBLE_DEVICES
_CONTAINER_SIGNS = frozenset({
    "k8s-gpu-resource", "k8s-mig-resource", "device-plugin", "docker-daemon", "docker-gpus",
    "docker-word", "inside-container", "privileged", "cgroup", "host-network", "two-pods-one-node",
    "visible-in-container", "k8s-gpu-unschedulable", "nvd-ignored",
})  # fmt: skip


def container_list_outside(doc: DocFacts | None, s: Scores) -> None:
    """NVIDIA_VISIBLE_DEVICES with no container in sight: the NVIDIA container runtime reads it
    when a container starts (reference/cuda_devices.md §3); CUDA in a process does not, so a
    process started with it on the host sees every GPU (b23 dev: a card "hidden" this way was
    still enumerated)."""
    if doc is None or "nvidia-visible" not in doc.hits or _CONTAINER_SIGNS & set(doc.hits):
        return
    value = doc.env.get("NVIDIA_VISIBLE_DEVICES", "").strip().lower()
    if value in ("all", "none", "void"):
        return  # the container runtime's own words: a setting of an image, not a narrowed list
    s.add(
        "visible_devices_mismatch",
        4.0,
        "NVIDIA_VISIBLE_DEVICES is read by the NVIDIA container runtime when a container starts, "
        "not by CUDA in a process: with no container, the process sees every GPU "
        "(reference/cuda_devices.md §1, §3)",
        doc.quoted("nvidia-visible"),
    )
    s.name_fix(
        "visible_devices_mismatch",
        4.0,
        "Outside a container, narrow the GPUs with CUDA_VISIBLE_DEVICES (the variable CUDA reads), "
        "set before the process starts; NVIDIA_VISIBLE_DEVICES applies to `docker run` / pods",
    )


def hip_within_rocr(ctx: Context, doc: DocFacts | None, s: Scores) -> None:
    """ROCR_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES both set, with a HIP index past ROCR's list:
    ROCR's list applies first and renumbers the GPUs from 0, and HIP's indexes those (PyTorch
    ``torch/cuda/__init__.py`` ``_parse_visible_devices``: "The ROCR env var is processed first
    which then reduces the number of GPUs that HIP can select from"), so ``ROCR=2,3`` with
    ``HIP=2,3`` selects nothing (review 59)."""
    # set together (within a few lines: one run, or the --env flags) in a run that failed; not
    # two attempts, or a run that went well (review 61)
    if not (doc and doc.rocr_hip_together and doc.failed):
        return
    env = {**doc.env, **dict(ctx.env)}
    rocr = [e for e in env.get("ROCR_VISIBLE_DEVICES", "").split(",") if e.strip()]
    hip = [e for e in env.get("HIP_VISIBLE_DEVICES", "").split(",") if e.strip()]
    if not rocr or not hip or not all(e.strip().isdecimal() for e in hip):
        return
    past = [e.strip() for e in hip if saturating_int(e.strip()) >= len(rocr)]
    if not past:
        return
    s.mapping_failure = True
    s.add(
        "visible_devices_mismatch",
        5.0,
        f"HIP_VISIBLE_DEVICES={','.join(hip)[:40]} indexes the {len(rocr)} GPU(s) that "
        f"ROCR_VISIBLE_DEVICES={','.join(rocr)[:40]} leaves, renumbered from 0: index "
        f"{past[0]} selects none (ROCR is applied first)",
    )
    s.name_fix(
        "visible_devices_mismatch",
        5.0,
        "Set one of the two: ROCR_VISIBLE_DEVICES is applied first and renumbers the GPUs it "
        "leaves from 0, and HIP_VISIBLE_DEVICES indexes those (ROCR_VISIBLE_DEVICES=2,3 with "
        "HIP_VISIBLE_DEVICES=0,1, or HIP_VISIBLE_DEVICES=2,3 alone).",
    )


def engine_above_gpus(ctx: Context, doc: DocFacts | None, s: Scores, *, one_machine: bool) -> None:
    """An inference engine told to shard over more GPUs (tensor x pipeline x data parallel) than
    the one machine has (the machine given, an nvidia-smi table, the GPUs the writer states): it
    needs one GPU per shard (reference/launchers.md §1) — more shards than GPUs, whatever the
    engine's own message (review 60: vLLM's placement-group error read as a launcher option)."""
    if doc is None or not doc.engine_gpus or doc.hosts_in_launch > 1:
        return
    if {"multi-node", "ray", "ray-named"} & set(doc.hits):
        return  # a Ray cluster (vLLM's multi-node serving) may hold more GPUs than one machine
    if doc.stated_gpus and doc.stated_gpus >= doc.engine_gpus:
        return  # "16 GPUs in the cluster": the writer counts more than the machine shown
    told = doc.stated_gpus if one_machine else None
    gpus = ctx.gpus_per_node() or doc.smi_gpus or told
    if not gpus or doc.engine_gpus <= gpus:
        return
    s.mapping_failure = True
    s.add(
        "oversubscribed",
        4.0,
        f"the engine shards the model over {doc.engine_gpus} GPUs (tensor x pipeline x data "
        f"parallel) on a machine of {gpus}",
    )
    s.name_fix(
        "oversubscribed",
        4.0,
        f"Shard over the GPUs the machine has: a tensor x pipeline parallel size of {gpus} or "
        "less (`--tensor-parallel-size`), or add machines to the engine's cluster (a Ray cluster "
        "for vLLM's multi-node serving).",
    )


def neighbours_on_many_gpus(doc: DocFacts | None, s: Scores, base: list[Finding]) -> None:
    """Neighbouring ranks on one GPU (causes._neighbours_share: every rank on one GPU) on a
    machine the input shows with two or more GPUs (an nvidia-smi table, the writer's count) and
    no one-GPU list: the processes see several GPUs, so no per-rank selection is left."""
    if doc is None or not base or base[0].code != "RM103":
        return
    if not any("are neighbours" in f.detail for f in base):
        return
    gpus = doc.smi_gpus or doc.stated_gpus or 0
    entries = writers_list(doc)
    if gpus < 2 or len(entries) == 1:
        return
    s.add(
        "no_set_device",
        2.0,
        f"neighbouring ranks share a GPU although the input shows {gpus} GPUs: no per-rank "
        "selection",
        doc.stated_gpus_at if not doc.smi_gpus else None,
    )


def one_listed_gpu_shared(doc: DocFacts | None, s: Scores, base: list[Finding]) -> None:
    """Ranks that share a GPU under a visible-devices list of one GPU the writer set (an export
    in ~/.bashrc, a prefix): every process sees that one GPU, whatever index it selects
    (reference/cuda_devices.md §1) — the list against the process count, not a missing
    selection (review 58). Not where a scheduler or framework sets per-process lists."""
    if doc is None or not base or base[0].code != "RM103" or _lists_set_for_the_user(doc):
        return
    entries = writers_list(doc)
    if len(entries) != 1:
        return
    why = (
        f"CUDA_VISIBLE_DEVICES={entries[0][:20]} leaves every process one GPU: the ranks share it "
        "whatever index they select"
    )
    s.add("visible_devices_mismatch", 3.0, why, doc.quoted("cvd-assigned"))
    s.add("no_set_device", -2.0, why)


_APPLY_THE_LIST = (
    "Set CUDA_VISIBLE_DEVICES in the environment the process starts with (`export` in the same "
    "shell, or `CUDA_VISIBLE_DEVICES=1 python …`; in code only before anything touches CUDA, in a "
    "notebook before the first CUDA call or after a kernel restart), spelled exactly so, and not "
    "overwritten later (a sourced file, a launcher); check it in the process with `python -c "
    "'import os,torch; print(os.environ.get(\"CUDA_VISIBLE_DEVICES\"), torch.cuda.device_count())'`"
    ", and set CUDA_DEVICE_ORDER=PCI_BUS_ID so that CUDA numbers the GPUs as nvidia-smi does."
)

_TOLD_LIST = re.compile(
    r"CUDA_VISIBLE_DEVICES['\"`]?\]?\s*(?:=|to(?: be)?|as)\s*['\"`]?(?P<v>\d+(?:\s*,\s*\d+)*)"
)

_INDEX = re.compile(r"(\d)\s*号|(?:gpu|cuda|device|card)\s?[=:#]?\s?(\d)\b", re.IGNORECASE)


def _told_list(doc: DocFacts) -> list[str]:
    """The list a sentence or code says was set ("I ran `export CUDA_VISIBLE_DEVICES=3`",
    ``os.environ["CUDA_VISIBLE_DEVICES"] = "2"``)."""
    for sid in ("cvd-assigned", "cvd-set-in-code"):
        hit = doc.hits.get(sid)
        m = _TOLD_LIST.search(hit.excerpt) if hit else None
        if m:
            return [e.strip() for e in m.group("v").split(",")]
    return []


def _idle_indices(doc: DocFacts) -> set[str]:
    """The GPU indices the reporter sees idle ("nothing on GPU 3", "2号卡是空的")."""
    hit = doc.hits.get("gpu-seen-idle")
    if hit is None:
        return set()
    spans = [m.group(0) for m in hit.signal.pattern.finditer(hit.excerpt)]
    return {a or b for span in spans for a, b in _INDEX.findall(span)}


# a report that the process runs on another GPU than the one its list names
# (not "all on GPU 0": ranks piled on one GPU is no device selection, review of session 18)
_WRONG_GPU = frozenset({"device-selection-problem", "gpu0-named-used", "cvd-ignored"})


def device_order_on_mixed_gpus(doc: DocFacts | None, s: Scores) -> None:
    """A list of nvidia-smi indices on a machine of mixed GPU models, and the process on another
    card than the one listed (its printed device name, or the writer saying so): CUDA numbers the
    GPUs fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, nvidia-smi by PCI bus, so on mixed
    cards the same index names different GPUs (reference/cuda_devices.md §2; reviews 67, 73)."""
    if doc is None or len(set(doc.smi_models.values())) < 2:
        return
    listed = writers_list(doc)
    if not listed or not all(e.isdecimal() for e in listed) or len(listed) >= len(doc.smi_models):
        return
    order = doc.hits.get("device-order")
    if doc.env.get("CUDA_DEVICE_ORDER", "").upper() == "PCI_BUS_ID" or (
        order is not None and "PCI_BUS_ID" in order.excerpt  # set in code or a sentence
    ):
        return
    meant = doc.smi_models.get(int(listed[0]))
    if meant is None:
        return  # the listed index is not among the GPUs the listing shows
    printed = doc.device_name_printed
    other_card = bool(
        printed and printed.lower() not in meant.lower() and meant.lower() not in printed.lower()
    )
    if not (other_card or _WRONG_GPU & set(doc.hits)):
        return
    s.failure = s.mapping_failure = True  # the process is on another card: an observed state
    why = (
        f"CUDA_VISIBLE_DEVICES={','.join(listed)} names nvidia-smi's GPU {listed[0]} ({meant}) on "
        "a machine of mixed GPU models"
        + (f", yet the process's cuda:0 is a {printed}" if other_card else "")
        + ": CUDA numbers GPUs fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, nvidia-smi by "
        "PCI bus (reference/cuda_devices.md §2)"
    )
    s.add("visible_devices_mismatch", 5.0, why)
    s.name_fix(
        "visible_devices_mismatch",
        5.0,
        "export CUDA_DEVICE_ORDER=PCI_BUS_ID before the process starts, so that CUDA numbers the "
        "GPUs as nvidia-smi does and CUDA_VISIBLE_DEVICES names the card you mean",
    )
