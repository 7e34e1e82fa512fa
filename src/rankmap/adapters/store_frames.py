"""The wire format of rankmap's own store (:mod:`rankmap.adapters.store_server`), and its limits.

A connection starts with :data:`MAGIC` from the client, echoed by the server (a torch TCPStore
or any other program on the port fails that at once). Then requests and replies alternate, each
one frame: a one-byte op (request) or status (reply), a 4-byte argument count, and per argument
a 4-byte length and the bytes (big-endian). Requests:

- ``SET key value`` -> ``OK``; ``REFUSED reason`` when the store's budget is spent.
- ``GET key`` -> ``OK value`` or ``MISSING`` (never blocks: the key protocol of
  :mod:`rankmap.probe.store` checks before it gets).
- ``ADD key delta`` (8-byte signed) -> ``OK total`` (8-byte signed); a counter is stored as its
  decimal text, as torch's ``add`` does.
- ``CHECK key...`` -> ``OK`` with one byte, 1 when every key exists.
- ``MULTI_GET key...`` -> ``OK value...`` or ``MISSING``.

The server reads a frame as it arrives and never holds more of a value than it keeps: a value
over :data:`VALUE_BYTES` is kept to ``VALUE_BYTES + 1`` bytes (the record decoder then says "over
the limit"), the rest is read and dropped. Every other limit is a protocol error that closes the
connection.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from rankmap.probe.wire import MAX_OWN_BYTES, MAX_SHARED_BYTES

MAGIC = b"rankmap-store/1\n"
BUSY = b"rankmap-store/0\n"  # instead of MAGIC: every connection the server takes is in use

SET, GET, ADD, CHECK, MULTI_GET = 1, 2, 3, 4, 5
OPS = frozenset({SET, GET, ADD, CHECK, MULTI_GET})
OK, MISSING, REFUSED = 0, 1, 2

HEAD = struct.Struct(">BI")  # op or status, argument count
LENGTH = struct.Struct(">I")
COUNTER = struct.Struct(">q")

KEY_BYTES = 512  # rankmap's keys: "rankmap/<run id>/<restart>/call<N>/shared/<digest>"
VALUE_BYTES = max(MAX_OWN_BYTES, MAX_SHARED_BYTES)  # what the record decoder accepts
ARGS_PER_REQUEST = 256  # the client splits longer CHECK / MULTI_GET lists
REPLY_ARG_BYTES = 256 * 2**20  # a client's bound on one value it receives (the verdict)
COUNTER_LIMIT = 2**62
# What a request other than SET holds while it arrives without reserving it from the budget
# (one key and a delta: every request the probe's peers send), so a full store still answers
# the peers' polls, reads and counts (the ``read`` counter after the verdict).
UNRESERVED_BYTES = KEY_BYTES + COUNTER.size


class ProtocolError(ValueError):
    """A frame rankmap's store does not accept: the connection is closed."""


def frame(code: int, args: Sequence[bytes]) -> bytes:
    """One request or reply."""
    parts = [HEAD.pack(code, len(args))]
    for arg in args:
        parts.append(LENGTH.pack(len(arg)))
        parts.append(arg)
    return b"".join(parts)


def as_bytes(value: bytes | str) -> bytes:
    """A value as stored: text in UTF-8 (the key protocol sets a few values as text)."""
    return value.encode() if isinstance(value, str) else bytes(value)


def counter_delta(raw: bytes) -> int:
    if len(raw) != COUNTER.size:
        raise ProtocolError("an ADD delta is 8 bytes")
    return int(COUNTER.unpack(raw)[0])


def counter_value(stored: bytes | None) -> int:
    """The count a counter key holds (0 when it does not exist or holds no number)."""
    if stored is None or len(stored) > 20:
        return 0
    try:
        return int(stored.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return 0


def clamp_counter(value: int) -> int:
    return max(-COUNTER_LIMIT, min(COUNTER_LIMIT, value))


@dataclass
class Request:
    """A request as the server keeps it while it arrives: op, arguments read, bytes reserved."""

    op: int
    count: int
    args: list[bytes]
    reserved: int = 0
    refused: bool = False
    unreserved: int = 0  # bytes held within UNRESERVED_BYTES (not SET)


def check_head(op: int, count: int) -> None:
    """ProtocolError for an op or argument count no client of this version sends."""
    if op not in OPS:
        raise ProtocolError(f"unknown op {op}")
    fixed = {SET: 2, GET: 1, ADD: 2}
    if op in fixed and count != fixed[op]:
        raise ProtocolError(f"op {op} takes {fixed[op]} arguments, not {count}")
    if not 1 <= count <= ARGS_PER_REQUEST:
        raise ProtocolError(f"{count} arguments (at most {ARGS_PER_REQUEST})")


def kept_length(request: Request, length: int) -> int:
    """How many bytes of the next argument (of ``length``) the server keeps.

    Keys longer than :data:`KEY_BYTES` are a protocol error; a SET value is kept to
    ``VALUE_BYTES + 1`` bytes.
    """
    is_value = request.op == SET and len(request.args) == 1
    if is_value:
        return min(length, VALUE_BYTES + 1)
    if request.op == ADD and len(request.args) == 1:
        if length != COUNTER.size:
            raise ProtocolError("an ADD delta is 8 bytes")
        return length
    if length > KEY_BYTES:
        raise ProtocolError(f"a key of {length} bytes (at most {KEY_BYTES})")
    return length
