"""Binding a broker's listening sockets: its HTTP port and its Kafka listener.

Both are bound before the broker registers, so the address it registers is the real port
(port 0: the kernel picks a free one). A port that cannot be had is reported naming the
listener and its address, so an operator is not sent looking at the other one.
"""

from __future__ import annotations

import errno
import socket

BACKLOG = 1024


class ListenerUnavailable(OSError):
    """A listening address could not be bound; ``errno`` is the bind's, ``message`` names the listener."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(code, message)
        self.message = message


def bind_listener(host: str, port: int, what: str) -> socket.socket:
    """A listening, non-blocking TCP socket on ``host:port``; ``what`` names the listener in an error."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except OSError as error:
        sock.close()
        reason = "address already in use" if error.errno == errno.EADDRINUSE else error.strerror
        raise ListenerUnavailable(error.errno or 0, f"cannot listen on {host}:{port} ({what}): {reason}") from error
    sock.setblocking(False)
    return sock
