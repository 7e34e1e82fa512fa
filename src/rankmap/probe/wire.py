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
from dataclasses import dataclass, field
from typing import Any

from rankmap.probe.columns import columns_fit, fitting_rows
from rankmap.probe.record import (
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


def _parse_all(blobs: Sequence[bytes], limit: int, what: str) -> list[Any]:
    """Every blob parsed (one parse for all in the usual case); an exception where not."""
    if all(len(b) <= limit for b in blobs):
        try:
            parsed = _loads(b"[" + b",".join(blobs) + b"]")
            if isinstance(parsed, list) and len(parsed) == len(blobs):
                return parsed  # a part that smuggles extra items changes the count: slow path
        except (ValueError, RecursionError, TypeError):
            pass
    out: list[Any] = []
    for blob in blobs:
        try:
            if len(blob) > limit:
                raise ValueError(f"{what} over the limit of {limit} bytes")
            out.append(_loads(blob))
        except (ValueError, RecursionError, TypeError) as exc:
            out.append(exc)
    return out


def _fields_of(values: Any, tag: str, what: str) -> list[Any]:
    """The field values after the tag (and, for an own part, the digest)."""
    if isinstance(values, Exception):
        raise ValueError(_reason(values))
    if not isinstance(values, list) or not values or values[0] != tag:
        head = values[0] if isinstance(values, list) and values else None
        raise ValueError(
            f"format {head[:40]!r}, not {tag!r}" if isinstance(head, str) else f"not a {what}"
        )
    return values[1:]


def _shared_states(shared: Mapping[str, bytes]) -> dict[str, dict[str, Any] | str]:
    """digest -> the node's shared fields, or why they cannot be read."""
    digests = list(shared)
    rows: list[list[Any] | None] = []
    reasons: dict[str, str] = {}
    for digest, values in zip(digests, _parse_all(list(shared.values()), MAX_SHARED_BYTES,
                                                  "shared part"), strict=True):  # fmt: skip
        try:
            fields_ = _fields_of(values, SHARED_TAG, "rankmap shared record part")
        except ValueError as exc:
            reasons[digest] = _reason(exc)
            rows.append(None)
            continue
        rows.append(fields_[: len(SHARED_FIELDS)])
    out: dict[str, dict[str, Any] | str] = {}
    full = [i for i, row in enumerate(rows) if row is not None and len(row) == len(SHARED_FIELDS)]
    fits = fitting_rows(SHARED_FIELDS, [rows[i] for i in full])  # type: ignore[misc]
    sure = {full[j] for j, ok in enumerate(fits) if ok}
    for i, (digest, row) in enumerate(zip(digests, rows, strict=True)):
        if row is None:
            out[digest] = reasons[digest]
            continue
        state = dict(zip(SHARED_FIELDS, row, strict=False))
        problem = None if i in sure else state_problem(state)
        if problem:
            out[digest] = problem
            continue
        _tuples(state, _SHARED_TUPLES)
        out[digest] = state
    return out


_OWN_LEN = len(OWN_FIELDS)


def _own_state(values: Any, shared: Mapping[str, dict[str, Any] | str], rank: int | None) -> Any:
    """One own part checked field by field (the slow path: odd or bad records)."""
    rest = _fields_of(values, OWN_TAG, "rankmap probe record")
    base = shared.get(rest[0]) if rest and isinstance(rest[0], str) else None
    if base is None:
        raise ValueError("its node part is missing")
    if isinstance(base, str):
        raise ValueError(f"its node part: {base}")
    own = rest[1 : 1 + _OWN_LEN]
    if not own:
        raise ValueError("no rank in it")
    problem = state_problem(dict(zip(OWN_FIELDS, own, strict=False)))
    if problem:
        raise ValueError(problem)
    if rank is not None and own[0] != rank:
        raise ValueError(f"it says rank {own[0]!r}")
    return _merged(base, own)


def _merged(base: dict[str, Any], own: Sequence[Any]) -> dict[str, Any]:
    state = base.copy()
    state.update(zip(OWN_FIELDS, own, strict=False))
    _tuples(state, _OWN_TUPLES)
    return state


def _usual(values: Any, key: int, check_rank: bool, good: Mapping[str, Any]) -> bool:
    """Whether an own part has the shape this rankmap writes (then its values go to the bulk
    check): tag, a node part that was read, every field, the rank it was stored under."""
    return (
        type(values) is list
        and len(values) == _OWN_LEN + 2
        and values[0] == OWN_TAG
        and type(values[1]) is str
        and values[1] in good
        and (not check_rank or values[2] == key)
    )


_LIST, _STR = frozenset((list,)), frozenset((str,))
_NOTES, _PROBLEMS, _GPUS = (OWN_FIELDS.index(n) for n in _OWN_TUPLES)


def _all_usual(
    parsed: list[Any], keys: list[int], check_rank: bool, good: Mapping[str, dict[str, Any]]
) -> list[dict[str, Any]] | None:
    """Every record's state when all of them have the usual shape and fit the schema (checked
    column by column, as :func:`_usual` and :func:`fitting_rows` would row by row); ``None``
    when any does not (then they are sorted out one by one)."""
    if not parsed or not _LIST.issuperset(map(type, parsed)):
        return None
    if set(map(len, parsed)) != {_OWN_LEN + 2}:
        return None
    cols = list(zip(*parsed, strict=True))
    tags, digests = cols[0], cols[1]
    if not (_STR.issuperset(map(type, tags)) and set(tags) == {OWN_TAG}):
        return None
    if not (_STR.issuperset(map(type, digests)) and good.keys() >= set(digests)):
        return None
    if check_rank and list(cols[2]) != keys:
        return None
    if not columns_fit(OWN_FIELDS, cols[2:]):
        return None
    out = []
    for row in parsed:
        own = row[2:]
        own[_NOTES] = tuple(own[_NOTES])
        own[_PROBLEMS] = tuple(own[_PROBLEMS])
        if own[_GPUS] is not None:
            own[_GPUS] = tuple(own[_GPUS])
        state = good[row[1]].copy()
        state.update(zip(OWN_FIELDS, own, strict=True))
        out.append(state)
    return out


def decode_many(
    owns: Sequence[bytes], shared: Mapping[str, bytes], ranks: Sequence[int] | None = None
) -> Decoded:
    """Rebuild records from own parts and the shared parts they name (one parse each).

    ``ranks``: the rank each own part was stored under (then a record must say the same rank).
    Nothing a peer sends raises here: a record that cannot be read - bad UTF-8 or JSON, another
    format, wrong types, oversized - lands in ``unreadable`` with the reason. Records of the
    usual shape are validated in bulk (:mod:`rankmap.probe.columns`), the rest one by one.
    """
    shared_state = _shared_states(shared)
    good = {d: s for d, s in shared_state.items() if not isinstance(s, str)}
    keys = list(ranks) if ranks is not None else list(range(len(owns)))
    parsed = _parse_all(owns, MAX_OWN_BYTES, "record")
    states = _all_usual(parsed, keys, ranks is not None, good)
    if states is not None:
        return Decoded(list(map(_record, states)))
    usual = [
        i for i, (k, v) in enumerate(zip(keys, parsed, strict=True))
        if _usual(v, k, ranks is not None, good)
    ]  # fmt: skip
    fits = fitting_rows(OWN_FIELDS, [parsed[i][2:] for i in usual])
    sure = {usual[j] for j, ok in enumerate(fits) if ok}
    out = Decoded([])
    for i, (key, values) in enumerate(zip(keys, parsed, strict=True)):
        try:
            if i in sure:
                state = _merged(good[values[1]], values[2:])
            else:
                state = _own_state(values, shared_state, key if ranks is not None else None)
        except (ValueError, TypeError) as exc:
            out.unreadable[key] = _reason(exc)
            continue
        out.records.append(_record(state))
    return out


_COMPLETE = len(SHARED_FIELDS) + _OWN_LEN


def _record(state: dict[str, Any]) -> RankRecord:
    if len(state) != _COMPLETE:
        return record_from_state(state)
    # the usual case: this rankmap wrote every field; skip the defaults merge
    rec = _new_record(RankRecord)
    _set_dict(rec, "__dict__", state)
    return rec


_new_record, _set_dict = object.__new__, object.__setattr__
