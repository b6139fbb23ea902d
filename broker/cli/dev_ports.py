"""The ports ``highwater dev`` listens on, checked before any broker starts.

``make run`` and every documented example name fixed ports (HTTP 9092.., Kafka 19092..),
so dev never moves a port: one that cannot be had stops the command, before anything
starts, with one line naming the port, its listener and, when ``/proc`` tells, the
process holding it.

The probe binds the way the broker will (``broker.listening.bind_listener``, with
SO_REUSEADDR). So a connection in TIME-WAIT on the port does not count as taken: a
broker's own close leaves one for a minute (Ctrl-C then ``make run`` again at once, or
an HTTP request sent to a Kafka port, which the listener answers by closing), and the
broker's bind succeeds over it. Invariant: a port that passes is one the broker's bind
accepts, unless another process takes it in between (the broker then fails to start
and dev reports it).
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path

from broker.listening import ListenerUnavailable, bind_listener

MAX_PORT = 65_535
HOST = "127.0.0.1"
TCP_TABLES = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))
TCP_LISTEN = "0A"
"""The state column of a listening socket in ``/proc/net/tcp``."""
OWNER_COMMAND_CHARS = 80


class PortUnavailable(Exception):
    """A listener's port is above 65535 or cannot be bound; ``str(error)`` is the one-line refusal."""


@dataclass(frozen=True)
class PlannedListener:
    """One port dev will hand to a broker: whose, which listener, and the option that moves it."""

    node_id: int
    listener: str
    port: int
    option: str

    def describe(self) -> str:
        return f"port {self.port} (broker {self.node_id}'s {self.listener})"


def planned_listeners(count: int, base_port: int, kafka_base_port: int) -> list[PlannedListener]:
    """Broker i's HTTP port ``base_port + i - 1`` and Kafka port ``kafka_base_port + i - 1``."""
    return [
        listener
        for node_id in range(1, count + 1)
        for listener in (
            PlannedListener(node_id, "HTTP listener", base_port + node_id - 1, "--base-port"),
            PlannedListener(node_id, "Kafka listener", kafka_base_port + node_id - 1, "--kafka-base-port"),
        )
    ]


def check_ports(listeners: list[PlannedListener]) -> None:
    """Raise ``PortUnavailable`` for a port no broker could bind: first one above ``MAX_PORT``, then a taken one.

    Impossible ports are named before any bind is tried: a plan that runs off the end
    of the port range is wrong whatever else listens, and saying so does not depend on
    which ports other processes hold at that moment.
    """
    for check in (out_of_range, bind_refusal):
        for listener in listeners:
            refusal = check(listener)
            if refusal is not None:
                raise PortUnavailable(refusal)


def out_of_range(listener: PlannedListener) -> str | None:
    """Why ``listener``'s port is not a port at all, in one line; None when it is one."""
    if listener.port > MAX_PORT:
        return f"{listener.describe()} is above {MAX_PORT}; choose a lower {listener.option}"
    return None


def bind_refusal(listener: PlannedListener) -> str | None:
    """Why ``listener``'s port cannot be had, in one line; None when the broker's bind would succeed."""
    try:
        bind_listener(HOST, listener.port, listener.listener).close()
    except ListenerUnavailable as error:
        if error.errno != errno.EADDRINUSE:
            reason = os.strerror(error.errno or 0).lower()
            return f"{listener.describe()} cannot be used: {reason}; choose another {listener.option}"
        owner = port_owner(listener.port)
        held = f" by {owner}" if owner else ""
        return f"{listener.describe()} is in use{held}; stop it or choose other ports with {listener.option}"
    return None


def port_owner(port: int) -> str | None:
    """``pid N (command)`` of a process holding a socket on local ``port``, best effort.

    ``/proc/net/tcp*`` gives the socket's inode (a listening one first), and the
    process is the one with an ``fd`` linking to ``socket:[inode]``. None when nothing
    is found: no ``/proc``, or the holder belongs to a user whose fds we may not read.
    """
    targets = {f"socket:[{inode}]" for inode in socket_inodes(port)}
    if not targets:
        return None
    for process in Path("/proc").iterdir():
        if process.name.isdigit() and _holds_any(process, targets):
            return f"pid {process.name} ({_command(process)})"
    return None


def socket_inodes(port: int) -> list[str]:
    """Inodes of the TCP sockets bound to local ``port``, listening ones first (TIME-WAIT ones have none)."""
    found = [(state != TCP_LISTEN, inode) for state, inode in tcp_sockets(port) if inode != "0"]
    return [inode for _, inode in sorted(found)]


def tcp_sockets(port: int) -> list[tuple[str, str]]:
    """``(state, inode)`` of every TCP socket whose local port is ``port``, from ``/proc/net/tcp*``.

    The state is the kernel's hex code (``0A`` listening, ``06`` TIME-WAIT); a table that
    cannot be read (no ``/proc``) counts as empty.
    """
    sockets = []
    for table in TCP_TABLES:
        try:
            lines = table.read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port:
                sockets.append((fields[3], fields[9]))
    return sockets


def _holds_any(process: Path, targets: set[str]) -> bool:
    try:
        fds = list((process / "fd").iterdir())
    except OSError:
        return False
    return any(_link(fd) in targets for fd in fds)


def _link(fd: Path) -> str:
    """Where ``fd`` points; ``""`` when it closed meanwhile or may not be read."""
    try:
        return os.readlink(fd)
    except OSError:
        return ""


def _command(process: Path) -> str:
    """The process's command line (shortened), or its name when the command line cannot be read."""
    try:
        command = (process / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        command = ""
    if not command:
        try:
            command = (process / "comm").read_text().strip()
        except OSError:
            return "command unknown"
    return command if len(command) <= OWNER_COMMAND_CHARS else command[: OWNER_COMMAND_CHARS - 1] + "…"
