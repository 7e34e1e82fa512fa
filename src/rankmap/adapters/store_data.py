"""The data of rankmap's own store: keys, values, the budget, and the reply to a request.

Shared by the server's connections (:mod:`.store_connection`, in the server's thread) and rank
0's in-process handle (:class:`LocalStore`), under one lock.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

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

    def put(self, key: bytes, value: bytes, reserved: int = 0) -> None:
        """Store ``value`` (``reserved``: what its request already counted)."""
        with self.lock:
            old = self.values.get(key)
            if old is not None:
                self.used -= self.cost(key, old)
            self.values[key] = value
            self.used += self.cost(key, value) - reserved

    def add(self, key: bytes, delta: int, reserved: int = 0) -> int:
        with self.lock:
            old = self.values.get(key)
            total = sf.clamp_counter(sf.counter_value(old) + delta)
            text = str(total).encode("ascii")
            if old is not None:
                self.used -= self.cost(key, old)
            self.values[key] = text
            self.used += self.cost(key, text) - reserved
            return total

    def get_many(self, keys: Sequence[bytes]) -> list[bytes] | None:
        with self.lock:
            found = [self.values.get(k) for k in keys]
        return None if any(v is None for v in found) else [v for v in found if v is not None]


class LocalStore:
    """Rank 0's handle on the data it hosts: the store methods :mod:`rankmap.probe.store` uses."""

    def __init__(self, data: StoreData) -> None:
        self._data = data

    def set(self, key: str, value: bytes | str) -> None:
        raw = value.encode() if isinstance(value, str) else bytes(value)
        self._data.put(key.encode(), raw)

    def get(self, key: str) -> bytes:
        found = self._data.get_many([key.encode()])
        if found is None:
            raise KeyError(key)
        return found[0]

    def add(self, key: str, amount: int) -> int:
        return self._data.add(key.encode(), int(amount))

    def check(self, keys: Sequence[str]) -> bool:
        return self._data.get_many([k.encode() for k in keys]) is not None

    def multi_get(self, keys: Sequence[str]) -> list[bytes]:
        found = self._data.get_many([k.encode() for k in keys])
        if found is None:
            raise KeyError("a key of the list does not exist")
        return found


def run_request(data: StoreData, request: sf.Request) -> tuple[int, list[bytes]]:
    """The reply to one complete request; its reservation is spent or released."""
    if request.refused:
        data.release(request.reserved)
        return sf.REFUSED, [b"the rankmap store is full"]
    args = request.args
    if request.op == sf.SET:
        data.put(args[0], args[1], request.reserved)
        return sf.OK, []
    if request.op == sf.ADD:
        total = data.add(args[0], sf.counter_delta(args[1]), request.reserved)
        return sf.OK, [sf.COUNTER.pack(total)]
    data.release(request.reserved)
    found = data.get_many(args)
    if request.op == sf.CHECK:
        return sf.OK, [b"\x01" if found is not None else b"\x00"]
    if found is None:
        return sf.MISSING, []
    return sf.OK, found
