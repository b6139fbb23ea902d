"""The brokers a benchmark runs against: a running cluster, or ``N`` processes it starts itself.

``spawned_cluster(N)`` starts N real ``highwater serve`` processes on loopback ports
the kernel picks at each broker's bind, each with its own data directory in a
temporary directory and one shared sqlite metadata store, waits until every broker has registered (so a topic can place N
replicas), yields their URLs, and stops them with SIGTERM at the end (the directory,
logs included, is removed). Broker logs go to ``broker-<id>.log`` at level warning, so
logging does not weigh on the figures. With a ``SpawnedTls`` the brokers serve HTTPS
with its certificate and every call here uses its client options; with a
``SpawnedBasicAuth`` its user is made a super user in the store before any broker starts
(as an operator bootstraps the first admin) and the brokers take only authenticated calls.

``prepare_topic`` creates a fresh topic and waits until every partition has a leader
and a full ISR, so no run starts while replicas are still joining.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from broker.cli.dev import DevBroker, serve_command, stop_brokers
from broker.cli.throwaway_tls import SpawnedTls
from broker.client.admin import AdminClient
from broker.client.errors import TlsHandshakeFailed
from broker.client.http import ClusterClient
from broker.client.security import ClientSecurity
from broker.client.types import PartitionInfo
from broker.cluster.membership import registration_from
from broker.cluster.records import broker_key
from broker.cluster.security_store import SecurityStore
from broker.cluster.store_url import open_store
from broker.errors import HighwaterError
from broker.security.scram import new_credential

READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
KAFKA_LISTENER = "127.0.0.1:0"


@dataclass(frozen=True)
class SpawnedBasicAuth:
    """A super user with a random password, for a benchmark of brokers that authenticate every request."""

    username: str = "bench"
    password: str = field(default_factory=lambda: secrets.token_urlsafe(18), repr=False)

    @property
    def broker_env(self) -> dict[str, str]:
        return {
            "HIGHWATER_SECURITY__AUTHENTICATION": "basic",
            "HIGHWATER_SECURITY__SUPER_USERS": json.dumps([self.username]),
        }

    def secure(self, security: ClientSecurity) -> ClientSecurity:
        return dataclasses.replace(security, username=self.username, password=self.password)


async def _bootstrap_user(store_url: str, basic: SpawnedBasicAuth) -> None:
    store = await open_store(store_url)
    try:
        await SecurityStore(store).put_user(basic.username, new_credential(basic.password))
    finally:
        await store.close()


def client_security(tls: SpawnedTls | None, basic: SpawnedBasicAuth | None) -> ClientSecurity:
    """What a client of the spawned brokers presents: the throwaway CA, the bench user, both or nothing."""
    security = tls.client_security if tls else ClientSecurity()
    return basic.secure(security) if basic else security


def start_registered_brokers(
    count: int, root: Path, store: str, broker_env: dict[str, str], *extra: str
) -> list[DevBroker]:
    """``count`` brokers on ports the kernel picks at their own bind (``--port 0``), at the URLs they registered.

    A port chosen first and bound later is free only when chosen: in the ephemeral range
    any client connection can take it as its source port in between, and a benchmark
    opens hundreds. Bound as port 0, the port is the broker's from the start; the URL is
    read back from its registration in the store. A broker that exits or does not
    register within ``READY_TIMEOUT_S`` stops them all.
    """
    return _start_registered(range(1, count + 1), root, store, broker_env, extra, log_mode="wb")


def restart_registered_broker(
    node_id: int, root: Path, store: str, broker_env: dict[str, str], *extra: str
) -> DevBroker:
    """Start broker ``node_id`` of ``start_registered_brokers`` again on its data directory, its log appended to.

    Call it once its previous registration is gone (its lease expired): until then the
    store still names the previous process's URL, and the new one refuses to start.
    """
    return _start_registered([node_id], root, store, broker_env, extra, log_mode="ab")[0]


def _start_registered(
    node_ids: Iterable[int], root: Path, store: str, broker_env: dict[str, str], extra: tuple[str, ...], log_mode: str
) -> list[DevBroker]:
    processes: dict[int, subprocess.Popen] = {}
    env = {**os.environ, **broker_env}
    for node_id in node_ids:
        command = serve_command(node_id, 0, root / f"broker-{node_id}", store, *extra)
        with open(root / f"broker-{node_id}.log", log_mode) as log_file:
            processes[node_id] = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=env)
    try:
        urls = asyncio.run(_registered_urls(store, processes, READY_TIMEOUT_S))
    except BaseException:
        for node_id in processes:
            _print_log_tail(root, node_id)
        stop_brokers([DevBroker(node_id, "", process) for node_id, process in processes.items()], STOP_TIMEOUT_S)
        raise
    return [DevBroker(node_id, urls[node_id], process) for node_id, process in processes.items()]


async def _registered_urls(store_url: str, processes: dict[int, subprocess.Popen], timeout_s: float) -> dict[int, str]:
    store = await open_store(store_url)
    try:
        deadline = time.monotonic() + timeout_s
        urls: dict[int, str] = {}
        while True:
            for node_id, process in processes.items():
                if process.poll() is not None:
                    raise RuntimeError(f"broker {node_id} exited with status {process.returncode}")
                if node_id not in urls and (registered := await store.get(broker_key(node_id))) is not None:
                    urls[node_id] = registration_from(registered).url
            if len(urls) == len(processes):
                return urls
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"brokers {sorted(set(processes) - set(urls))} did not register within {timeout_s} s"
                )
            await asyncio.sleep(0.05)
    finally:
        await store.close()


async def _registered_brokers(client: ClusterClient, url: str) -> int:
    cluster_id = (await client.json_call("GET", f"{url}/v3/clusters"))["data"][0]["cluster_id"]
    return len((await client.json_call("GET", f"{url}/v3/clusters/{cluster_id}/brokers")).get("data", []))


async def wait_for_brokers(
    urls: list[str], expected: int, timeout_s: float = READY_TIMEOUT_S, security: ClientSecurity | None = None
) -> None:
    """Until every broker answers and each lists ``expected`` registered brokers; a failed TLS handshake at once."""
    deadline = time.monotonic() + timeout_s
    client = ClusterClient(urls, request_timeout_ms=2000, **(security or ClientSecurity()).client_options())
    try:
        while True:
            try:
                counts = [await _registered_brokers(client, url) for url in urls]
                if all(count >= expected for count in counts):
                    return
            except TlsHandshakeFailed:
                raise
            except (HighwaterError, KeyError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the brokers {urls} did not all see {expected} registered within {timeout_s} s")
            await asyncio.sleep(0.1)
    finally:
        await client.close()


@dataclass
class SpawnedBrokers:
    """What ``spawned_brokers`` started: the brokers, and what it takes to start one of them again."""

    brokers: list[DevBroker]
    root: Path
    store: str
    broker_env: dict[str, str]
    extra: tuple[str, ...]

    def restart(self, node_id: int) -> DevBroker:
        """Start broker ``node_id`` again (``restart_registered_broker``); it replaces its entry in ``brokers``."""
        broker = restart_registered_broker(node_id, self.root, self.store, self.broker_env, *self.extra)
        self.brokers[:] = [broker if b.node_id == node_id else b for b in self.brokers]
        return broker


@contextlib.contextmanager
def spawned_cluster(
    count: int, tls: SpawnedTls | None = None, basic: SpawnedBasicAuth | None = None, kafka: bool = False
) -> Iterator[list[DevBroker]]:
    """``count`` broker processes in a temporary directory, stopped and removed on exit (``spawned_brokers``)."""
    with spawned_brokers(count, tls, basic, kafka) as spawned:
        yield spawned.brokers


@contextlib.contextmanager
def spawned_brokers(
    count: int, tls: SpawnedTls | None = None, basic: SpawnedBasicAuth | None = None, kafka: bool = False
) -> Iterator[SpawnedBrokers]:
    """``count`` broker processes in a temporary directory, stopped and removed on exit.

    HTTPS with ``tls``; with ``basic``, its user exists before the brokers start and they
    authenticate every request. With ``kafka``, each broker also opens a Kafka listener on
    a port the kernel picks at its bind (``KAFKA_LISTENER``, no window for another process
    to take it); it registers the bound address, which the brokers list then shows.
    """
    with tempfile.TemporaryDirectory(prefix="highwater-bench-") as directory:
        root = Path(directory)
        store = f"sqlite://{root / 'metadata.db'}"
        if basic:
            asyncio.run(_bootstrap_user(store, basic))
        broker_env = {
            **(tls.broker_env if tls else {}),
            **(basic.broker_env if basic else {}),
            **({"HIGHWATER_KAFKA_LISTENER": KAFKA_LISTENER} if kafka else {}),
        }
        extra = ("--log-level", "warning")
        spawned = SpawnedBrokers(
            start_registered_brokers(count, root, store, broker_env, *extra), root, store, broker_env, extra
        )
        try:
            security = client_security(tls, basic)
            asyncio.run(wait_for_brokers([broker.url for broker in spawned.brokers], count, security=security))
            yield spawned
        except BaseException:
            for broker in spawned.brokers:
                _print_log_tail(root, broker.node_id)
            raise
        finally:
            stop_brokers(spawned.brokers, STOP_TIMEOUT_S)


def _print_log_tail(root: Path, node_id: int, lines: int = 15) -> None:
    log_path = root / f"broker-{node_id}.log"
    if log_path.exists():
        tail = log_path.read_text(errors="replace").splitlines()[-lines:]
        print(f"--- broker {node_id} log tail ---", *tail, sep="\n", file=sys.stderr)


async def prepare_topic(
    url: str,
    partitions: int,
    replication_factor: int,
    min_insync_replicas: int,
    prefix: str = "bench",
    timeout_s: float = READY_TIMEOUT_S,
    security: ClientSecurity | None = None,
    on_progress: Callable[[int], None] | None = None,
    on_created: Callable[[], None] | None = None,
    poll_s: float = 0.1,
) -> str:
    """A fresh topic whose partitions all have a leader and ``replication_factor`` in-sync replicas.

    ``on_created`` hears when the creation is answered; ``on_progress`` the number of ready
    partitions after every look, every ``poll_s`` (thousands of partitions take a while).
    ``timeout_s`` bounds the creation request as well as the wait.
    """
    topic = f"{prefix}-{uuid.uuid4().hex[:10]}"
    options = (security or ClientSecurity()).client_options()
    client = ClusterClient([url], request_timeout_ms=int(timeout_s * 1000), **options)
    try:
        await AdminClient(client).create_topic(
            topic, partitions, replication_factor, {"min.insync.replicas": str(min_insync_replicas)}
        )
        if on_created is not None:
            on_created()
        deadline = time.monotonic() + timeout_s
        while True:
            infos = await client.partitions(topic)
            ready = sum(1 for info in infos if in_sync(info, replication_factor))
            if on_progress is not None:
                on_progress(ready)
            if ready == partitions:
                return topic
            if time.monotonic() > deadline:
                raise RuntimeError(f"topic {topic} did not get leaders and full ISRs within {timeout_s} s")
            await asyncio.sleep(poll_s)
    finally:
        await client.close()


def in_sync(info: PartitionInfo, replication_factor: int) -> bool:
    """A partition led, with ``replication_factor`` replicas in its ISR."""
    return info.leader_id is not None and len(info.isr) == replication_factor
