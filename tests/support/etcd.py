"""A real single-member etcd server for tests.

Tests never mock etcd: they start the real ``etcd`` binary on free loopback ports
with a private data directory. ``restart()`` keeps the ports and the data directory,
so clients can reconnect to the same URL and find their keys, revisions and leases
(etcd renews lease deadlines when a member restarts, as it does on leader change).

The binary comes from the Debian packages ``etcd-server`` and ``etcd-client``;
``make test`` installs them when missing. A missing binary is a hard failure, never a
skip, so a CI box without etcd cannot pass by silently testing less.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.support.brokers import free_port

ETCD_MISSING_MESSAGE = (
    "the `etcd` binary was not found on PATH; `make test` installs it (apt-get install -y etcd-server etcd-client)"
)


def etcd_binary() -> str:
    """The ``etcd`` on PATH; a missing one fails the test, never skips it."""
    binary = shutil.which("etcd")
    if binary is None:
        raise RuntimeError(ETCD_MISSING_MESSAGE)
    return binary


def member_command(name: str, data_dir: Path, client_url: str, peer_url: str, initial_cluster: str) -> list[str]:
    """One member's ``etcd`` command line: its name, data directory and URLs, and the
    ``name=peer URL,...`` of the cluster it forms (ignored once its data directory has one)."""
    return [
        etcd_binary(),
        "--name", name,
        "--data-dir", str(data_dir),
        "--listen-client-urls", client_url,
        "--advertise-client-urls", client_url,
        "--listen-peer-urls", peer_url,
        "--initial-advertise-peer-urls", peer_url,
        "--initial-cluster", initial_cluster,
        "--initial-cluster-state", "new",
    ]  # fmt: skip


class EtcdServer:
    """One etcd member on 127.0.0.1 with its own data dir; start, stop, restart."""

    def __init__(self, data_dir: Path, startup_timeout_s: float = 15.0) -> None:
        etcd_binary()
        self.data_dir = data_dir
        self.client_port = free_port()
        self.peer_port = free_port()
        self.startup_timeout_s = startup_timeout_s
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = data_dir.parent / f"{data_dir.name}.log"

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.client_port}"

    @property
    def url(self) -> str:
        """The metadata-store URL (``etcd://host:port``) for this server."""
        return f"etcd://{self.endpoint}"

    def _command(self) -> list[str]:
        client = f"http://127.0.0.1:{self.client_port}"
        peer = f"http://127.0.0.1:{self.peer_port}"
        # Short raft timers: a single member elects itself within ~100 ms.
        timers = ["--heartbeat-interval", "20", "--election-timeout", "200"]
        return member_command("hw-test", self.data_dir, client, peer, f"hw-test={peer}") + timers

    def start(self) -> None:
        if self.process is not None and self.process.poll() is None:
            return
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log_file:
            self.process = subprocess.Popen(self._command(), stdout=log_file, stderr=subprocess.STDOUT)
        self._wait_healthy()

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        health_url = f"http://{self.endpoint}/health"
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"etcd exited with {self.process.returncode}; see {self.log_path}")
            try:
                with urllib.request.urlopen(health_url, timeout=0.5) as response:
                    if b'"health":"true"' in response.read():
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.05)
        raise RuntimeError(f"etcd did not become healthy in {self.startup_timeout_s}s; see {self.log_path}")

    def stop(self) -> None:
        """Kill etcd with SIGKILL (a crash, not a graceful shutdown) and reap it."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)
        self.process = None

    def restart(self) -> None:
        """Crash and start again on the same ports and data dir."""
        self.stop()
        self.start()

    def __enter__(self) -> EtcdServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
