"""The data of rankmap's own store: keys, values, the budget, and the reply to a request.

Shared by the server's connections (:mod:`.store_connection`, in the server's thread) and rank
0's in-process handle (:class:`LocalStore`), under one lock.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from rankmap.adapters import store_frames as sf

BUDGET = 64 * 2**20
ENTRY_BYTES = 160  # what one stored entry costs beyond its key and value (objects, dict slot)


class StoreData:
    """Keys and values under one lock; ``used`` counts what peers may fill, against ``budget``."""

    def __init__(self, budget: int = BUDGET) -> None:
        self.values: dict[bytes, bytes] = {}
        self.budget = budget
        self.used = 0
        self.lock = threading.Lock()
        # values that unsent replies refer to: id -> [value, replies, cost of entries replaced
        # meanwhile] - a replaced value stays in memory (and in ``used``) until they are sent
        self.pins: dict[int, list[Any]] = {}

    @staticmethod
    def cost(key: bytes, value: bytes) -> int:
        return len(key) + len(value) + ENTRY_BYTES

    def reserve(self, size: int) -> bool:
        with self.lock:
            if self.used + size > self.budget:
                return False
            self.used += size
            return True

    def release(self, size: int) -> None:
        with self.lock:
            self.used -= size

    def pin(self, values: Sequence[bytes]) -> None:
        """A reply refers to ``values`` until :meth:`unpin`."""
        with self.lock:
            self._pin(values)

    def _pin(self, values: Sequence[bytes]) -> None:
        for value in values:
            self.pins.setdefault(id(value), [value, 0, 0])[1] += 1

    def unpin(self, values: Sequence[bytes]) -> None:
        with self.lock:
            for value in values:
                pin = self.pins[id(value)]
                pin[1] -= 1
                if pin[1] == 0:
                    del self.pins[id(value)]
                    self.used -= pin[2]

    def _drop(self, key: bytes, old: bytes | None) -> None:
        """``key``'s entry ``old`` is replaced (under the lock)."""
        if old is None:
            return
        pin = self.pins.get(id(old))
        if pin is None:
            self.used -= self.cost(key, old)
        else:
            pin[2] += self.cost(key, old)

    def put(self, key: bytes, value: bytes, reserved: int = 0) -> None:
        """Store ``value`` (``reserved``: what its request already counted)."""
        with self.lock:
            self._drop(key, self.values.get(key))
            self.values[key] = value
            self.used += self.cost(key, value) - reserved

    def add(self, key: bytes, delta: int, reserved: int = 0, *, bounded: bool = True) -> int | None:
        """The counter's new total; None (nothing changed) when ``bounded`` and what it adds to
        the store does not fit in the budget."""
        with self.lock:
            old = self.values.get(key)
            total = sf.clamp_counter(sf.counter_value(old) + delta)
            text = str(total).encode("ascii")
            grows = self.cost(key, text) - (0 if old is None else self.cost(key, old)) - reserved
            if bounded and grows > 0 and self.used + grows > self.budget:
                return None
            self._drop(key, old)
            self.values[key] = text
            self.used += self.cost(key, text) - reserved
            return total

    def drop_prefix(self, prefix: bytes) -> None:
        """Remove every key that starts with ``prefix``."""
        with self.lock:
            for key in [k for k in self.values if k.startswith(prefix)]:
                self._drop(key, self.values.pop(key))

    def get_many(self, keys: Sequence[bytes], pin: bool = False) -> list[bytes] | None:
        """The values of ``keys``, None when one is missing (``pin``: pinned, in one step)."""
        with self.lock:
            found = [self.values.get(k) for k in keys]
            if any(v is None for v in found):
                return None
            values = [v for v in found if v is not None]
            if pin:
                self._pin(values)
        return values


class LocalStore:
    """Rank 0's handle on the data it hosts: the store methods :mod:`rankmap.probe.store` uses."""

    def __init__(self, data: StoreData) -> None:
        self._data = data

    def set(self, key: str, value: bytes | str) -> None:
        self._data.put(key.encode(), sf.as_bytes(value))

    def get(self, key: str) -> bytes:
        found = self._data.get_many([key.encode()])
        if found is None:
            raise KeyError(key)
        return found[0]

    def add(self, key: str, amount: int) -> int:
        total = self._data.add(key.encode(), int(amount), bounded=False)  # rank 0's own
        assert total is not None
        return total

    def drop_prefix(self, prefix: str) -> None:
        self._data.drop_prefix(prefix.encode())

    def check(self, keys: Sequence[str]) -> bool:
        return self._data.get_many([k.encode() for k in keys]) is not None

    def multi_get(self, keys: Sequence[str]) -> list[bytes]:
        found = self._data.get_many([k.encode() for k in keys])
        if found is None:
            raise KeyError("a key of the list does not exist")
        return found


FULL = b"the rankmap store is full"


def run_request(data: StoreData, request: sf.Request) -> tuple[int, list[bytes]]:
    """The reply to one complete request; its reservation is spent or released, and the values
    of the reply are pinned (the caller unpins them once the reply is sent or dropped)."""
    if request.refused:
        data.release(request.reserved)
        return _made(data, sf.REFUSED, [FULL])
    args = request.args
    if request.op == sf.SET:
        data.put(args[0], args[1], request.reserved)
        return sf.OK, []
    if request.op == sf.ADD:
        total = data.add(args[0], sf.counter_delta(args[1]), request.reserved)
        if total is None:
            data.release(request.reserved)
            return _made(data, sf.REFUSED, [FULL])
        return _made(data, sf.OK, [sf.COUNTER.pack(total)])
    data.release(request.reserved)
    if request.op == sf.CHECK:
        return _made(data, sf.OK, [b"\x01" if data.get_many(args) is not None else b"\x00"])
    found = data.get_many(args, pin=True)
    if found is None:
        return sf.MISSING, []
    return sf.OK, found


def _made(data: StoreData, status: int, values: list[bytes]) -> tuple[int, list[bytes]]:
    data.pin(values)
    return status, values
