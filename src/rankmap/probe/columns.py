"""The record schema checked in bulk, one field's column at a time (rank 0 reads 100,000 records).

:func:`rankmap.probe.record.state_problem` is the schema (one authority). :func:`columns_fit`
checks the same rules over many records at once with C-level passes - the set of types in a
column, its min and max, the items of its lists chained together - instead of a Python loop per
record. It is a sufficient condition: when it holds, ``state_problem`` holds for every record
(a property test keeps the two together); when it does not, :func:`fitting_rows` narrows the
failure down by halves and leaves the rows that do not fit to ``state_problem``, which says why.
Values are JSON as ``json.loads`` gives it, so exact types are checked (a bool is never an int).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial
from itertools import chain, compress, repeat
from operator import is_not
from typing import Any

from rankmap.probe.record import (
    FIELD_TYPES,
    GPU_KEYS,
    GPU_MAX_KEYS,
    INT_FIELDS,
    INT_LIMITS,
    MAX_ITEMS,
    MS_LIMITS,
    RANK_LIMITS,
    STR_ITEM_FIELDS,
    WORLD_LIMITS,
    json_plain,
)

_NONE = type(None)
_STR = frozenset((str,))
_DICT = frozenset((dict,))
_SCALARS = frozenset((str, int, bool, _NONE))
_NESTED = frozenset((float, list, dict))  # what json_plain looks into
_not_none = partial(is_not, None)
_EXACT = {name: frozenset(kinds) for name, kinds in FIELD_TYPES.items()}  # bool is not among them
_RANGES = {"rank": RANK_LIMITS, "world_size": WORLD_LIMITS} | dict.fromkeys(INT_FIELDS, INT_LIMITS)


def _in_range(values: Any, limits: tuple[int, int]) -> bool:
    present = list(filter(_not_none, values))
    return not present or (limits[0] <= min(present) and max(present) < limits[1])


def _strings(lists: Sequence[Any]) -> bool:
    present = list(filter(_not_none, lists))
    return not present or (
        max(map(len, present)) <= MAX_ITEMS
        and _STR.issuperset(map(type, chain.from_iterable(present)))
    )


def _env(maps: Sequence[Any]) -> bool:
    return not maps or (
        max(map(len, maps)) <= MAX_ITEMS
        and _STR.issuperset(map(type, chain.from_iterable(maps)))  # keys
        and _STR.issuperset(map(type, chain.from_iterable(map(dict.values, maps))))
    )


def _gpus(lists: Sequence[Any]) -> bool:
    present = list(filter(_not_none, lists))
    if not present:
        return True
    if max(map(len, present)) > MAX_ITEMS:
        return False
    gpus = list(chain.from_iterable(present))
    if not gpus:
        return True
    if not _DICT.issuperset(map(type, gpus)) or max(map(len, gpus)) > GPU_MAX_KEYS:
        return False
    for key, kinds in GPU_KEYS.items():
        if not kinds.issuperset(map(type, map(dict.get, gpus, repeat(key)))):
            return False
    values = list(chain.from_iterable(map(dict.values, gpus)))
    types = list(map(type, values))
    seen = set(types)
    if seen <= _SCALARS:
        return True
    nested = compress(values, map(_NESTED.__contains__, types))
    # (falsy ones - [], {}, 0.0: every GPU's empty mig_devices - are plain: not looked into)
    return seen <= _SCALARS | _NESTED and all(map(json_plain, filter(None, nested)))


def _probe_ms(values: Sequence[Any]) -> bool:
    floats = [v for v in values if type(v) is float]
    return (
        all(map(math.isfinite, floats))
        and MS_LIMITS[0] < min(values)
        and max(values) < MS_LIMITS[1]
    )


_EXTRA: dict[str, Callable[[Sequence[Any]], bool]] = dict.fromkeys(STR_ITEM_FIELDS, _strings) | {
    "env": _env,
    "gpus": _gpus,
    "probe_ms": _probe_ms,
}


def columns_fit(names: Sequence[str], columns: Sequence[Sequence[Any]]) -> bool:
    """True when every record whose field values these columns hold passes the schema."""
    for name, column in zip(names, columns, strict=True):
        if not column:
            continue
        if not _EXACT[name].issuperset(map(type, column)):
            return False
        limits = _RANGES.get(name)
        if limits is not None and not _in_range(column, limits):
            return False
        extra = _EXTRA.get(name)
        if extra is not None and not extra(column):
            return False
    return True


def fitting_rows(
    names: Sequence[str], rows: Sequence[Sequence[Any]], least: int = 256
) -> list[bool]:
    """Per row (each holds ``names``' values in order): whether it surely fits the schema. The
    rows marked False are for ``state_problem`` to judge; halving keeps one odd record among
    100,000 from sending all of them down the slow path."""
    out = [False] * len(rows)

    def check(lo: int, hi: int) -> None:
        if lo >= hi:
            return
        if columns_fit(names, list(zip(*rows[lo:hi], strict=True))):
            out[lo:hi] = [True] * (hi - lo)
        elif hi - lo > least:
            mid = (lo + hi) // 2
            check(lo, mid)
            check(mid, hi)

    check(0, len(rows))
    return out
