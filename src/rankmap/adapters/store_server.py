"""rankmap's own store server, with limits rankmap sets (wire format: :mod:`.store_frames`).

Where a rankmap process hosts the exchange itself - rank 0 under ``RANKMAP_STORE_PORT``, and
``rankmap probe`` under srun/mpirun - the server lives in that process. torch's TCPStore server
keeps whatever its peers store (up to 8 MiB per value, any number of keys), so hostile or broken
peers could take rank 0's memory without bound. This one holds at most:

- ``store_data.BUDGET`` bytes of what peers store (keys, values, an allowance per entry, the
  bytes of SETs still arriving, and replaced values an unsent reply still refers to); a SET
  or a new counter beyond it is refused, and that peer's probe fails (a read, a poll or a count
  of an existing counter is still answered: it holds one key outside the budget);
- one value to ``VALUE_BYTES + 1`` bytes (the rest is read and dropped);
- per connection, 4 KiB of unread input, one key, and one 16 KiB piece of a reply (a peer that
  never reads its replies holds no more), and at most ``max_connections`` connections (the
  world size + 64; one over it is told so, and its client tries again until its deadline).

Rank 0 itself reads and writes the data in-process (:class:`LocalStore`), not over a socket.
The server runs an asyncio loop in a daemon thread for the life of the process.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from rankmap.adapters.store_connection import Connection
from rankmap.adapters.store_data import StoreData


class StoreServer:
    """The listening server and what its connections share (the data, the connection count)."""

    def __init__(self, port: int, max_connections: int, data: StoreData | None = None) -> None:
        self.port = port
        self.max_connections = max_connections
        self.data = data or StoreData()
        self.connections: set[Any] = set()

    @property
    def out_bytes(self) -> int:
        """Reply bytes waiting in the transports, over all connections."""
        return sum(c.buffered for c in self.connections)

    def start(self) -> None:
        """Listen on every interface (as torch's TCPStore server does); OSError when the port
        is taken."""
        loop = asyncio.new_event_loop()
        started: dict[str, BaseException | None] = {}
        ready = threading.Event()

        async def listen() -> None:
            await loop.create_server(
                lambda: Connection(self),
                host=None,
                port=self.port,
                reuse_address=True,
                backlog=min(max(self.max_connections, 128), 4096),
            )

        def serve() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(listen())
            except BaseException as exc:  # noqa: BLE001 - handed to the starting thread
                started["error"] = exc
                ready.set()
                return
            ready.set()
            loop.run_forever()

        threading.Thread(target=serve, name="rankmap-store-server", daemon=True).start()
        ready.wait()
        if started.get("error") is not None:
            raise started["error"]  # type: ignore[misc]

    def admit(self, connection: object) -> bool:
        if len(self.connections) >= self.max_connections:
            return False
        self.connections.add(connection)
        return True

    def forget(self, connection: Any) -> None:
        self.connections.discard(connection)


_HOSTED: dict[int, StoreServer] = {}


def host(port: int, max_connections: int) -> StoreServer:
    """The server this process hosts on ``port``, started once (a second ``verify()`` reuses
    it, as torch's ``multi_tenant`` does)."""
    server = _HOSTED.get(port)
    if server is None:
        server = StoreServer(port, max_connections)
        server.start()
        _HOSTED[port] = server
    else:
        server.max_connections = max(server.max_connections, max_connections)
    return server
