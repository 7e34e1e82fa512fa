"""A peer's client of rankmap's own store (:mod:`.store_server`): plain blocking sockets.

Every call ends by ``until`` (a ``time.monotonic()`` deadline): connecting retries a refused
port until then, and each request's send and reply share what is left of it, so a server that
accepts but never answers, stops, or dies ends the call with an ``OSError`` in time.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator, Sequence

from rankmap.adapters import store_frames as sf


class StoreRefused(RuntimeError):
    """The server refused a request (its budget is spent)."""


class StoreClient:
    """The store methods :mod:`rankmap.probe.store` uses, over one connection."""

    def __init__(self, sock: socket.socket, until: float) -> None:
        self._sock = sock
        self._until = until

    def close(self) -> None:
        self._sock.close()

    def _left(self) -> float:
        left = self._until - time.monotonic()
        if left <= 0:
            raise TimeoutError("the rankmap store did not answer in time")
        return left

    def _recv(self, size: int) -> bytes:
        out = bytearray()
        while len(out) < size:
            self._sock.settimeout(self._left())
            part = self._sock.recv(min(size - len(out), 1 << 20))
            if not part:
                raise ConnectionError("the rankmap store closed the connection")
            out += part
        return bytes(out)

    def _call(self, op: int, args: Sequence[bytes]) -> tuple[int, list[bytes]]:
        self._sock.settimeout(self._left())
        self._sock.sendall(sf.frame(op, args))
        status, count = sf.HEAD.unpack(self._recv(sf.HEAD.size))
        if count > sf.ARGS_PER_REQUEST:
            raise ConnectionError(f"the rankmap store sent {count} values in one reply")
        values = []
        for _ in range(count):
            (length,) = sf.LENGTH.unpack(self._recv(sf.LENGTH.size))
            if length > sf.REPLY_ARG_BYTES:
                raise ConnectionError(f"the rankmap store sent a value of {length} bytes")
            values.append(self._recv(length))
        if status == sf.REFUSED:
            reason = values[0].decode("utf-8", "replace")[:200] if values else "refused"
            raise StoreRefused(reason)
        return status, values

    def set(self, key: str, value: bytes | str) -> None:
        self._call(sf.SET, [key.encode(), sf.as_bytes(value)])

    def get(self, key: str) -> bytes:
        status, values = self._call(sf.GET, [key.encode()])
        if status != sf.OK or len(values) != 1:
            raise KeyError(key)
        return values[0]

    def add(self, key: str, amount: int) -> int:
        _, values = self._call(sf.ADD, [key.encode(), sf.COUNTER.pack(sf.clamp_counter(amount))])
        if len(values) != 1:
            raise ConnectionError("the rankmap store sent no count")
        return sf.counter_delta(values[0])

    def check(self, keys: Sequence[str]) -> bool:
        for part in _requests_of(keys):
            _, values = self._call(sf.CHECK, part)
            if values != [b"\x01"]:
                return False
        return True

    def multi_get(self, keys: Sequence[str]) -> list[bytes]:
        out: list[bytes] = []
        for part in _requests_of(keys):
            status, values = self._call(sf.MULTI_GET, part)
            if status != sf.OK or len(values) != len(part):
                raise KeyError("a key of the list does not exist")
            out.extend(values)
        return out


def _requests_of(keys: Sequence[str]) -> Iterator[list[bytes]]:
    """``keys`` encoded, as many to a request as the server takes."""
    for i in range(0, len(keys), sf.ARGS_PER_REQUEST):
        yield [k.encode() for k in keys[i : i + sf.ARGS_PER_REQUEST]]


# A refused connection is retried this often until the deadline (rank 0 may not listen yet).
RETRY_S = 0.05


def _pause(connect_by: float) -> None:
    """Before the next connection attempt (never past ``connect_by``)."""
    time.sleep(min(RETRY_S, max(0.0, connect_by - time.monotonic())))


def connect(host: str, port: int, connect_by: float, until: float) -> StoreClient:
    """A connected, greeted client whose calls end by ``until``; ``OSError`` naming the reason
    when no connection is made by ``connect_by``."""
    last = "no attempt"
    while True:
        left = connect_by - time.monotonic()
        if left <= 0:
            raise ConnectionError(f"no connection ({last})")
        try:
            sock = socket.create_connection((host, port), timeout=min(left, 1.0))
        except OSError as exc:
            last = " ".join(str(exc).split())[:200] or type(exc).__name__
            _pause(connect_by)
            continue
        client = StoreClient(sock, until)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(client._left())
            sock.sendall(sf.MAGIC)
            greeting = client._recv(len(sf.MAGIC))
        except OSError as exc:
            sock.close()
            raise ConnectionError(_greeting_failure(exc)) from None
        if greeting == sf.BUSY:  # a connection may be freed before the deadline
            sock.close()
            last = "the rankmap store has all the connections it takes (world size + 64)"
            _pause(connect_by)
            continue
        if greeting != sf.MAGIC:
            sock.close()
            raise ConnectionError("not a rankmap store")
        return client


def _greeting_failure(exc: OSError) -> str:
    if isinstance(exc, TimeoutError | socket.timeout):
        return "the port accepts connections but no rankmap store answers there"
    return (
        "the port closed the connection at once: another program (a torch TCPStore?) "
        f"listens there, not a rankmap store ({type(exc).__name__})"
    )
