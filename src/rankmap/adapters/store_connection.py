"""One peer's connection to rankmap's own store: read frames as they arrive, reply in turn.

An ``asyncio.BufferedProtocol``: the transport reads into this connection's own
:data:`INPUT_BYTES` buffer, and the parser moves each argument out of it as it arrives (keeping
only what :func:`store_frames.kept_length` allows, each byte reserved against the store's budget
as it arrives - not as a frame announces it, so headers that announce big values and never send
them hold nothing).
While a reply is being written, reading pauses: a peer that sends requests without reading
the replies holds one reply, not a queue of them. A reply is written in pieces of at most
:data:`PIECE_BYTES`, each sliced out of the stored values only when the transport's buffer is
empty, so a peer that never reads keeps at most one piece in this process (the rest waits in
the kernel's socket buffers or not at all). The values an unsent reply refers to are pinned
(:meth:`StoreData.pin`): one replaced meanwhile still counts against the budget until the
reply is sent or its peer is gone. A connection costs at most ``INPUT_BYTES + PIECE_BYTES``
and asyncio's own few KB.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

from rankmap.adapters import store_frames as sf
from rankmap.adapters.store_data import ENTRY_BYTES, StoreData, run_request

INPUT_BYTES = 4 * 1024
PIECE_BYTES = 16 * 1024


class Connection(asyncio.BufferedProtocol):
    """The parser state of one connection and its pending reply."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.data: StoreData = server.data  # what this connection reserves and pins in
        self.transport: Any = None
        self.inbuf = bytearray(INPUT_BYTES)
        self.start = self.end = 0
        self.greeted = False
        self.request: sf.Request | None = None
        self.arg: bytearray | None = None
        self.arg_left = 0
        self.arg_keep = 0
        self.arg_reserves = True
        self.pending = False  # a reply is being written
        self.rest: Iterator[bytes] = iter(())  # its pieces not yet written, made one at a time
        self.pinned: list[bytes] = []  # the values the reply refers to
        self.buffered = 0  # bytes of this connection's reply waiting in its transport
        self.closed = False

    # asyncio callbacks --------------------------------------------------------------------
    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        if not self.server.admit(self):
            self.closed = True
            transport.write(sf.BUSY)  # the client says so and tries again until its deadline
            transport.close()
            return
        transport.set_write_buffer_limits(high=0)  # resume_writing once the buffer is empty

    def get_buffer(self, sizehint: int) -> memoryview:
        if self.start:
            rest = self.end - self.start
            self.inbuf[:rest] = self.inbuf[self.start : self.end]
            self.start, self.end = 0, rest
        return memoryview(self.inbuf)[self.end :]

    def buffer_updated(self, nbytes: int) -> None:
        self.end += nbytes
        self.parse()

    def eof_received(self) -> bool:
        return False

    def resume_writing(self) -> None:
        self.sync_buffered()
        self.drained()

    def connection_lost(self, exc: BaseException | None) -> None:
        self.closed = True
        self.buffered = 0
        self.pending, self.rest = False, iter(())
        self.data.unpin(self.pinned)
        self.pinned = []
        if self.request is not None:
            self.data.release(self.request.reserved)
            self.request = None
        self.server.forget(self)

    # parsing ------------------------------------------------------------------------------
    def parse(self) -> None:
        """Read what the buffer holds; reading pauses while a reply cannot be written at once."""
        while not self.closed:
            try:
                while not self.pending and self.step():
                    pass
            except sf.ProtocolError:
                self.closed = True
                self.transport.abort()
                return
            if not self.pending:
                return  # more input needed
            if not self.flush():
                self.transport.pause_reading()  # until resume_writing
                return

    def take(self, size: int) -> bytes | None:
        if self.end - self.start < size:
            return None
        part = bytes(self.inbuf[self.start : self.start + size])
        self.start += size
        return part

    def step(self) -> bool:
        """One step of the parser; False when it needs more input."""
        if not self.greeted:
            magic = self.take(len(sf.MAGIC))
            if magic is None:
                return False
            if magic != sf.MAGIC:
                raise sf.ProtocolError("not a rankmap store client")
            self.greeted = True
            self.reply(iter([sf.MAGIC]), [])
            return True
        if self.request is None:
            return self.read_head()
        if self.arg is None:
            return self.read_length()
        return self.read_body()

    def read_head(self) -> bool:
        head = self.take(sf.HEAD.size)
        if head is None:
            return False
        op, count = sf.HEAD.unpack(head)
        sf.check_head(op, count)
        request = sf.Request(op, count, [])
        if op == sf.SET:  # only a SET is sure to make an entry (an ADD's is counted as it runs)
            request.refused = not self.data.reserve(ENTRY_BYTES)
            request.reserved = 0 if request.refused else ENTRY_BYTES
        self.request = request
        return True

    def read_length(self) -> bool:
        assert self.request is not None
        raw = self.take(sf.LENGTH.size)
        if raw is None:
            return False
        (length,) = sf.LENGTH.unpack(raw)
        keep = sf.kept_length(self.request, length)
        self.arg_reserves = True  # reserved as its bytes arrive, not as announced
        if self.request.op != sf.SET and self.request.unreserved + keep <= sf.UNRESERVED_BYTES:
            self.request.unreserved += keep
            self.arg_reserves = False
        elif self.request.refused:
            keep = 0
        self.arg, self.arg_left, self.arg_keep = bytearray(), length, keep
        if length == 0:
            self.end_arg()
        return True

    def read_body(self) -> bool:
        assert self.arg is not None
        size = min(self.end - self.start, self.arg_left)
        if size == 0:
            return False
        part = min(self.arg_keep - len(self.arg), size)
        if part > 0 and self.arg_reserves and not self.reserve(part):
            part = 0
        if part > 0:
            self.arg += self.inbuf[self.start : self.start + part]
        self.start += size
        self.arg_left -= size
        if self.arg_left == 0:
            self.end_arg()
        return True

    def reserve(self, size: int) -> bool:
        """Count ``size`` more bytes of this request against the budget; once it is spent the
        request is refused and the rest of its bytes are read and dropped."""
        assert self.request is not None and self.arg is not None
        if self.data.reserve(size):
            self.request.reserved += size
            return True
        self.request.refused = True
        self.arg_keep = len(self.arg)
        return False

    def end_arg(self) -> None:
        assert self.request is not None and self.arg is not None
        self.request.args.append(bytes(self.arg))
        self.arg = None
        if len(self.request.args) == self.request.count:
            request, self.request = self.request, None
            status, args = run_request(self.data, request)
            self.reply(_pieces(status, args), args)  # run_request pinned args

    def reply(self, pieces: Iterator[bytes], pinned: list[bytes]) -> None:
        self.pending, self.rest, self.pinned = True, pieces, pinned

    # writing ------------------------------------------------------------------------------
    def sync_buffered(self) -> None:
        self.buffered = self.transport.get_write_buffer_size()

    def flush(self) -> bool:
        """Write pieces while the socket takes them at once; True when the reply is all sent."""
        while self.pending and not self.closed and self.buffered == 0:
            piece = next(self.rest, None)
            if piece is None:  # all of it written: its values are unpinned
                self.pending, self.rest = False, iter(())
                self.data.unpin(self.pinned)
                self.pinned = []
                break
            self.transport.write(piece)
            self.sync_buffered()
        return not self.pending and self.buffered == 0

    def drained(self) -> None:
        """The transport took everything: the rest of the reply, then the next request."""
        if self.closed:
            return
        if self.flush():
            self.parse()  # the requests already read, then
            if not self.closed and not self.pending and self.buffered == 0:
                self.transport.resume_reading()


def _pieces(status: int, args: list[bytes]) -> Iterator[bytes]:
    """A reply's bytes in pieces of at most :data:`PIECE_BYTES`, each made only when the one
    before has left the transport (a reply of 256 values of 1 MiB is 16,000 pieces)."""
    yield sf.HEAD.pack(status, len(args))
    for arg in args:
        yield sf.LENGTH.pack(len(arg))
        for i in range(0, len(arg), PIECE_BYTES):
            yield arg[i : i + PIECE_BYTES]
