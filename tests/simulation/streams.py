"""Replication streams over the simulated network: what a TCP connection can do to the broker's stream.

The broker's ``StreamFetchTransport`` and ``serve_stream`` run unchanged on connections
whose frames are messages on the lossy, reordering, duplicating ``Network``. A
connection keeps TCP's promises to the code above it and breaks where TCP would have
to give up or would reset:

- the frames of one direction are taken in order, each once: a copy of a frame already
  taken (a retransmission) is dropped;
- a frame that arrives after a later one was due (an earlier one lost, or overtaken)
  breaks the connection at that end, which resets the other: no gap is ever skipped;
- a frame for a connection the receiver does not know (it crashed and restarted, or
  closed the connection) is answered with a reset, as a TCP stack answers with RST,
  except a first frame, which opens the leader's end (there is no handshake);
- closing an end resets the other; a reset or a crash fails a receive waiting on it.

So the frames that reach the driver are what a real stream could deliver; what the
simulation adds is *when*: losses, long delays, resets and crashes at any point of a
fetch, and first frames of old connections arriving late.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from broker.replica_io.replication_stream import StreamClosed


@dataclass(frozen=True)
class StreamFrame:
    connection: int
    seq: int
    body: bytes
    from_opener: bool
    """Sent by the end that opened the connection (the follower): only its first frame opens the other end."""


@dataclass(frozen=True)
class StreamReset:
    connection: int


class SimStreamEnd:
    """One end of a simulated connection, owned by one broker process (a ``StreamConnection``)."""

    def __init__(
        self,
        connection: int,
        peer: int,
        *,
        opener: bool,
        send: Callable[[int, object], None],
        forget: Callable[[int], object],
    ) -> None:
        self.connection = connection
        self.peer = peer
        self.opener = opener
        self._send = send
        self._forget = forget
        self._inbox: deque[bytes] = deque()
        self._next_in = 0
        self._next_out = 0
        self._waiter: asyncio.Future[None] | None = None
        self.closed = False

    async def send(self, message: bytes) -> None:
        if self.closed:
            raise StreamClosed(f"connection {self.connection} is closed")
        self._send(self.peer, StreamFrame(self.connection, self._next_out, message, self.opener))
        self._next_out += 1

    async def receive(self) -> bytes:
        while not self._inbox:
            if self.closed:
                raise StreamClosed(f"connection {self.connection} was reset")
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        return self._inbox.popleft()

    async def close(self) -> None:
        if not self.closed:
            self._send(self.peer, StreamReset(self.connection))
            self.broken()

    def take(self, frame: StreamFrame) -> None:
        """A frame of this connection arrived: in order it is received, a copy is dropped, a gap breaks."""
        if self.closed or frame.seq < self._next_in:
            return
        if frame.seq > self._next_in:
            self._send(self.peer, StreamReset(self.connection))
            self.broken()
            return
        self._next_in += 1
        self._inbox.append(frame.body)
        self._wake()

    def broken(self) -> None:
        """The connection is gone here: a waiting receive fails, the end is forgotten."""
        self.closed = True
        self._forget(self.connection)
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
