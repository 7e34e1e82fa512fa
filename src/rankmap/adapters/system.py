"""This machine's identity as NCCL and people see it: hostname, boot_id, machine-id, container.

NCCL hashes ``gethostname()`` (full, not cut at the first dot) + ``/proc/sys/kernel/random/boot_id``,
or only ``NCCL_HOSTID`` when set (reference/nccl.md (b)). ``root`` lets tests point at a fake
filesystem tree.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping
from pathlib import Path

from rankmap.model import HostIdentity

_CGROUP_MARKERS = (
    ("kubepods", "kubernetes"),
    ("docker", "docker"),
    ("libpod", "podman"),
    ("containerd", "containerd"),
    ("cri-o", "cri-o"),
    ("lxc", "lxc"),
)
_CONTAINER_ID = re.compile(r"([0-9a-f]{64})")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def collect_host_identity(
    environ: Mapping[str, str], *, root: Path = Path("/"), hostname: str | None = None
) -> HostIdentity:
    """Read hostname, boot_id, machine-id and container evidence; never raises."""
    name = hostname if hostname is not None else socket.gethostname()
    boot_id = _read(root / "proc/sys/kernel/random/boot_id")
    machine_id = _read(root / "etc/machine-id") or _read(root / "var/lib/dbus/machine-id")
    kind, cid, evidence = detect_container(environ, root=root)
    return HostIdentity(
        hostname=name,
        boot_id=boot_id or None,
        machine_id=machine_id or None,
        nccl_hostid=environ.get("NCCL_HOSTID") or None,
        container=kind,
        container_id=cid,
        container_evidence=tuple(evidence),
    )


def detect_container(
    environ: Mapping[str, str], *, root: Path = Path("/")
) -> tuple[str | None, str | None, list[str]]:
    """(kind, container id, evidence sentences). ``kind`` is None on bare metal / a VM."""
    evidence: list[str] = []
    kind: str | None = None
    if (root / ".dockerenv").exists():
        kind = "docker"
        evidence.append("/.dockerenv exists")
    if (root / "run/.containerenv").exists():
        kind = kind or "podman"
        evidence.append("/run/.containerenv exists")
    if environ.get("KUBERNETES_SERVICE_HOST"):
        kind = "kubernetes"
        evidence.append("KUBERNETES_SERVICE_HOST is set")
    container_env = environ.get("container")
    if container_env:
        kind = kind or container_env
        evidence.append(f"container={container_env} is set")
    cid: str | None = None
    cgroup = _read(root / "proc/1/cgroup") or ""
    for marker, name in _CGROUP_MARKERS:
        if marker in cgroup:
            kind = kind if kind == "kubernetes" else (kind or name)
            evidence.append(f"/proc/1/cgroup mentions {marker}")
            break
    mountinfo = _read(root / "proc/self/mountinfo") or ""
    for text in (cgroup, mountinfo):
        match = _CONTAINER_ID.search(text)
        if match and kind:
            cid = match.group(1)[:12]
            break
    return kind, cid, evidence
