"""How records travel through the store: a small per-rank part plus a shared, deduplicated part.

Most of a record is the same for every rank of a node (identity, versions, interfaces, the GPU
set it sees, NCCL_*/CUDA_* env). Each rank stores that part under a content digest
(``<prefix>/shared/<digest>``; ranks with equal content write the same key) and its own part
under ``<prefix>/rec/<rank>``. Rank 0 fetches every own part but each shared part once: for
100,000 ranks on 12,500 nodes that is ~5x fewer bytes to fetch and parse (issue 5: collation of
100,000 records within 2 s). Both parts are positional JSON arrays tagged with their format.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from rankmap.probe.record import RankRecord, record_field_names, record_from_state

OWN_TAG = "rankmap-own/1"
SHARED_TAG = "rankmap-shared/1"
DIGEST_LEN = 16  # hex characters of blake2b(digest_size=8)
_OWN_PREFIX = f'["{OWN_TAG}","'.encode()

SHARED_FIELDS = (
    "world_size",
    "local_world_size",
    "node_rank",
    "launcher",
    "hostname",
    "boot_id",
    "machine_id",
    "nccl_hostid",
    "container",
    "container_id",
    "identity_source",
    "addresses",
    "cuda_visible_devices",
    "cuda_device_order",
    "nvidia_visible_devices",
    "visible_uuids",
    "device_source",
    "torch_version",
    "cuda_version",
    "nccl_version",
    "driver_version",
    "cuda_driver_version",
    "rankmap_version",
    "python_version",
    "socket_ifname",
    "interfaces",
    "env",
    "topology",  # per node (rankmap.topology.wire): written by every rank, fetched once
)
OWN_FIELDS = tuple(n for n in record_field_names() if n not in SHARED_FIELDS)
_SHARED_TUPLES = ("addresses", "visible_uuids", "interfaces")
_OWN_TUPLES = ("device_notes", "problems", "gpus")


def _dumps(values: list[Any]) -> bytes:
    return json.dumps(values, separators=(",", ":")).encode()


def encode(record: RankRecord) -> tuple[bytes, bytes, str]:
    """(own part, shared part, digest of the shared part)."""
    shared_values: list[Any] = [SHARED_TAG]
    for name in SHARED_FIELDS:
        value = getattr(record, name)
        shared_values.append(dict(value) if name == "env" else value)
    shared = _dumps(shared_values)
    digest = hashlib.blake2b(shared, digest_size=DIGEST_LEN // 2).hexdigest()
    own = _dumps([OWN_TAG, digest, *(getattr(record, n) for n in OWN_FIELDS)])
    return own, shared, digest


def digest_of(own: bytes) -> str:
    """The shared-part digest an own part refers to (read without parsing the JSON)."""
    if not own.startswith(_OWN_PREFIX):
        raise ValueError("not a rankmap probe record")
    start = len(_OWN_PREFIX)
    return own[start : start + DIGEST_LEN].decode()


def _tuples(state: dict[str, Any], names: Sequence[str]) -> None:
    for name in names:
        value = state.get(name)
        if value is not None:
            state[name] = tuple(value)


def decode_many(owns: Sequence[bytes], shared: Mapping[str, bytes]) -> list[RankRecord]:
    """Rebuild records from own parts and the shared parts they name (one parse each)."""
    shared_state: dict[str, dict[str, Any]] = {}
    for digest, blob in shared.items():
        values = json.loads(blob)
        if not values or values[0] != SHARED_TAG:
            raise ValueError("not a rankmap shared record part")
        state = dict(zip(SHARED_FIELDS, values[1:], strict=False))
        _tuples(state, _SHARED_TUPLES)
        shared_state[digest] = state
    out = []
    complete = len(SHARED_FIELDS) + len(OWN_FIELDS)
    for values in json.loads(b"[" + b",".join(owns) + b"]") if owns else []:
        state = shared_state[values[1]].copy()
        state.update(zip(OWN_FIELDS, values[2:], strict=False))
        _tuples(state, _OWN_TUPLES)
        if len(state) == complete:
            # the usual case: this rankmap wrote every field; skip the defaults merge
            rec = object.__new__(RankRecord)
            object.__setattr__(rec, "__dict__", state)
            out.append(rec)
        else:
            out.append(record_from_state(state))
    return out
