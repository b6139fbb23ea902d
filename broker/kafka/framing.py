"""Kafka's framing: every request and response is a big-endian int32 size, then that many bytes.

Pure (no sockets, no asyncio), in the manner of h11: the listener feeds whatever the
socket gave and gets back whole frames. Invariants:

- a frame's size is checked as soon as its 4-byte prefix arrives, before any of its
  body is kept: a negative size or one above ``max_frame_bytes`` (Kafka's
  ``socket.request.max.bytes``, 100 MiB by default) raises ``FrameError`` and the
  connection is closed, so a 2 GiB prefix never makes the broker buffer 2 GiB;
- the decoder keeps at most one partial frame plus the bytes of the last ``feed``,
  so memory per connection is bounded by the frame limit and the read size;
- bytes are handed out exactly once and in order; a connection that ends inside a
  frame is a truncated frame (``pending_bytes`` > 0 at end of stream).
"""

from __future__ import annotations

import struct

SIZE_PREFIX = struct.Struct(">i")
SIZE_PREFIX_BYTES = SIZE_PREFIX.size


class FrameError(Exception):
    """The peer sent a size no Kafka client sends; the connection cannot be resynchronised."""


class FrameDecoder:
    """Splits a byte stream into frames (payloads without their size prefix)."""

    def __init__(self, max_frame_bytes: int) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._buffer = bytearray()
        self._expected: int | None = None

    @property
    def pending_bytes(self) -> int:
        """Bytes received that belong to no complete frame yet (non-zero at EOF = truncated)."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[bytes]:
        """Add ``data``; return every frame it completed, in order. ``FrameError`` on a bad size."""
        self._buffer += data
        frames: list[bytes] = []
        while True:
            if self._expected is None:
                if len(self._buffer) < SIZE_PREFIX_BYTES:
                    return frames
                (size,) = SIZE_PREFIX.unpack_from(self._buffer)
                check_frame_size(size, self.max_frame_bytes)
                del self._buffer[:SIZE_PREFIX_BYTES]
                self._expected = size
            if len(self._buffer) < self._expected:
                return frames
            frames.append(bytes(self._buffer[: self._expected]))
            del self._buffer[: self._expected]
            self._expected = None


def check_frame_size(size: int, max_frame_bytes: int) -> None:
    if size < 0:
        raise FrameError(f"negative frame size {size}")
    if size > max_frame_bytes:
        raise FrameError(f"frame size {size} is above the limit of {max_frame_bytes} bytes (kafka_max_request_bytes)")


def encode_frame(payload: bytes) -> bytes:
    """``payload`` with its size prefix."""
    return SIZE_PREFIX.pack(len(payload)) + payload
