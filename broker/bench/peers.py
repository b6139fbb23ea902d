"""Replicated peers for ``highwater bench peers``: NATS JetStream R3 and Redis with two replicas.

Each peer runs as its own local processes on loopback, started here from Debian's
``nats-server`` and ``redis-server`` (``make bench-peers`` installs them and the Python
clients), and is measured the way ``highwater bench latency`` measures the broker: lone
requests, one at a time, paced, from a Python asyncio client, each latency from the send
to the acknowledgement.

- **NATS JetStream R3**: three servers in one cluster, a file-stored stream with three
  replicas; ``js.publish`` returns once the stream's leader has the message and a quorum
  of replicas stored it. JetStream does not fsync each message by default, and Debian's
  2.9 has no setting that would (``sync_interval`` arrived in 2.10).
- **Redis WAIT**: a primary and two replicas; ``SET`` then ``WAIT 2 0`` in one pipeline
  (one round trip), acknowledged once both replicas acknowledged the write. With
  ``appendfsync always`` every server fsyncs its AOF on each write, as highwater fsyncs on
  every replica; with AOF off nothing is fsynced.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

from broker.bench.stats import LatencySummary, summarize_latencies_ns

SERVERS = ("nats-server", "redis-server")
READY_TIMEOUT_S = 30.0
STREAM = "bench"


class PeerUnavailable(Exception):
    """A peer could not be started or never became ready; the message says which and why."""


def missing_servers() -> list[str]:
    """The peer server programs not on PATH (``make bench-peers`` installs them)."""
    return [name for name in SERVERS if shutil.which(name) is None]


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@contextlib.contextmanager
def _processes(commands: list[list[str]], directory: Path) -> Iterator[None]:
    """Run ``commands`` (their output in ``directory``), stopped and waited for on exit."""
    running: list[subprocess.Popen] = []
    try:
        for index, command in enumerate(commands):
            log = (directory / f"server-{index}.log").open("wb")
            running.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=directory))
        yield
    finally:
        for process in running:
            process.terminate()
        for process in running:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


async def paced(request: Callable[[], Awaitable[object]], count: int, rate: float) -> LatencySummary:
    """``count`` lone requests at ``rate``/s (0: back to back), after 5 % of them as warm-up."""
    for _ in range(max(1, count // 20)):
        await request()
    interval_ns = 1e9 / rate if rate else 0.0
    latencies: list[int] = []
    started_ns = time.monotonic_ns()
    for sent in range(count):
        delay_ns = started_ns + sent * interval_ns - time.monotonic_ns()
        if delay_ns > 0:
            await asyncio.sleep(delay_ns / 1e9)
        send_ns = time.monotonic_ns()
        await request()
        latencies.append(time.monotonic_ns() - send_ns)
    summary = summarize_latencies_ns(latencies)
    assert summary is not None
    return summary


# ---------------------------------------------------------------- NATS JetStream


@contextlib.contextmanager
def nats_cluster() -> Iterator[str]:
    """Three JetStream servers in one cluster; yields the client URLs (comma-separated)."""
    client_ports, route_ports = _free_ports(3), _free_ports(3)
    with tempfile.TemporaryDirectory(prefix="highwater-bench-nats-") as root:
        directory = Path(root)
        commands = []
        for index in range(3):
            routes = ", ".join(f'"nats-route://127.0.0.1:{port}"' for port in route_ports if port != route_ports[index])
            config = directory / f"n{index}.conf"
            config.write_text(
                f"port: {client_ports[index]}\nserver_name: n{index}\n"
                f'jetstream {{ store_dir: "{directory / f"n{index}"}" }}\n'
                f'cluster {{ name: bench, listen: "127.0.0.1:{route_ports[index]}", routes: [{routes}] }}\n'
            )
            commands.append(["nats-server", "-c", str(config)])
        with _processes(commands, directory):
            yield ",".join(f"nats://127.0.0.1:{port}" for port in client_ports)


async def nats_lone_publish(servers: str, record: bytes, count: int, rate: float) -> LatencySummary:
    """Lone ``js.publish`` to an R3 stream, created once the cluster has a JetStream leader."""
    import nats
    from nats.js.api import StorageType, StreamConfig

    client = await nats.connect(servers=servers.split(","), connect_timeout=5)
    try:
        js = client.jetstream(timeout=5)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            try:
                await js.add_stream(
                    StreamConfig(name=STREAM, subjects=[STREAM], num_replicas=3, storage=StorageType.FILE)
                )
                await js.publish(STREAM, record)
                break
            except Exception as error:
                if time.monotonic() > deadline:
                    raise PeerUnavailable(f"NATS JetStream R3 never became ready: {error!r}") from error
                await asyncio.sleep(0.25)
        return await paced(lambda: js.publish(STREAM, record), count, rate)
    finally:
        await client.close()


# ---------------------------------------------------------------- Redis


@contextlib.contextmanager
def redis_group(appendfsync_always: bool) -> Iterator[int]:
    """A Redis primary and two replicas; yields the primary's port."""
    ports = _free_ports(3)
    persistence = ["--appendonly", "yes", "--appendfsync", "always"] if appendfsync_always else ["--appendonly", "no"]
    with tempfile.TemporaryDirectory(prefix="highwater-bench-redis-") as root:
        directory = Path(root)
        commands = []
        for index, port in enumerate(ports):
            own = directory / f"r{index}"
            own.mkdir()
            command = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", str(own)]
            if index:
                command += ["--replicaof", "127.0.0.1", str(ports[0])]
            commands.append(command + persistence)
        with _processes(commands, directory):
            yield ports[0]


async def redis_lone_wait(port: int, record: bytes, count: int, rate: float) -> LatencySummary:
    """Lone ``SET`` + ``WAIT 2 0`` pipelines, once both replicas are attached and acknowledge."""
    import redis.asyncio as redis

    client = redis.Redis(host="127.0.0.1", port=port)
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            try:
                if await client.execute_command("WAIT", 2, 1000) == 2:
                    break
            except (OSError, redis.RedisError) as error:
                if time.monotonic() > deadline:
                    raise PeerUnavailable(f"Redis replicas never attached: {error!r}") from error
            if time.monotonic() > deadline:
                raise PeerUnavailable("Redis replicas never attached")
            await asyncio.sleep(0.25)

        async def write() -> None:
            async with client.pipeline(transaction=False) as pipe:
                pipe.set(STREAM, record)
                pipe.execute_command("WAIT", 2, 0)
                _, acknowledged = await pipe.execute()
            if acknowledged != 2:
                raise PeerUnavailable(f"WAIT 2 answered {acknowledged}")

        return await paced(write, count, rate)
    finally:
        await client.aclose()
