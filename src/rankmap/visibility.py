"""What one process sees: CUDA devices in CUDA order, each tied to its physical GPU.

Pure: takes a :class:`~rankmap.model.Host` and an environment mapping, returns a
:class:`VisibleView`. Rules and their sources (reference/cuda_devices.md):

* ``CUDA_VISIBLE_DEVICES`` unset: all GPUs; empty: none; a comma list read left to right and
  cut at the first invalid entry (not a number/UUID, negative, out of range, ambiguous UUID
  prefix); integer entries parsed like ``strtoul`` on a prefix (``1gpu`` = 1); any unique
  ``GPU-`` prefix; ``MIG-`` UUIDs (and the legacy ``MIG-GPU-<uuid>/<gi>/<ci>``); a repeated
  device empties the whole set (PyTorch and nvitop model it so; not in NVIDIA's docs).
* ``CUDA_DEVICE_ORDER``: ``PCI_BUS_ID`` = nvidia-smi order; ``FASTEST_FIRST`` (default) = CUDA's
  heuristic. Integer entries index CUDA's order, not nvidia-smi's.
* MIG: one MIG instance per process ("Only single MIG instance enumeration is supported");
  when any listed entry is a MIG instance or a MIG-enabled GPU only the first such instance is
  visible and plain GPUs are dropped (nvitop's model of the driver; unverified against NVIDIA).
* ``NVIDIA_VISIBLE_DEVICES`` (container runtime) filters a host view before CUDA sees it;
  inside a container GPUs are renumbered from 0 while UUIDs and bus ids stay the host's.
* Slurm ``SLURM_STEP_GPUS``/``SLURM_JOB_GPUS`` hold physical indices; with cgroup
  ``ConstrainDevices=yes`` the job sees only those GPUs, renumbered (gres.html).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rankmap.model import Gpu, Host, MigDevice, MigRef, VisibleDevice
from rankmap.numbers import is_digits, saturating_int

PCI_BUS_ID = "PCI_BUS_ID"
FASTEST_FIRST = "FASTEST_FIRST"


@dataclass(frozen=True)
class DroppedEntry:
    """A CUDA_VISIBLE_DEVICES (or NVIDIA_VISIBLE_DEVICES) entry that did not become a device."""

    entry: str
    reason: str  # invalid | negative | out_of_range | ambiguous | unknown_uuid | after_invalid
    #             | duplicate | mig_single | mig_no_instances | container
    note: str


@dataclass(frozen=True)
class VisibleView:
    """The devices one process sees, in CUDA order, and why anything was dropped."""

    devices: tuple[VisibleDevice, ...]
    notes: tuple[str, ...] = ()
    dropped: tuple[DroppedEntry, ...] = ()
    cuda_order: str = FASTEST_FIRST
    order_differs: bool = False  # FASTEST_FIRST differs from nvidia-smi order on this host
    order_inferred: bool = False  # FASTEST_FIRST order guessed, not recorded on the machine
    cuda_visible_devices: str | None = None
    hidden_all: bool = False  # the variable hides every GPU (empty, -1, duplicates...)

    def by_cuda_index(self, cuda_index: int) -> VisibleDevice | None:
        if 0 <= cuda_index < len(self.devices):
            return self.devices[cuda_index]
        return None

    def to_dict_list(self) -> list[dict[str, object]]:
        return [d.to_dict() for d in self.devices]


@dataclass
class _Entry:
    raw: str
    gpu: Gpu
    mig: MigDevice | None = None


@dataclass
class _Builder:
    notes: list[str] = field(default_factory=list)
    dropped: list[DroppedEntry] = field(default_factory=list)

    def drop(self, entry: str, reason: str, note: str) -> None:
        self.dropped.append(DroppedEntry(entry, reason, note))
        self.notes.append(note)


def resolve_visible(host: Host, env: Mapping[str, str]) -> VisibleView:
    """Exactly what a process with ``env`` sees on ``host``, in CUDA order."""
    b = _Builder()
    base = _container_filter(host, env, b)
    base = _slurm_filter(host, base, env, b)
    order_name = (
        PCI_BUS_ID if env.get("CUDA_DEVICE_ORDER", "").strip() == PCI_BUS_ID else FASTEST_FIRST
    )
    fastest, inferred = fastest_first_order(host, base)
    pci = sorted(base, key=lambda g: g.nvml_index)
    ordered = pci if order_name == PCI_BUS_ID else fastest
    differs = [g.nvml_index for g in fastest] != [g.nvml_index for g in pci]
    if env.get("CUDA_DEVICE_ORDER") not in (None, "", PCI_BUS_ID, FASTEST_FIRST):
        b.notes.append(
            f"CUDA_DEVICE_ORDER={env['CUDA_DEVICE_ORDER']!r} is not a known value; "
            "CUDA uses FASTEST_FIRST."
        )
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    if cvd is None:
        entries = [_Entry(str(i), g) for i, g in enumerate(ordered)]
    else:
        entries = _parse_cvd(cvd, ordered, b)
    hidden_all = cvd is not None and not entries
    devices = _apply_mig(entries, b)
    if cvd is None and not devices and ordered:
        hidden_all = False
    return VisibleView(
        devices=tuple(
            VisibleDevice(
                cuda_index=i,
                nvml_index=e.gpu.nvml_index,
                uuid=e.mig.uuid if e.mig else e.gpu.uuid,
                pci_bus_id=e.gpu.pci_bus_id,
                mig=MigRef(e.mig.uuid, e.gpu.uuid, e.mig.gi, e.mig.ci) if e.mig else None,
            )
            for i, e in enumerate(devices)
        ),
        notes=tuple(b.notes),
        dropped=tuple(b.dropped),
        cuda_order=order_name,
        order_differs=differs,
        order_inferred=inferred,
        cuda_visible_devices=cvd,
        hidden_all=hidden_all,
    )


def fastest_first_order(host: Host, gpus: Sequence[Gpu]) -> tuple[list[Gpu], bool]:
    """CUDA's FASTEST_FIRST order of ``gpus`` and whether it had to be inferred.

    Recorded order (``Host.cuda_fastest_first``) wins. On a homogeneous machine it equals PCI
    order. Otherwise it is inferred as compute capability descending, then PCI order - a claim
    from microsoft/onnxruntime#28066, unverified against NVIDIA (CUDA documents only "fastest
    device first, the rest unspecified").
    """
    pci = sorted(gpus, key=lambda g: g.nvml_index)
    if host.cuda_fastest_first is not None:
        rank = {idx: pos for pos, idx in enumerate(host.cuda_fastest_first)}
        return sorted(pci, key=lambda g: rank.get(g.nvml_index, len(rank) + g.nvml_index)), False
    if len({g.name for g in pci}) <= 1:
        return pci, False

    def key(g: Gpu) -> tuple[float, int]:
        try:
            cc = float(g.compute_capability) if g.compute_capability else 0.0
        except ValueError:
            cc = 0.0
        return (-cc, g.nvml_index)

    return sorted(pci, key=key), True


def _container_filter(host: Host, env: Mapping[str, str], b: _Builder) -> list[Gpu]:
    gpus = list(host.gpus)
    nvd = env.get("NVIDIA_VISIBLE_DEVICES")
    if nvd is None or host.view != "host":
        return gpus
    value = nvd.strip()
    if value == "all":
        return gpus
    if value in ("", "none", "void"):
        b.notes.append(
            f"NVIDIA_VISIBLE_DEVICES={nvd!r}: the container runtime injects no GPU "
            "(none: driver only; void/empty: behaves like runc)."
        )
        return []
    chosen: list[Gpu] = []
    for token in (t.strip() for t in value.split(",")):
        gpu = _match_host_gpu(host, token)
        if gpu is None:
            b.drop(
                token,
                "container",
                f"NVIDIA_VISIBLE_DEVICES entry {token!r} matches no GPU on "
                f"{host.hostname}; the container runtime refuses to start such a container.",
            )
        elif gpu not in chosen:
            chosen.append(gpu)
    # NOTE: inside the container NVML enumerates the injected GPUs in PCI order (unverified:
    # follows "GPUs are renumbered from 0", NVIDIA/nvidia-docker#907).
    chosen.sort(key=lambda g: g.nvml_index)
    b.notes.append(
        f"NVIDIA_VISIBLE_DEVICES={nvd}: the container sees {len(chosen)} GPU(s), renumbered from 0 "
        f"(host nvidia-smi indices {', '.join(str(g.nvml_index) for g in chosen) or 'none'})."
    )
    return chosen


def _match_host_gpu(host: Host, token: str) -> Gpu | None:
    if token.isdecimal():
        idx = int(token)
        return next((g for g in host.gpus if g.nvml_index == idx), None)
    matches = [g for g in host.gpus if g.uuid.startswith(token)] if token.startswith("GPU-") else []
    return matches[0] if len(matches) == 1 else None


def _slurm_filter(host: Host, gpus: list[Gpu], env: Mapping[str, str], b: _Builder) -> list[Gpu]:
    raw = env.get("SLURM_STEP_GPUS") or env.get("SLURM_JOB_GPUS")
    if not raw or host.view != "host":
        return gpus
    try:
        physical = [int(t) for t in raw.split(",") if t.strip()]
    except ValueError:
        b.notes.append(f"SLURM_STEP_GPUS/SLURM_JOB_GPUS={raw!r} is not a list of indices; ignored.")
        return gpus
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    cvd_ints = _leading_ints(cvd) if cvd is not None else None
    if cvd_ints is not None and cvd_ints == physical:
        b.notes.append(
            f"Slurm allocated physical GPUs {raw}; CUDA_VISIBLE_DEVICES uses the same global "
            "indices, so devices are not constrained by cgroup."
        )
        return gpus
    allowed = [g for g in gpus if g.nvml_index in physical]
    b.notes.append(
        f"Slurm allocated physical GPUs {raw}; with cgroup ConstrainDevices=yes the job sees only "
        f"these, renumbered from 0, and CUDA_VISIBLE_DEVICES indexes them."
    )
    return allowed


def _leading_ints(value: str) -> list[int] | None:
    out: list[int] = []
    for token in value.split(","):
        token = token.strip()
        if not is_digits(token):
            return None
        out.append(saturating_int(token))
    return out


def _strtoul_prefix(token: str) -> int | None:
    end = 0
    while end < len(token) and token[end] in "0123456789":
        end += 1
    return saturating_int(token[:end]) if end else None


def _parse_cvd(cvd: str, ordered: list[Gpu], b: _Builder) -> list[_Entry]:
    value = cvd.strip()
    if value == "":
        b.notes.append("CUDA_VISIBLE_DEVICES is set but empty: no CUDA device is visible.")
        return []
    tokens = [t.strip() for t in value.split(",")]
    entries: list[_Entry] = []
    for pos, token in enumerate(tokens):
        entry, reason, note = _parse_token(token, ordered)
        if entry is None:
            b.drop(token, reason, note)
            rest = tokens[pos + 1 :]
            if rest:
                b.drop(
                    ",".join(rest),
                    "after_invalid",
                    f"CUDA stops reading CUDA_VISIBLE_DEVICES at {token!r}; "
                    f"{', '.join(repr(r) for r in rest)} after it "
                    f"{'is' if len(rest) == 1 else 'are'} ignored too.",
                )
            break
        entries.append(entry)
    seen: set[str] = set()
    for e in entries:
        key = e.mig.uuid if e.mig else e.gpu.uuid
        if key in seen:
            b.drop(
                e.raw,
                "duplicate",
                f"CUDA_VISIBLE_DEVICES names {key} more than once: a repeated device makes the whole "
                "set empty, so no CUDA device is visible.",
            )
            return []
        seen.add(key)
    return entries


def _parse_token(token: str, ordered: list[Gpu]) -> tuple[_Entry | None, str, str]:
    if token.startswith("MIG-"):
        return _parse_mig_token(token, ordered)
    if token.startswith("GPU-"):
        matches = [g for g in ordered if g.uuid.startswith(token)]
        if len(matches) == 1:
            return _Entry(token, matches[0]), "", ""
        if matches:
            return (
                None,
                "ambiguous",
                (
                    f"CUDA_VISIBLE_DEVICES entry {token!r} is an ambiguous UUID prefix "
                    f"({len(matches)} GPUs match): it is invalid."
                ),
            )
        return (
            None,
            "unknown_uuid",
            (
                f"CUDA_VISIBLE_DEVICES entry {token!r} matches no GPU this process can see: it is invalid."
            ),
        )
    if token.startswith("-"):
        return (
            None,
            "negative",
            (f"CUDA_VISIBLE_DEVICES entry {token!r} is negative: it ends the list."),
        )
    index = _strtoul_prefix(token)
    if index is None:
        return (
            None,
            "invalid",
            (
                f"CUDA_VISIBLE_DEVICES entry {token!r} is neither an index nor a GPU-/MIG- UUID: "
                "it is invalid."
            ),
        )
    if index >= len(ordered):
        return (
            None,
            "out_of_range",
            (
                f"CUDA_VISIBLE_DEVICES entry {token!r}: index {index} does not exist "
                f"({len(ordered)} GPU(s), indices 0-{len(ordered) - 1})."
                if ordered
                else f"CUDA_VISIBLE_DEVICES entry {token!r}: index {index} does not exist (no GPU)."
            ),
        )
    return _Entry(token, ordered[index]), "", ""


def _parse_mig_token(token: str, ordered: list[Gpu]) -> tuple[_Entry | None, str, str]:
    if token.startswith("MIG-GPU-"):
        # legacy MIG-GPU-<gpu uuid>/<gi>/<ci>
        parts = token[len("MIG-") :].split("/")
        if len(parts) == 3 and parts[1].isdecimal() and parts[2].isdecimal():
            gpu = next((g for g in ordered if g.uuid == parts[0]), None)
            if gpu is not None:
                mig = next(
                    (m for m in gpu.mig_devices if m.gi == int(parts[1]) and m.ci == int(parts[2])),
                    None,
                )
                if mig is not None:
                    return _Entry(token, gpu, mig), "", ""
        return (
            None,
            "unknown_uuid",
            (
                f"CUDA_VISIBLE_DEVICES entry {token!r} names no MIG instance on this machine: invalid."
            ),
        )
    found = [(g, m) for g in ordered for m in g.mig_devices if m.uuid.startswith(token)]
    if len(found) == 1:
        return _Entry(token, found[0][0], found[0][1]), "", ""
    if found:
        return (
            None,
            "ambiguous",
            (
                f"CUDA_VISIBLE_DEVICES entry {token!r} is an ambiguous MIG UUID prefix: it is invalid."
            ),
        )
    return (
        None,
        "unknown_uuid",
        (f"CUDA_VISIBLE_DEVICES entry {token!r} names no MIG instance on this machine: invalid."),
    )


def _apply_mig(entries: list[_Entry], b: _Builder) -> list[_Entry]:
    if not any(e.mig is not None or e.gpu.mig_mode for e in entries):
        return entries
    first: _Entry | None = None
    for e in entries:
        if e.mig is not None:
            first = e
            break
        if e.gpu.mig_mode:
            if e.gpu.mig_devices:
                first = _Entry(e.raw, e.gpu, e.gpu.mig_devices[0])
                break
            b.drop(
                e.raw,
                "mig_no_instances",
                f"GPU {e.gpu.nvml_index} has MIG enabled but no MIG instance: CUDA cannot use it.",
            )
    kept = [first] if first else []
    for e in entries:
        if first is not None and e.raw == first.raw:
            continue
        if e.gpu.mig_mode and not e.gpu.mig_devices:
            continue
        what = f"MIG instance {e.mig.uuid}" if e.mig else f"GPU {e.gpu.nvml_index}"
        b.drop(
            e.raw,
            "mig_single",
            f"{what} is not visible: with MIG, CUDA enumerates a single MIG instance per process "
            f"(only {first.mig.uuid if first and first.mig else 'the first'} is used).",
        )
    return kept
