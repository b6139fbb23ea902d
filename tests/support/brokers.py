"""Real broker processes on loopback for integration tests.

``BrokerProcess`` (the one process the harness, ``tests.support.cluster``, starts per
broker) runs ``highwater serve`` with the arguments a user would give, on a free port,
with its output in a log file that is printed when a test fails to start it. The
process is forked from this test process's launcher (``tests.support.launcher``), which
has already imported the broker: the same command, without about 0.9 s of CPU per
start. Faults are real signals: SIGTERM (clean stop), SIGKILL, SIGSTOP/SIGCONT. A broker
given an ``ssl_context`` (the client side of its TLS settings, passed in ``env``) is
reached over ``https://`` with that context.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import ssl
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from broker.cli.dev import serve_arguments
from tests.support.launcher import REPO_ROOT, LaunchedProcess, Launcher

_HANDED_OUT: set[int] = set()
LOWEST_PORT = 20000


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A loopback TCP port that is free now, below the kernel's ephemeral range.

    ``bind(0)`` answers from the ephemeral range, where the kernel also picks the source
    ports of outgoing connections: between this call and the broker's own bind, one of
    the suite's many client connections could take the port, and the broker would fail
    to start. Below that range only listeners take ports, and one test process never
    hands out the same port twice.
    """
    return free_port_run(1)


def port_range() -> range:
    """This test process's own slice of the ports below the ephemeral range.

    Parallel workers (pytest-xdist sets ``PYTEST_XDIST_WORKER=gw<n>`` and the worker
    count) each draw from a disjoint slice, so two workers can never both find a port
    free and both hand it to a broker before either binds it.
    """
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    width = (_ephemeral_low() - LOWEST_PORT) // workers
    low = LOWEST_PORT + int(worker) * width
    return range(low, low + width)


def free_port_run(count: int) -> int:
    """The first of ``count`` consecutive free ports (``highwater dev`` listens on base..base+count-1)."""
    slice_ = port_range()
    for _ in range(1000):
        base = random.randint(slice_.start, slice_.stop - count)
        run = range(base, base + count)
        if any(port in _HANDED_OUT for port in run) or not all(map(_bindable, run)):
            continue
        _HANDED_OUT.update(run)
        return base
    raise RuntimeError(f"no {count} free consecutive ports in {slice_}")


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def http_json(
    method: str,
    url: str,
    body: dict | None = None,
    timeout_s: float = 10.0,
    context: ssl.SSLContext | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict]:
    """A tiny blocking JSON client, so tests depend on nothing but the standard library."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s, context=context) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else {}
    except urllib.error.HTTPError as error:
        raw = error.read()
        return error.code, json.loads(raw) if raw else {}


def standalone_serve_arguments(directory: Path, port: int) -> list[str]:
    """``serve ...`` for one broker alone, with its data and its sqlite store under ``directory``."""
    return serve_arguments(1, port, directory / "data", f"sqlite://{directory / 'metadata.db'}")


@dataclass
class BrokerProcess:
    node_id: int
    data_dir: Path
    metadata_store: str
    port: int = field(default_factory=free_port)
    extra_args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    process: LaunchedProcess | None = None
    paused: bool = False
    ssl_context: ssl.SSLContext | None = None
    auth_headers: dict[str, str] = field(default_factory=dict)
    """Credentials the harness's own requests carry, on a broker with authentication on."""

    @property
    def url(self) -> str:
        scheme = "http" if self.ssl_context is None else "https"
        return f"{scheme}://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir.parent / f"broker-{self.node_id}.log"

    def start(self, wait: bool = True, timeout_s: float = 30.0) -> BrokerProcess:
        argv = serve_arguments(self.node_id, self.port, self.data_dir, self.metadata_store, *self.extra_args)
        env = {**os.environ, "HIGHWATER_LOG_FORMAT": "json", **self.env}
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        self.paused = False
        self.process = Launcher.shared().launch(argv, env, REPO_ROOT, self.log_path)
        if wait:
            self.wait_ready(timeout_s)
        return self

    def wait_ready(self, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"broker {self.node_id} exited ({self.process.returncode}):\n{self.log_tail()}")
            try:
                if http_json("GET", f"{self.url}/readyz", timeout_s=1.0, context=self.ssl_context)[0] == 200:
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            time.sleep(0.05)
        raise RuntimeError(f"broker {self.node_id} not ready after {timeout_s} s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, timeout_s: float = 20.0) -> int:
        """SIGTERM and wait: the broker's controlled shutdown."""
        if self.process is None:
            return 0
        code = self.process.poll()
        if code is not None:
            return code
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout_s)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def pause(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)
        self.paused = False

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None
