"""``rankmap doctor``'s core: facts about one machine and one environment -> :class:`Report`.

Pure: the inventory (NVML or a profile), host identity, versions and the environment come in as
values (:class:`DoctorFacts`); nothing here reads ``os.environ``, NVML or the filesystem.

Report sections (top-level JSON keys besides the contract's): ``inventory``, ``visible_devices``,
``visible_devices_notes``, ``visibility``, ``launcher_env``, ``gpu_env``, ``host_identity``,
``container``, ``versions``, ``processes``, ``inventory_notes``, ``simulated``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from rankmap.doctor.versions import Versions, compatibility
from rankmap.findings import Finding, Report, finding
from rankmap.model import Host, HostIdentity, Inventory
from rankmap.redact import redact_env
from rankmap.visibility import PCI_BUS_ID, VisibleView, resolve_visible

# Variables set by launchers / schedulers (reference/launchers.md): shown as "launcher env".
LAUNCHER_NAMES = frozenset(
    {
        "RANK",
        "LOCAL_RANK",
        "WORLD_SIZE",
        "LOCAL_WORLD_SIZE",
        "GROUP_RANK",
        "GROUP_WORLD_SIZE",
        "ROLE_RANK",
        "ROLE_NAME",
        "ROLE_WORLD_SIZE",
        "NODE_RANK",
        "MASTER_ADDR",
        "MASTER_PORT",
        "MPI_LOCALRANKID",
        "MPI_LOCALNRANKS",
    }
)
LAUNCHER_PREFIXES = (
    "TORCHELASTIC_",
    "SLURM_",
    "OMPI_COMM_WORLD_",
    "OMPI_UNIVERSE_",
    "PMI_",
    "PMIX_",
    "MV2_COMM_WORLD_",
    "ACCELERATE_",
)
GPU_ENV_PREFIXES = ("NCCL_", "CUDA_", "TORCH_", "PYTORCH_", "NVIDIA_")
# Present when a launcher (not the user's shell) started this process.
_UNDER_LAUNCHER = ("TORCHELASTIC_RUN_ID", "SLURM_STEP_ID", "OMPI_COMM_WORLD_RANK", "PMI_RANK")
_DROP_REASONS_RM202 = {"invalid", "negative", "out_of_range", "ambiguous", "unknown_uuid"}


@dataclass(frozen=True)
class SystemFacts:
    """What the machine says besides NVML: identity/container and this Python's versions."""

    identity: HostIdentity
    versions: Versions = field(default_factory=Versions)


@dataclass(frozen=True)
class DoctorFacts:
    """Everything ``doctor`` reasons about."""

    host: Host | None
    env: Mapping[str, str]
    identity: HostIdentity
    versions: Versions
    inventory_findings: tuple[Finding, ...] = ()
    simulated: bool = False
    source: str = "nvml"
    inventory_notes: tuple[str, ...] = ()


def select_env(
    env: Mapping[str, str], *, names: frozenset[str], prefixes: tuple[str, ...]
) -> dict[str, str]:
    """The matching variables, sorted and redacted."""
    picked = {k: v for k, v in env.items() if k in names or k.startswith(prefixes)}
    return dict(sorted(redact_env(picked).items()))


def build_report(facts: DoctorFacts) -> Report:
    """Inventory, logical -> physical view, env, identity, container, versions and findings."""
    report = Report(command="doctor")
    host = facts.host
    hostname = host.hostname if host else (facts.identity.hostname or "localhost")
    report.findings.extend(
        f if f.hosts else replace(f, hosts=(hostname,)) for f in facts.inventory_findings
    )
    view = resolve_visible(host, facts.env) if host is not None else None
    report.sections["simulated"] = facts.simulated
    report.sections["source"] = facts.source
    report.sections["inventory"] = Inventory((host,) if host else ()).to_dict()
    report.sections["inventory_notes"] = list(facts.inventory_notes)
    report.sections.update(_visibility_sections(view))
    report.sections["launcher_env"] = select_env(
        facts.env, names=LAUNCHER_NAMES, prefixes=LAUNCHER_PREFIXES
    )
    report.sections["gpu_env"] = select_env(facts.env, names=frozenset(), prefixes=GPU_ENV_PREFIXES)
    report.sections["host_identity"] = facts.identity.to_dict()
    report.sections["container"] = _container_section(facts.identity, host)
    verdict, version_findings = compatibility(facts.versions, hosts=(hostname,))
    report.sections["versions"] = {
        **facts.versions.to_dict(),
        "verdict": verdict,
        "verdict_reason": _verdict_reason(verdict, facts),
        "nccl_note": _nccl_note(facts.env),
    }
    report.sections["processes"] = _processes(host)
    if host is not None and view is not None:
        report.findings.extend(visibility_findings(host, view, facts.env))
        report.findings.extend(gpu_findings(host, view))
    report.findings.extend(version_findings)
    report.findings.extend(environment_findings(facts.env, facts.identity, hostname))
    return report


def _visibility_sections(view: VisibleView | None) -> dict[str, object]:
    if view is None:
        return {
            "visible_devices": [],
            "visible_devices_notes": ["No GPU inventory: the logical -> physical view is unknown."],
            "visibility": None,
        }
    return {
        "visible_devices": view.to_dict_list(),
        "visible_devices_notes": list(view.notes),
        "visibility": {
            "cuda_visible_devices": view.cuda_visible_devices,
            "cuda_device_order": view.cuda_order,
            "order_differs": view.order_differs,
            "order_inferred": view.order_inferred,
            "hidden_all": view.hidden_all,
            "dropped": [{"entry": d.entry, "reason": d.reason} for d in view.dropped],
        },
    }


def _verdict_reason(verdict: str, facts: DoctorFacts) -> str:
    v = facts.versions
    if verdict == "ok":
        return (
            f"the driver supports CUDA {v.cuda_driver_version} >= {v.torch_cuda_version}, "
            "the CUDA torch was built with"
        )
    if verdict == "too_old":
        return (
            f"torch needs CUDA {v.torch_cuda_version}; the driver supports {v.cuda_driver_version}"
        )
    if not v.cuda_driver_version:
        return "the driver's CUDA version is unknown (no NVML / not in the machine description)"
    if facts.simulated and not v.python_version:
        return "torch is not read for a simulated machine (--inherit-env uses this Python's)"
    if not v.torch_version:
        return "torch is not installed in this Python"
    return f"torch {v.torch_version} is a CPU-only build: it needs no CUDA driver"


def _nccl_note(env: Mapping[str, str]) -> str | None:
    # reference/pytorch_nccl.md §4: the NCCL loaded at runtime may be a system lib via LD_PRELOAD.
    preload = env.get("LD_PRELOAD", "")
    if "nccl" in preload.lower():
        return f"LD_PRELOAD={preload}: this libnccl replaces the wheel's at run time"
    return None


def _container_section(identity: HostIdentity, host: Host | None) -> dict[str, object]:
    kind = identity.container
    if kind:
        implication = (
            "GPU indices inside this container are renumbered from 0 and differ from the host's "
            "nvidia-smi indices; PCI bus ids and UUIDs are the host's. Compare GPUs across "
            "containers by UUID or bus id."
        )
    else:
        implication = "Not in a container: indices are the host's nvidia-smi indices."
    return {
        "kind": kind,
        "id": identity.container_id,
        "evidence": list(identity.container_evidence),
        "implication": implication,
        "inventory_view": host.view if host else None,
    }


def _processes(host: Host | None) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for gpu in host.gpus if host else ():
        for p in gpu.processes or ():
            rows.append({"nvml_index": gpu.nvml_index, "pci_bus_id": gpu.pci_bus_id, **p.to_dict()})
    return rows


def _device(host: Host, nvml_index: int) -> str:
    gpu = next((g for g in host.gpus if g.nvml_index == nvml_index), None)
    if gpu is None:
        return str(nvml_index)
    return gpu.pci_bus_id or gpu.uuid


def visibility_findings(host: Host, view: VisibleView, env: Mapping[str, str]) -> list[Finding]:
    """RM203 (all hidden), RM202 (entries dropped), RM204 (order), RM602 (MIG), RM702."""
    out: list[Finding] = []
    cvd = view.cuda_visible_devices
    bad = [d for d in view.dropped if d.reason in _DROP_REASONS_RM202 | {"after_invalid"}]
    dup = [d for d in view.dropped if d.reason == "duplicate"]
    if view.hidden_all:
        out.append(
            finding(
                "RM203",
                f"CUDA_VISIBLE_DEVICES={cvd!r} hides every GPU on {host.hostname}",
                detail=" ".join(d.note for d in view.dropped)
                or "No entry names a GPU, so CUDA sees no device.",
                hosts=[host.hostname],
            )
        )
    elif bad or dup:
        entries = [e for d in bad + dup for e in d.entry.split(",")]
        out.append(
            finding(
                "RM202",
                f"CUDA_VISIBLE_DEVICES entries dropped: {', '.join(entries)}",
                detail=" ".join(d.note for d in bad + dup)
                + f" The process sees {len(view.devices)} GPU(s): nvidia-smi "
                + f"{[d.nvml_index for d in view.devices]}.",
                hosts=[host.hostname],
                fix="List only existing GPUs by index or full UUID (see `nvidia-smi -L`), e.g. "
                f"CUDA_VISIBLE_DEVICES={','.join(str(d.nvml_index) for d in view.devices)}"
                + (" with CUDA_DEVICE_ORDER=PCI_BUS_ID" if view.order_differs else ""),
            )
        )
    if view.order_differs and view.cuda_order != PCI_BUS_ID:
        out.append(_order_finding(host, view))
    mig = [d for d in view.dropped if d.reason in ("mig_single", "mig_no_instances")]
    if mig:
        out.append(
            finding(
                "RM602",
                f"{len(mig)} entr{'y is' if len(mig) == 1 else 'ies are'} not visible because of MIG",
                detail=" ".join(d.note for d in mig),
                hosts=[host.hostname],
            )
        )
    container = [d for d in view.dropped if d.reason == "container"]
    if container:
        out.append(
            finding(
                "RM702",
                f"NVIDIA_VISIBLE_DEVICES={env.get('NVIDIA_VISIBLE_DEVICES', '')!r} names GPUs "
                "that do not exist",
                detail=" ".join(d.note for d in container),
                hosts=[host.hostname],
            )
        )
    return out


def _order_finding(host: Host, view: VisibleView) -> Finding:
    from rankmap.visibility import fastest_first_order

    fastest, _ = fastest_first_order(host, host.gpus)
    first = fastest[0]
    pairs = ", ".join(f"cuda:{i} = GPU {g.nvml_index}" for i, g in enumerate(fastest))
    how = "inferred from the GPU models" if view.order_inferred else "recorded on this machine"
    return finding(
        "RM204",
        f"cuda:0 is nvidia-smi GPU {first.nvml_index} ({first.name or first.uuid}), not GPU 0",
        detail=f"CUDA_DEVICE_ORDER is FASTEST_FIRST (the default); CUDA's order ({how}): {pairs}.",
        devices=[g.pci_bus_id or g.uuid for g in fastest],
        hosts=[host.hostname],
    )


def gpu_findings(host: Host, view: VisibleView) -> list[Finding]:
    """RM603 (MIG enabled) for every GPU, RM010 (busy) for every GPU this process sees."""
    out: list[Finding] = []
    for gpu in host.gpus:
        if gpu.mig_mode:
            out.append(
                finding(
                    "RM603",
                    f"GPU {gpu.nvml_index} ({gpu.name or gpu.uuid}) has MIG enabled with "
                    f"{len(gpu.mig_devices)} instance(s)",
                    detail="A process sees one MIG instance, not the whole GPU; NCCL treats MIG "
                    "instances of one GPU as the same device.",
                    devices=[_device(host, gpu.nvml_index)],
                    hosts=[host.hostname],
                )
            )
    seen: set[int] = set()
    for dev in view.devices:
        busy = next((g for g in host.gpus if g.nvml_index == dev.nvml_index), None)
        # a display's Xorg / desktop shell (nvidia-smi Type G) is no CUDA work on the GPU
        running = [p for p in (busy.processes or ()) if not p.graphics_only] if busy else []
        if busy is None or busy.nvml_index in seen or not running:
            continue
        seen.add(busy.nvml_index)
        procs = ", ".join(
            f"pid {p.pid} {p.name or '?'}"
            + (f" {p.used_memory_mib} MiB" if p.used_memory_mib is not None else "")
            for p in running
        )
        out.append(
            finding(
                "RM010",
                f"GPU {busy.nvml_index} ({_device(host, busy.nvml_index)}) already holds "
                f"{len(running)} process(es)",
                detail=f"cuda:{dev.cuda_index} of this process is busy: {procs}.",
                devices=[_device(host, busy.nvml_index)],
                hosts=[host.hostname],
            )
        )
    return out


def environment_findings(
    env: Mapping[str, str], identity: HostIdentity, hostname: str
) -> list[Finding]:
    """RM703 (container), RM880 (NCCL_HOSTID), RM980 (launcher variables left in the shell)."""
    out: list[Finding] = []
    if identity.container:
        out.append(
            finding(
                "RM703",
                f"Running in a {identity.container} container: GPU indices are renumbered from 0",
                detail="Evidence: " + "; ".join(identity.container_evidence) + "."
                if identity.container_evidence
                else "",
                hosts=[hostname],
            )
        )
    if identity.nccl_hostid:
        out.append(
            finding(
                "RM880",
                f"NCCL_HOSTID={identity.nccl_hostid!r} replaces this machine's host identity",
                detail="NCCL hashes only NCCL_HOSTID (not hostname + boot_id) to decide which "
                "ranks share a host; every machine with the same value is treated as one host.",
                hosts=[hostname],
            )
        )
    stale = [k for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE") if k in env]
    if stale and not any(k in env for k in _UNDER_LAUNCHER):
        out.append(
            finding(
                "RM980",
                f"Launcher variables are set in this shell: {', '.join(stale)}",
                detail="No launcher (torchrun, srun, mpirun) started this process, yet "
                + ", ".join(f"{k}={env[k]}" for k in stale)
                + " are exported; every process started from this shell inherits them.",
                hosts=[hostname],
            )
        )
    return out
