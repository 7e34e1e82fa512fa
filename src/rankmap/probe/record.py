"""One rank's record: who it is, where it runs, which physical GPU it will use.

:class:`RankRecord` is plain data (JSON through :meth:`RankRecord.to_json` /
:func:`record_from_dict`) so rank 0 can collate records from every rank without torch.
:func:`rankmap.adapters.rank_record.collect_record` is the I/O side: environment, host identity,
network interfaces and the device (see :mod:`rankmap.adapters.device`).
"""

from __future__ import annotations

import json
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
        return _from_values(doc)
    if isinstance(doc, dict):
        return record_from_dict(doc)
    raise ValueError("not a rankmap probe record")


def record_from_json(data: bytes | str) -> RankRecord:
    """Parse one record sent through the store."""
    return _decode(json.loads(data))


def probe_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The NCCL_*/CUDA_*/TORCH_NCCL_* variables, redacted."""
    return redact_env({k: v for k, v in environ.items() if k.startswith(ENV_PREFIXES)})
