"""The one authority for "two ranks on one GPU" and "a CUDA index out of range".

``check`` (a simulated launch), ``probe`` (what every rank reports) and ``explain`` (what a log
shows) each collect the facts they have into :class:`SharedGpuFacts` / :class:`OrdinalFacts` and
ask this module which finding code (and so which category) the root cause is. The NCCL and CUDA
messages those failures print are built here too, for every NCCL version (reference/nccl.md (a)).

Facts a caller does not know stay ``None`` / ``False``: the decision then falls to the next rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rankmap.categories import CATEGORIES
from rankmap.pci import nccl_form

# --- messages (reference/nccl.md (a): "Message formats by version") ---------------------------
DUP_230 = (
    "Multiple Ranks are using the same GPU/Partition. Set NCCL_MULTI_RANK_GPU_ENABLE=1 to "
    "enable this configuration."
)
ORDINAL = "RuntimeError: CUDA error: invalid device ordinal"
NO_GPU = "RuntimeError: No CUDA GPUs are available"
NCCL_UNTIL_229 = "nccl<=2.29"  # 2.5.6 - 2.29.7: names both ranks and the bus id
NCCL_FROM_230 = "nccl>=2.30"  # 2.30.3+: no identifiers, unless NCCL_MULTI_RANK_GPU_ENABLE=1


def nccl_device(pci_bus_id: str | None, uuid: str | None) -> str:
    """What NCCL prints for a device: the bus id as ``%lx`` (``4f000``), else the GPU UUID."""
    return nccl_form(pci_bus_id) if pci_bus_id else (uuid or "?")


def duplicate_line(rank: int, peer: int, device: str) -> str:
    """NCCL 2.5.6-2.29.7's WARN text; ``rank`` is the reporting rank, ``peer`` the lowest other."""
    return f"Duplicate GPU detected : rank {rank} and rank {peer} both on CUDA device {device}"


def duplicate_lines(ranks: Sequence[int], device: str) -> list[tuple[int, str]]:
    """(rank, line) for every rank of one colliding group: each names the lowest other rank."""
    ordered = sorted(ranks)
    if len(ordered) < 2:
        return []
    out = []
    for r in ordered:
        peer = ordered[0] if r != ordered[0] else ordered[1]
        out.append((r, duplicate_line(r, peer, device)))
    return out


def multi_rank_refused(env_value: str | None) -> bool:
    """NCCL >= 2.30 refuses ranks sharing one GPU unless NCCL_MULTI_RANK_GPU_ENABLE=1."""
    return env_value != "1"


def cuda_error_line(error: str) -> str:
    """The line a process prints for a device-selection failure rankmap predicts."""
    if error == "invalid device ordinal":
        return ORDINAL
    if error == "no CUDA GPUs are available":
        return NO_GPU
    return error


# --- which root cause ---------------------------------------------------------------------------
# Static selection kinds (check/script_scan) that decide a cause on their own.
NO_SELECTION = "none"
CONSTANT = "constant"
GLOBAL_RANK = "global_rank"


@dataclass(frozen=True)
class SharedGpuFacts:
    """What is known about one group of >= 2 ranks on one GPU of one NCCL host."""

    hosts_merged: bool = False  # ranks of different machines in one NCCL host (NCCL_HOSTID ...)
    mig_siblings: bool = False  # distinct MIG instances of one physical GPU
    each_sees_one: bool = False  # every rank of the group sees exactly one GPU of its own
    per_process: bool = False  # CUDA_VISIBLE_DEVICES is set per process (launcher or by hand)
    launcher_var_missing: bool = False  # the variable the script reads is not set by the launcher
    arg_default: bool = False  # the --local_rank argument was never passed: its default stood in
    selection: str | None = None  # static: none | constant | global_rank | (anything else)
    narrowed: bool = False  # CUDA_VISIBLE_DEVICES hides GPUs that would fit the process count
    wraps: bool | None = None  # observed index == local_rank % visible count (None: not known)
    stayed_on_default: bool = False  # observed: the ranks never selected a device (cuda:0)


def shared_gpu_code(f: SharedGpuFacts) -> str:
    """The code of the root cause; most specific evidence first.

    ``wraps=None`` (a simulation, where ranks that collide while selecting their local rank can
    only have wrapped) ends in RM101; an observation that shows no wrap ends in RM103.
    """
    rules: tuple[tuple[bool, str], ...] = (
        (f.hosts_merged, "RM801"),
        (f.mig_siblings, "RM601"),
        (f.each_sees_one, "RM503"),
        (f.launcher_var_missing, "RM903"),
        (f.arg_default, "RM901"),
        (f.selection == NO_SELECTION, "RM301"),
        (f.selection == CONSTANT, "RM302"),
        (f.selection == GLOBAL_RANK, "RM401"),
        (f.per_process, "RM503"),
        (f.narrowed, "RM201"),
        (f.wraps is not False, "RM101"),
        (f.stayed_on_default, "RM301"),
    )
    return next((code for hit, code in rules if hit), "RM103")


@dataclass(frozen=True)
class OrdinalFacts:
    """What is known about a rank whose CUDA index does not exist in its process."""

    no_devices: bool = False  # the process sees no GPU at all
    # the script writes CUDA_VISIBLE_DEVICES from the global rank (past the node's GPUs)
    cvd_from_global_rank: bool = False
    read_error: bool = False  # the index could not even be read (KeyError / ValueError)
    selection: str | None = None  # global_rank when the index is (or is read as) the global rank
    via_cvd: bool = False  # the index is an entry of CUDA_VISIBLE_DEVICES (a physical index)
    per_process: bool = False  # each process sees only its own GPU(s)
    narrowed: bool = False  # CUDA_VISIBLE_DEVICES hides GPUs the node has
    mig_listed: bool = False  # the visible list names several MIG instances (CUDA shows one)
    # the process sees one MIG instance of a node that has several: the index counts instances
    mig_hidden: bool = False


def ordinal_code(f: OrdinalFacts) -> str:
    """The code of the root cause of an out-of-range (or unreadable) device index."""
    rules: tuple[tuple[bool, str], ...] = (
        (f.no_devices and f.cvd_from_global_rank, "RM401"),
        (f.no_devices, "RM203"),
        # a variable the launcher does not set (KeyError) or sets to something else (ValueError):
        # RM903 under any launcher (RM905 is two processes claiming one rank)
        (f.read_error, "RM903"),
        (f.via_cvd, "RM240"),
        (f.selection == GLOBAL_RANK, "RM401"),
        (f.selection == CONSTANT, "RM302"),
        # CUDA enumerates one MIG instance per process (reference/cuda_devices.md, MIG)
        (f.mig_listed or f.mig_hidden, "RM602"),
        (f.per_process, "RM501"),
        (f.narrowed, "RM201"),
    )
    return next((code for hit, code in rules if hit), "RM102")


def as_shared_gpu(code: str) -> str:
    """The duplicate-GPU code of a cause first seen as an ordinal failure.

    A launch predicted to fail with ``invalid device ordinal`` whose log shows ranks sharing a GPU
    instead: the script wraps the index, so too many processes show as RM101, not RM102.
    """
    return "RM101" if code == "RM102" else code


# Categories whose error findings are a root cause of a shared GPU / an ordinal failure.
SHARED_GPU_CATEGORIES = frozenset(CATEGORIES) - {"version_mismatch", "other"}
ORDINAL_CATEGORIES = frozenset(
    {
        "oversubscribed",
        "visible_devices_mismatch",
        "global_rank_as_device",
        "per_process_visible_devices",
        "mig",
        "launcher_config",
        "host_identity",
    }
)
# Candidate causes explain weighs (its own key -> code): one table per symptom.
SHARED_GPU_CAUSES: tuple[tuple[str, str], ...] = (
    ("RM201", "RM201"),
    ("oversub", "RM101"),
    ("RM301", "RM301"),
    ("RM302", "RM302"),
    ("RM401", "RM401"),
    ("mig", "RM601"),
    ("RM801", "RM801"),
    ("per_process", "RM503"),
    ("nested", "RM904"),
)
ORDINAL_CAUSES: tuple[tuple[str, str], ...] = (
    ("RM201", "RM201"),
    ("oversub", "RM102"),
    ("RM301", "RM301"),
    ("RM302", "RM302"),
    ("RM401", "RM401"),
    ("mig", "RM640"),
    ("RM801", "RM801"),
    ("per_process", "RM501"),
    ("nested", "RM904"),
    ("physical", "RM240"),
    ("framework", "RM941"),
)
