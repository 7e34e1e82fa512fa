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
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rankmap.probe.record import (
    FIELD_TYPES,
    MAX_ITEMS,
    RankRecord,
    record_field_names,
    record_from_state,
    state_problem,
)

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


def digest_of(own: bytes) -> str | None:
    """The shared-part digest an own part refers to (read without parsing the JSON); ``None``
    for anything that is not an own part of this format (the decoder says why)."""
    if not own.startswith(_OWN_PREFIX):
        return None
    start = len(_OWN_PREFIX)
    digest = own[start : start + DIGEST_LEN]
    if len(digest) != DIGEST_LEN or digest.strip(b"0123456789abcdef"):
        return None
    return digest.decode("ascii")


MAX_OWN_BYTES = 256 * 1024  # one rank's own part (8 GPUs with MIG lists: ~6 KB)
MAX_SHARED_BYTES = 1024 * 1024  # one node's shared part (env, interfaces, topology)
_OWN_TYPES = tuple(FIELD_TYPES[n] for n in OWN_FIELDS)


@dataclass
class Decoded:
    """The records rank 0 could read, and why the others could not (rank -> reason)."""

    records: list[RankRecord]
    unreadable: dict[int, str] = field(default_factory=dict)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _loads(blob: bytes | str) -> Any:
    text = blob.decode("utf-8") if isinstance(blob, (bytes, bytearray)) else blob
    return json.loads(text, parse_constant=_no_constant)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8"
    text = " ".join(str(exc).split())
    return text[:160] or type(exc).__name__


def _tuples(state: dict[str, Any], names: Sequence[str]) -> None:
    for name in names:
        value = state.get(name)
        if value is not None:
            state[name] = tuple(value)


def _shared_state(blob: bytes) -> dict[str, Any]:
    if len(blob) > MAX_SHARED_BYTES:
        raise ValueError(f"shared part of {len(blob)} bytes (limit {MAX_SHARED_BYTES})")
    values = _loads(blob)
    if not isinstance(values, list) or not values or values[0] != SHARED_TAG:
        raise ValueError("not a rankmap shared record part")
    state = dict(zip(SHARED_FIELDS, values[1:], strict=False))
    if not _shared_fits(values):
        problem = state_problem(state)
        if problem:
            raise ValueError(problem)
    _tuples(state, _SHARED_TUPLES)
    return state


_SHARED_TYPES = tuple(FIELD_TYPES[n] for n in SHARED_FIELDS)
_SHARED_LISTS = tuple(SHARED_FIELDS.index(n) + 1 for n in _SHARED_TUPLES)
_WORLD, _ENV = SHARED_FIELDS.index("world_size") + 1, SHARED_FIELDS.index("env") + 1


def _shared_fits(values: list[Any]) -> bool:
    """The quick check of a complete shared part (what this rankmap writes)."""
    if len(values) != len(SHARED_FIELDS) + 1 or not all(map(isinstance, values[1:], _SHARED_TYPES)):
        return False
    env, world = values[_ENV], values[_WORLD]
    return (
        type(world) is int
        and 0 < world < 2**31
        and all(
            values[i] is None
            or (len(values[i]) <= MAX_ITEMS and _STR.issuperset(map(type, values[i])))
            for i in _SHARED_LISTS
        )
        and len(env) <= MAX_ITEMS
        and _STR.issuperset(map(type, env.values()))
    )


_STR = frozenset((str,))


def _shared_states(shared: Mapping[str, bytes]) -> dict[str, dict[str, Any] | str]:
    """digest -> the node's shared fields, or why they cannot be read."""
    out: dict[str, dict[str, Any] | str] = {}
    for digest, blob in shared.items():
        try:
            out[digest] = _shared_state(blob)
        except (ValueError, RecursionError, TypeError) as exc:
            out[digest] = _reason(exc)
    return out


def _parse_owns(owns: Sequence[bytes]) -> list[Any]:
    """Every own part parsed (one parse for all in the usual case); an exception where not."""
    if all(len(o) <= MAX_OWN_BYTES for o in owns):
        try:
            parsed = _loads(b"[" + b",".join(owns) + b"]")
            if isinstance(parsed, list) and len(parsed) == len(owns):
                return parsed  # a part that smuggles extra items changes the count: slow path
        except (ValueError, RecursionError, TypeError):
            pass
    out: list[Any] = []
    for own in owns:
        try:
            if len(own) > MAX_OWN_BYTES:
                raise ValueError(f"record of {len(own)} bytes (limit {MAX_OWN_BYTES})")
            out.append(_loads(own))
        except (ValueError, RecursionError, TypeError) as exc:
            out.append(exc)
    return out


def _own_fits(own: list[Any]) -> bool:
    """The quick check of an own part's values (C-level isinstance over the fields)."""
    if type(own[0]) is not int or not all(map(isinstance, own, _OWN_TYPES)):
        return False  # (a bool is an int to isinstance: not as a rank)
    notes, problems = own[_NOTES], own[_PROBLEMS]
    return (
        (not notes or all(isinstance(x, str) for x in notes))
        and (not problems or all(isinstance(x, str) for x in problems))
        and own[_GPUS] is None
        and math.isfinite(own[_MS])
    )


_NOTES, _PROBLEMS, _GPUS, _MS = (
    OWN_FIELDS.index(n) for n in ("device_notes", "problems", "gpus", "probe_ms")
)


def _own_state(values: Any, shared: Mapping[str, dict[str, Any] | str], rank: int | None) -> Any:
    if isinstance(values, Exception):
        raise ValueError(_reason(values))
    if not isinstance(values, list) or len(values) < 2 or values[0] != OWN_TAG:
        tag = values[0] if isinstance(values, list) and values else None
        raise ValueError(
            f"format {tag[:40]!r}, not {OWN_TAG!r}"
            if isinstance(tag, str)
            else "not a rankmap probe record"
        )
    base = shared.get(values[1]) if isinstance(values[1], str) else None
    if base is None:
        raise ValueError("its node part is missing")
    if isinstance(base, str):
        raise ValueError(f"its node part: {base}")
    own = values[2 : 2 + len(OWN_FIELDS)]
    if not own:
        raise ValueError("no rank in it")
    if len(own) < len(OWN_FIELDS) or not _own_fits(own):
        problem = state_problem(dict(zip(OWN_FIELDS, own, strict=False)))
        if problem:
            raise ValueError(problem)
    if rank is not None and own[0] != rank:
        raise ValueError(f"it says rank {own[0]!r}")
    state = base.copy()
    state.update(zip(OWN_FIELDS, own, strict=False))
    _tuples(state, _OWN_TUPLES)
    return state


def decode_many(
    owns: Sequence[bytes], shared: Mapping[str, bytes], ranks: Sequence[int] | None = None
) -> Decoded:
    """Rebuild records from own parts and the shared parts they name (one parse each).

    ``ranks``: the rank each own part was stored under (then a record must say the same rank).
    Nothing a peer sends raises here: a record that cannot be read - bad UTF-8 or JSON, another
    format, wrong types, oversized - lands in ``unreadable`` with the reason.
    """
    shared_state = _shared_states(shared)
    out = Decoded([])
    complete = len(SHARED_FIELDS) + len(OWN_FIELDS)
    keys = list(ranks) if ranks is not None else list(range(len(owns)))
    for key, values in zip(keys, _parse_owns(owns), strict=True):
        try:
            state = _own_state(values, shared_state, key if ranks is not None else None)
        except (ValueError, TypeError) as exc:
            out.unreadable[key] = _reason(exc)
            continue
        if len(state) == complete:
            # the usual case: this rankmap wrote every field; skip the defaults merge
            rec = object.__new__(RankRecord)
            object.__setattr__(rec, "__dict__", state)
            out.records.append(rec)
        else:
            out.records.append(record_from_state(state))
    return out
