"""Test hosts: Linux network namespaces on one private bridge, made and removed by the tier.

Each host is a namespace with one interface (``eth0``, the inside end of a veth pair whose
outside end is enslaved to the bridge) and one address in ``SUBNET``. The test process
itself is the client host: the bridge carries ``CLIENT_ADDRESS`` in the root namespace,
so the test reaches every host and every host reaches it, and nothing is routed off the
bridge (the hosts have no default route). Cutting a host off sets its ``eth0`` down inside
its namespace: its processes keep running and hear nothing, as when a cable is pulled.
Cutting two hosts from each other only is a blackhole route to the other's address in
each (``Host.block``): both keep reaching every other host.

Everything made here is named with ``PREFIX``, so ``remove_leftovers`` finds what an
earlier run that died left behind (a namespace keeps its processes' sockets alive, and
a bridge keeps the subnet's route) and removes it before a new network is made.
Root only: the tier runs as root in CI, as the machine's guide says. One network at a time
per machine: ``open`` takes ``LOCK_PATH`` (an exclusive ``flock``) before it removes any
leftover, so a second test run on the same machine waits instead of tearing down the
first one's hosts.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "hwh"
BRIDGE = f"{PREFIX}br0"
SUBNET = "10.213.59"
"""A /24 of the private range chosen for the tier; the machine's own networks do not use it."""
CLIENT_ADDRESS = f"{SUBNET}.1"
LOCK_PATH = Path("/run/highwater-host-tier.lock")


def _ip(*arguments: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *arguments], check=check, capture_output=True, text=True)


@dataclass
class Host:
    """One namespace: its name, its address, and the processes the tier started in it."""

    index: int
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def namespace(self) -> str:
        return f"{PREFIX}-{self.index}"

    @property
    def address(self) -> str:
        return f"{SUBNET}.{10 + self.index}"

    @property
    def outside_link(self) -> str:
        return f"{PREFIX}{self.index}o"

    def spawn(self, argv: list[str], log_path: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """Start ``argv`` inside this host's namespace, its output appended to ``log_path``."""
        with open(log_path, "ab") as log_file:
            process = subprocess.Popen(
                ["ip", "netns", "exec", self.namespace, *argv],
                stdout=log_file,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        self.processes.append(process)
        return process

    def cut(self) -> None:
        """Pull this host's cable: nothing in or out until ``reconnect``."""
        _ip("-n", self.namespace, "link", "set", "eth0", "down")

    def reconnect(self) -> None:
        """Plug the cable back in and lift every ``block``."""
        _ip("-n", self.namespace, "link", "set", "eth0", "up")
        _ip("-n", self.namespace, "route", "flush", "type", "blackhole")

    def block(self, address: str) -> None:
        """Drop whatever this host sends to ``address``, and nothing else: one direction of a
        cut between two hosts that both still reach the rest (an asymmetric partition)."""
        _ip("-n", self.namespace, "route", "add", "blackhole", f"{address}/32")

    def kill_all(self) -> None:
        """SIGKILL every process in the namespace, the tier's and any they started."""
        _kill_processes(self.namespace)
        for process in self.processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()


class HostNetwork:
    """``count`` hosts on the bridge; ``close`` removes every namespace, link and process it made."""

    def __init__(self, count: int) -> None:
        self.hosts = [Host(index) for index in range(1, count + 1)]
        self._lock_fd: int | None = None

    def open(self) -> HostNetwork:
        self._lock_fd = os.open(LOCK_PATH, os.O_CREAT | os.O_RDWR, 0o644)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            remove_leftovers()
            _ip("link", "add", BRIDGE, "type", "bridge")
            _ip("addr", "add", f"{CLIENT_ADDRESS}/24", "dev", BRIDGE)
            _ip("link", "set", BRIDGE, "up")
            for host in self.hosts:
                self._add(host)
        except BaseException:
            self.close()
            raise
        return self

    @staticmethod
    def _add(host: Host) -> None:
        inside = f"{PREFIX}{host.index}i"
        _ip("netns", "add", host.namespace)
        _ip("link", "add", host.outside_link, "type", "veth", "peer", "name", inside)
        _ip("link", "set", inside, "netns", host.namespace)
        _ip("-n", host.namespace, "link", "set", inside, "name", "eth0")
        _ip("-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", "eth0")
        _ip("-n", host.namespace, "link", "set", "eth0", "up")
        _ip("-n", host.namespace, "link", "set", "lo", "up")
        _ip("link", "set", host.outside_link, "master", BRIDGE)
        _ip("link", "set", host.outside_link, "up")

    def close(self) -> None:
        try:
            for host in self.hosts:
                host.kill_all()
            remove_leftovers()
        finally:
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None

    def __enter__(self) -> HostNetwork:
        return self.open()

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _tier_namespaces() -> list[str]:
    names = [line.split()[0] for line in _ip("netns", "list").stdout.splitlines() if line.strip()]
    return [name for name in names if name.startswith(PREFIX)]


def _tier_links() -> list[str]:
    lines = _ip("-o", "link", "show").stdout.splitlines()
    names = [line.split(":")[1].strip().split("@")[0] for line in lines if ":" in line]
    return [name for name in names if name.startswith(PREFIX)]


def _pids(namespace: str) -> list[int]:
    return [int(pid) for pid in _ip("netns", "pids", namespace, check=False).stdout.split()]


def _kill_processes(namespace: str) -> None:
    for pid in _pids(namespace):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def leftovers() -> list[str]:
    """Namespaces and links named with ``PREFIX``: what a run left behind."""
    return _tier_namespaces() + _tier_links()


def remove_leftovers() -> None:
    """Kill what runs in the tier's namespaces, then delete them and the tier's links."""
    namespaces = _tier_namespaces()
    for namespace in namespaces:
        _kill_processes(namespace)
    deadline = time.monotonic() + 10
    for namespace in namespaces:
        while _pids(namespace) and time.monotonic() < deadline:
            time.sleep(0.05)
        _ip("netns", "delete", namespace, check=False)
    for link in _tier_links():
        _ip("link", "delete", link, check=False)
    remaining = leftovers()
    if remaining:
        raise RuntimeError(f"could not remove the host tier's leftovers: {remaining}")
