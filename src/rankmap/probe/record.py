"""One rank's record: who it is, where it runs, which physical GPU it will use.

:class:`RankRecord` is plain data (JSON through :meth:`RankRecord.to_json` /
:func:`record_from_dict`) so rank 0 can collate records from every rank without torch.
:func:`rankmap.adapters.rank_record.collect_record` is the I/O side: environment, host identity,
network interfaces and the device (see :mod:`rankmap.adapters.device`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from rankmap.model import HostIdentity
from rankmap.redact import redact_env

ENV_PREFIXES = ("NCCL_", "CUDA_", "TORCH_NCCL_")


@dataclass(frozen=True)
class RankRecord:
    """Everything one rank reports. ``None`` means unknown; tuples keep it hashable-friendly."""

    rank: int
    world_size: int
    local_rank: int | None = None
    local_world_size: int | None = None
    node_rank: int | None = None
    launcher: str = "none"
    pid: int = 0
    # host identity (reference/nccl.md (b))
    hostname: str | None = None
    boot_id: str | None = None
    machine_id: str | None = None
    nccl_hostid: str | None = None
    container: str | None = None
    container_id: str | None = None
    identity_source: str = "system"  # "system" or "profile:<name>"
    addresses: tuple[str, ...] = ()
    # what the process sees
    cuda_visible_devices: str | None = None
    cuda_device_order: str | None = None
    nvidia_visible_devices: str | None = None
    visible_uuids: tuple[str, ...] | None = None  # CUDA order; None: unknown
    # the device this rank uses
    cuda_index: int | None = None
    device_selected_by: str = "local_rank"  # argument | current_device | local_rank | default
    uuid: str | None = None  # GPU UUID, or the MIG UUID
    pci_bus_id: str | None = None
    nvml_index: int | None = None
    mig_parent_uuid: str | None = None
    gpu_name: str | None = None
    device_error: str | None = None
    device_source: str = "none"  # cuda+nvml | cuda | nvml | profile:<name> | none
    device_notes: tuple[str, ...] = ()
    # versions
    torch_version: str | None = None
    cuda_version: str | None = None
    nccl_version: str | None = None
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    rankmap_version: str | None = None
    python_version: str | None = None
    # network
    socket_ifname: str | None = None
    interfaces: tuple[str, ...] | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    problems: tuple[str, ...] = ()
    # the GPUs of this machine (only local rank 0 / single ranks send it): inventory dicts
    gpus: tuple[Mapping[str, Any], ...] | None = None
    probe_ms: float = 0.0
    # this machine's GPU topology in the compact text of rankmap.topology.wire (None: unknown)
    topology: str | None = None

    @property
    def identity(self) -> HostIdentity:
        """Host identity as the model has it."""
        return HostIdentity(
            hostname=self.hostname,
            boot_id=self.boot_id,
            machine_id=self.machine_id,
            nccl_hostid=self.nccl_hostid,
            container=self.container,
            container_id=self.container_id,
        )

    @property
    def nccl_host_key(self) -> str:
        """What NCCL hashes for "same host": NCCL_HOSTID, else hostname + boot_id."""
        if self.nccl_hostid:
            return f"hostid:{self.nccl_hostid}"
        return f"{self.hostname or '?'}|{self.boot_id or ''}"

    @property
    def machine_key(self) -> str:
        """One physical machine (or container with its own hostname): hostname + boot_id."""
        return f"{self.hostname or '?'}|{self.boot_id or ''}"

    @property
    def physical_uuid(self) -> str | None:
        """The physical GPU's UUID (the MIG parent for a MIG instance)."""
        return self.mig_parent_uuid or self.uuid

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (what travels through the store)."""
        out = asdict(self)
        out["env"] = dict(self.env)
        return out

    def to_json(self) -> bytes:
        """Compact JSON bytes for the store: ``[RECORD_TAG, value, ...]`` in field order.

        Positional, not a dict: half the bytes and a third of the parse time on rank 0, which
        reads every rank's record (100,000 ranks: issue 5's 2 s budget).
        """
        values: list[Any] = [RECORD_TAG]
        for name in _NAMES:
            value = getattr(self, name)
            values.append(dict(value) if name == "env" else value)
        return json.dumps(values, separators=(",", ":")).encode()


RECORD_TAG = "rankmap-rec/1"
_NAMES = tuple(f.name for f in fields(RankRecord))
_FIELDS = set(_NAMES)
_DEFAULTS = dict(RankRecord(rank=0, world_size=1).__dict__)
_TUPLE_FIELDS = ("addresses", "device_notes", "problems")
_OPTIONAL_TUPLES = ("visible_uuids", "interfaces", "gpus")


def record_field_names() -> tuple[str, ...]:
    """Field names of :class:`RankRecord`, in order."""
    return _NAMES


# The schema of a record as it arrives from a peer (JSON types), read off the annotations above
# so the dataclass stays the one authority. Records come from other processes - other rankmap
# versions, corrupted stores, hostile peers - and rank 0 must never crash on them.
_NONE = type(None)
_SEQ = (list, tuple)
_KINDS: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "int | None": (int, _NONE),
    "str": (str,),
    "str | None": (str, _NONE),
    "float": (int, float),
    "tuple[str, ...]": _SEQ,
    "tuple[str, ...] | None": (*_SEQ, _NONE),
    "Mapping[str, str]": (dict,),
    "tuple[Mapping[str, Any], ...] | None": (*_SEQ, _NONE),
}
FIELD_TYPES: dict[str, tuple[type, ...]] = {f.name: _KINDS[str(f.type)] for f in fields(RankRecord)}
STR_ITEM_FIELDS = tuple(f.name for f in fields(RankRecord) if str(f.type).startswith("tuple[str"))
MAX_ITEMS = 4096  # per list / env mapping in one record


GPU_MAX_KEYS = 64  # per GPU entry of a peer's inventory
_SCALARS: frozenset[type] = frozenset((str, int, bool, _NONE))
_INDEX: frozenset[type] = frozenset((int, _NONE))
_TEXT: frozenset[type] = frozenset((str, _NONE))
# the inventory keys rank 0 reads (and their JSON types); the other values are written back
GPU_KEYS: dict[str, frozenset[type]] = {
    "nvml_index": _INDEX,
    "uuid": _TEXT,
    "pci_bus_id": _TEXT,
    "name": _TEXT,
}
# (low, high): low <= value < high for ints; low < value < high for probe_ms (NaN fails)
RANK_LIMITS = (0, 2**31)
WORLD_LIMITS = (1, 2**31)
INT_LIMITS = (-(2**31), 2**31)
INT_FIELDS = ("local_rank", "local_world_size", "node_rank", "cuda_index", "nvml_index", "pid")
MS_LIMITS = (-1e12, 1e12)


def _strs(value: Any) -> bool:
    return len(value) <= MAX_ITEMS and all(isinstance(x, str) for x in value)


def json_plain(value: Any, depth: int = 0) -> bool:
    """JSON that writes back as JSON: finite numbers, bounded nesting."""
    if value is None or isinstance(value, (str, int)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if depth >= 4 or not isinstance(value, (list, dict)) or len(value) > 256:
        return False
    items = value.items() if isinstance(value, dict) else enumerate(value)
    return all(isinstance(k, (str, int)) and json_plain(v, depth + 1) for k, v in items)


def _gpu_ok(gpu: Any) -> bool:
    """One GPU of a peer's inventory (rank 0 reads :data:`GPU_KEYS` and writes the entry back
    into its JSON report)."""
    return (
        type(gpu) is dict
        and len(gpu) <= GPU_MAX_KEYS
        and all(type(gpu.get(key)) in kinds for key, kinds in GPU_KEYS.items())
        and all(type(v) in _SCALARS or json_plain(v) for v in gpu.values())
    )


def state_problem(state: Mapping[str, Any]) -> str | None:
    """Why a peer's field values (JSON types) cannot be a record, or ``None`` when they can.

    The schema of a peer's record (one authority; :mod:`rankmap.probe.columns` checks the same
    rules in bulk). Checks every present field's type, the items of lists and of ``env``, list
    sizes, the GPU inventory keys rank 0 reads, and that the numbers are in range. Missing
    fields are fine (an older rankmap): they take their defaults.
    """
    for name, value in state.items():
        allowed = FIELD_TYPES.get(name)
        if allowed is None:
            continue
        if not isinstance(value, allowed) or isinstance(value, bool):
            return f"{name} is {type(value).__name__}"
    for name in STR_ITEM_FIELDS:
        value = state.get(name)
        if value is not None and not _strs(value):
            return f"{name} is not a list of strings"
    env = state.get("env")
    if env is not None and not (len(env) <= MAX_ITEMS and _strs(env) and _strs(env.values())):
        return "env is not a mapping of strings"
    gpus = state.get("gpus")
    if gpus is not None and not (len(gpus) <= MAX_ITEMS and all(_gpu_ok(g) for g in gpus)):
        return "gpus is not a list of GPU entries"
    return _number_problem(state)


def _number_problem(state: Mapping[str, Any]) -> str | None:
    rank, world = state.get("rank", 0), state.get("world_size", 1)
    if (
        not RANK_LIMITS[0] <= rank < RANK_LIMITS[1]
        or not WORLD_LIMITS[0] <= world < WORLD_LIMITS[1]
    ):
        return f"rank {rank} / world size {world} out of range"
    for name in INT_FIELDS:
        value = state.get(name)
        if value is not None and not INT_LIMITS[0] <= value < INT_LIMITS[1]:
            return f"{name} out of range"
    ms = state.get("probe_ms", 0.0)
    if not MS_LIMITS[0] < ms < MS_LIMITS[1]:  # also False for NaN
        return "probe_ms out of range"
    return None


def record_from_state(state: Mapping[str, Any]) -> RankRecord:
    """A record from already-typed field values (tuples where the fields are tuples).

    Bypasses the frozen ``__init__`` (50 ``object.__setattr__`` calls per record): rank 0 builds
    100,000 of these. Missing fields take their defaults; unknown keys are ignored.
    """
    rec = object.__new__(RankRecord)
    if len(state) == len(_NAMES) and all(k in _FIELDS for k in state):
        full = dict(state)
    else:
        full = dict(_DEFAULTS)
        full.update((k, v) for k, v in state.items() if k in _FIELDS)
    object.__setattr__(rec, "__dict__", full)
    return rec


def _from_values(values: list[Any]) -> RankRecord:
    state = dict(zip(_NAMES, values[1:], strict=False))
    for name in _TUPLE_FIELDS:
        state[name] = tuple(state.get(name) or ())
    for name in _OPTIONAL_TUPLES:
        if state.get(name) is not None:
            state[name] = tuple(state[name])
    return record_from_state(state)


def record_from_dict(doc: Mapping[str, Any]) -> RankRecord:
    """Rebuild a record from its dict; unknown keys (newer rankmap) are ignored."""
    kwargs = {k: v for k, v in doc.items() if k in _FIELDS}
    for name in _TUPLE_FIELDS:
        if name in kwargs:
            kwargs[name] = tuple(kwargs[name] or ())
    for name in _OPTIONAL_TUPLES:
        if kwargs.get(name) is not None:
            kwargs[name] = tuple(kwargs[name])
    return RankRecord(**kwargs)


def _decode(doc: Any) -> RankRecord:
    if isinstance(doc, list) and doc and doc[0] == RECORD_TAG:
        state: Mapping[str, Any] = dict(zip(_NAMES, doc[1:], strict=False))
    elif isinstance(doc, dict):
        state = doc
    else:
        raise ValueError("not a rankmap probe record")
    problem = state_problem(state)
    if not problem and not ("rank" in state and "world_size" in state):
        problem = "no rank or world size"
    if problem:
        raise ValueError(f"not a valid rankmap probe record: {problem}")
    if isinstance(doc, dict):
        return record_from_dict(doc)
    return _from_values(doc)


def record_from_json(data: bytes | str) -> RankRecord:
    """Parse one record sent through the store; ``ValueError`` (with the reason) for anything
    that is not a valid record - never another exception."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        return _decode(json.loads(text, parse_constant=_no_constant))
    except RecursionError:
        raise ValueError("not a rankmap probe record: nested too deeply") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def probe_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The NCCL_*/CUDA_*/TORCH_NCCL_* variables, redacted."""
    return redact_env({k: v for k, v in environ.items() if k.startswith(ENV_PREFIXES)})
