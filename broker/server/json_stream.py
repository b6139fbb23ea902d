"""Split a byte stream of concatenated JSON objects into whole objects as they complete.

The streaming produce form of the REST Proxy sends records as JSON objects one after
another in a chunked body (``{...}{...}`` or one per line). Chunks end anywhere, even
inside a string or a multi-byte character, so the splitter tracks bracket depth and
string state over raw bytes: ``{ } [ ] " \\`` are ASCII and never occur inside a
UTF-8 multi-byte sequence, so byte scanning is exact.

Invariant: ``feed`` returns every object whose closing brace has arrived, in order,
and keeps only the incomplete tail; ``pending_bytes`` is the size of that tail, which
the caller bounds so one endless object cannot exhaust memory.

Pure: no asyncio, no I/O.
"""

from __future__ import annotations

import re

from broker.errors import InvalidRequest

_STRUCTURAL = re.compile(rb'[{}\[\]"]')
_STRING_END = re.compile(rb'["\\]')
_WHITESPACE = frozenset(b" \t\r\n")


class JsonObjectSplitter:
    def __init__(self) -> None:
        self._buffer = bytearray()
        self._scan_position = 0
        self._depth = 0
        self._in_string = False

    @property
    def pending_bytes(self) -> int:
        return len(self._buffer)

    def feed(self, chunk: bytes) -> list[bytes]:
        """Add ``chunk``; return the text of every object it completed."""
        self._buffer += chunk
        completed: list[bytes] = []
        start = 0
        position = self._scan_position
        buffer = self._buffer
        while True:
            if self._depth == 0:
                start, position = self._skip_whitespace(start, position)
                if position >= len(buffer):
                    break
            if self._in_string:
                match = _STRING_END.search(buffer, position)
                if match is None:
                    position = len(buffer)
                    break
                if match.group() == b"\\":
                    if match.end() >= len(buffer):
                        position = match.start()
                        break
                    position = match.end() + 1
                    continue
                self._in_string = False
                position = match.end()
                continue
            match = _STRUCTURAL.search(buffer, position)
            if match is None:
                position = len(buffer)
                break
            token = match.group()
            position = match.end()
            if token == b'"':
                self._in_string = True
            elif token in (b"{", b"["):
                self._depth += 1
            else:
                self._depth -= 1
                if self._depth < 0:
                    raise InvalidRequest(f"malformed JSON stream: unbalanced {token.decode()!r}")
                if self._depth == 0:
                    completed.append(bytes(buffer[start:position]))
                    start = position
        del buffer[:start]
        self._scan_position = position - start
        return completed

    def _skip_whitespace(self, start: int, position: int) -> tuple[int, int]:
        """Between objects only whitespace may appear; a stray value is malformed JSON."""
        buffer = self._buffer
        while position < len(buffer) and buffer[position] in _WHITESPACE:
            position += 1
        if position < len(buffer) and buffer[position] != ord("{"):
            snippet = bytes(buffer[position : position + 20]).decode("utf-8", "replace")
            raise InvalidRequest(f"malformed JSON stream: expected '{{' to start a record, got {snippet!r}")
        return position, position

    def finish(self) -> None:
        """The stream ended: anything left over is a truncated object."""
        if bytes(self._buffer).strip():
            raise InvalidRequest(f"malformed JSON stream: {len(self._buffer)} bytes of an unfinished object at the end")


def split_objects(body: bytes) -> list[bytes]:
    """Every object of a complete body of concatenated JSON objects."""
    splitter = JsonObjectSplitter()
    objects = splitter.feed(body)
    splitter.finish()
    return objects
