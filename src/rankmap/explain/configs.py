"""Configs pasted with a failure: accelerate, Kubernetes pod specs, DeepSpeed hostfiles.

Read from the parsed YAML/JSON of ``config`` segments (:mod:`rankmap.explain.docread`) and, for
the line forms, from the whole text: ``accelerate env``'s ``- key: value`` lines
(reference/launchers.md §3) and hostfile lines ``worker-1 slots=4`` (§4). Each fact then scores
through :func:`config_points`, with the reference line it rests on. Pure and bounded; never
raises on any document shape.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

MAX_NODES = 5000  # YAML/JSON nodes walked per config
MAX_CHARS = 4 * 1024 * 1024
ACCELERATE_KEYS = ("num_processes", "gpu_ids", "num_machines", "distributed_type", "machine_rank")
_ACCELERATE_LINE = re.compile(
    r"^[ \t>*_-]*(?P<k>num_processes|gpu_ids|num_machines|distributed_type|machine_rank)\s*:\s*"
    r"['\"]?(?P<v>[\w.,-]+)",
    re.MULTILINE,
)
_HOSTFILE_LINE = re.compile(
    r"^\s*(?P<host>[A-Za-z0-9][\w.-]*)\s+slots\s*=\s*(?P<n>\d{1,4})\s*$", re.M
)
_GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")


@dataclass
class ConfigFacts:
    """What the configs of a paste say (all optional)."""

    accelerate: dict[str, str] = field(default_factory=dict)
    pod_gpus: int | None = None  # a pod spec's nvidia.com/gpu (or amd.com/gpu) limit
    pod_env: dict[str, str] = field(default_factory=dict)  # NVIDIA_/CUDA_VISIBLE_DEVICES in env:
    host_network: bool = False
    privileged: bool = False
    hostfile: dict[str, int] = field(default_factory=dict)  # DeepSpeed hostfile: host -> slots


def read_text(text: str, facts: ConfigFacts) -> None:
    """The line forms: ``accelerate env`` key lines and DeepSpeed hostfile lines."""
    text = text[:MAX_CHARS]
    for m in _ACCELERATE_LINE.finditer(text):
        facts.accelerate.setdefault(m.group("k"), m.group("v"))
    for m in _HOSTFILE_LINE.finditer(text):
        if len(facts.hostfile) < 256:
            facts.hostfile[m.group("host")] = int(m.group("n"))


def read_parsed(doc: Any, facts: ConfigFacts) -> None:
    """A parsed YAML/JSON document: accelerate keys at the top, pod-spec keys anywhere."""
    if isinstance(doc, dict):
        for key in ACCELERATE_KEYS:
            value = doc.get(key)
            if value is not None and not isinstance(value, (dict, list)):
                facts.accelerate[key] = str(value)
    stack: list[Any] = [doc]
    seen = 0
    while stack and seen < MAX_NODES:
        node = stack.pop()
        seen += 1
        if isinstance(node, dict):
            _pod_keys(node, facts)
            stack.extend(v for v in node.values() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend(v for v in node[:MAX_NODES] if isinstance(v, (dict, list)))


def _pod_keys(node: dict[Any, Any], facts: ConfigFacts) -> None:
    for res in _GPU_RESOURCES:
        if res in node:
            n = _int(node[res])
            if n is not None:
                facts.pod_gpus = max(facts.pod_gpus or 0, n)
    name, value = node.get("name"), node.get("value")
    if isinstance(name, str) and name.endswith("VISIBLE_DEVICES") and value is not None:
        facts.pod_env[name] = str(value)[:200]
    if node.get("hostNetwork") is True:
        facts.host_network = True
    if node.get("privileged") is True:
        facts.privileged = True


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdecimal() and len(value.strip()) < 5:
        return int(value.strip())
    return None


def config_machines(facts: ConfigFacts) -> int:
    """The machines a pasted config runs the job on (accelerate's num_machines, the hosts of a
    DeepSpeed hostfile); 0 when it does not say."""
    return max(_int(facts.accelerate.get("num_machines", "")) or 0, len(facts.hostfile))


def _gpu_ids(value: str) -> int | None:
    ids = [p for p in value.split(",") if p.strip()]
    return len(ids) if ids and all(p.strip().isdecimal() for p in ids) else None


def config_points(
    facts: ConfigFacts, nproc: int | None, gpus: int | None
) -> list[tuple[str, float, str]]:
    """(category, points, reason) for what the configs show; ``nproc`` processes per node of
    the launch, ``gpus`` GPUs per node stated elsewhere."""
    out = _accelerate_points(facts.accelerate, gpus) + _pod_points(facts, nproc)
    slots = max(facts.hostfile.values(), default=0)
    if gpus and slots > gpus:
        out.append(
            (
                "oversubscribed",
                3.0,
                f"a DeepSpeed hostfile gives {slots} slots on a host with {gpus} GPU(s) "
                "(reference/launchers.md §4)",
            )
        )
    return out


def _accelerate_points(acc: dict[str, str], gpus: int | None) -> list[tuple[str, float, str]]:
    """``gpus``: GPUs per machine stated elsewhere (an nvidia-smi table, the prose)."""
    out: list[tuple[str, float, str]] = []
    procs = _int(acc.get("num_processes", ""))
    machines = _int(acc.get("num_machines", "")) or 1
    ids = _gpu_ids(acc.get("gpu_ids", ""))
    if procs and ids and procs // max(machines, 1) > ids:
        # accelerate exports gpu_ids as CUDA_VISIBLE_DEVICES: a list narrower than the machine
        # is the user's list against the process count, not a machine with too few GPUs
        narrowed = gpus is not None and gpus > ids
        out.append(
            (
                "visible_devices_mismatch" if narrowed else "oversubscribed",
                4.0,
                f"accelerate num_processes {procs} on {machines} machine(s) with gpu_ids listing "
                f"{ids} GPU(s)"
                + (f" of the {gpus} the machine has" if narrowed else "")
                + ": more processes than GPUs (reference/launchers.md §3: gpu_ids is exported as "
                "CUDA_VISIBLE_DEVICES, num_processes is not validated against it)",
            )
        )
    elif procs and gpus and not ids and procs // max(machines, 1) > gpus:
        # (review 72: num_processes 8 on "2x RTX 4090")
        out.append(
            (
                "oversubscribed",
                4.0,
                f"accelerate num_processes {procs} on {machines} machine(s) of {gpus} GPU(s): more "
                "processes than GPUs (reference/launchers.md §3, num_processes is the total over "
                "all machines)",
            )
        )
    if procs == 1 and acc.get("distributed_type", "").upper() == "MULTI_GPU":
        out.append(
            (
                "launcher_config",
                2.0,
                "accelerate distributed_type MULTI_GPU with num_processes 1: one process "
                "(num_processes is the total over all machines, reference/launchers.md §3)",
            )
        )
    return out


def _pod_points(facts: ConfigFacts, nproc: int | None) -> list[tuple[str, float, str]]:
    out: list[tuple[str, float, str]] = []
    if facts.pod_gpus is not None:
        if nproc and nproc > facts.pod_gpus:
            out.append(
                (
                    "oversubscribed",
                    4.0,
                    f"{nproc} processes in a pod that requests nvidia.com/gpu: {facts.pod_gpus} "
                    "(reference/cuda_devices.md §4: the device plugin gives the pod only those)",
                )
            )
        if "NVIDIA_VISIBLE_DEVICES" in facts.pod_env:
            out.append(
                (
                    "container_mapping",
                    4.0,
                    "the pod spec sets NVIDIA_VISIBLE_DEVICES itself next to an nvidia.com/gpu "
                    "request: the device plugin sets that variable to the GPUs it allocated "
                    "(reference/cuda_devices.md §4)",
                )
            )
    if "CUDA_VISIBLE_DEVICES" in facts.pod_env:
        out.append(
            (
                "visible_devices_mismatch",
                2.0,
                f"the pod spec sets CUDA_VISIBLE_DEVICES={facts.pod_env['CUDA_VISIBLE_DEVICES']}: "
                "inside the container GPUs are renumbered from 0 (reference/cuda_devices.md §1, §3)",
            )
        )
    if facts.host_network:
        out.append(("host_identity", 1.0, "hostNetwork: true (pods share the node's hostname)"))
    return out
