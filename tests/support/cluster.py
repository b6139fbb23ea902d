"""The one harness for every test that starts brokers: a ``ClusterSpec`` in, a started ``Cluster`` out.

A spec says what a test needs (how many brokers, which settings, security, TLS, a
Kafka listener, sqlite or etcd); ``start_cluster`` starts real ``highwater serve``
processes (``tests.support.brokers.BrokerProcess``) and hands back a ``Cluster`` that
already knows how to reach them: the admin credentials, the TLS context, the Kafka
bootstrap. A test asks it to ``create_topic``, ``produce``, ``read`` and
``wait_until`` a condition, and breaks brokers through ``cluster.brokers[id]``.

Settings are named as the settings model names them (``replica_lag_time_max_ms``,
``security.authentication``) and checked when the spec is built: a spec built at
module level (the usual place) fails collection on a misspelt name, with the closest
real name, instead of starting brokers that silently ignore it.

Fixtures: ``cluster_fixture(spec)`` makes a fixture of one cluster per test, or per
module with ``scope="module"`` (then every test in the module takes its own names
from the ``prefix`` fixture); the ``clusters`` fixture starts clusters whose spec a
test decides itself (a parametrized store, two clusters), all stopped after the test.
"""

from __future__ import annotations

import asyncio
import json
import signal
import ssl
import subprocess
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TypeVar

import aiohttp
import pytest
from typer.testing import CliRunner

from broker.cluster.security_store import SecurityStore
from broker.cluster.store_url import open_store
from broker.command import app
from broker.security.broker_token import broker_authorization
from config import variables
from config.broker import BrokerSettings
from config.unknown_names import closest_name_hint, environment_variable, setting_paths
from tests.support.brokers import BrokerProcess, free_port, http_json
from tests.support.etcd import EtcdServer
from tests.support.pki import Pki, make_pki
from tests.support.waiting import wait_until

T = TypeVar("T")

FAST_SETTINGS: Mapping[str, object] = {
    "replica_lag_time_max_ms": 2000,
    "replica_fetch_wait_max_ms": 200,
    "broker_session_timeout_ms": 2000,
    "broker_heartbeat_interval_ms": 300,
    "replica_high_watermark_checkpoint_interval_ms": 500,
    "auto_leader_rebalance_enable": False,
}
"""Short timeouts, so a killed broker is noticed in about two seconds, not ten; and no
periodic preferred-leader rebalance, so every leadership move a test sees is one it caused."""

STEADY_SETTINGS: Mapping[str, object] = {
    "replica_lag_time_max_ms": 30000,
    "broker_session_timeout_ms": 30000,
    "broker_heartbeat_interval_ms": 500,
}
"""A follower paused for a few seconds stays registered and in the ISR, so a test can
hold the high watermark still on purpose (merge over ``FAST_SETTINGS``)."""

ADMIN = "admin"
ADMIN_PASSWORD = "admin-pw-1"

_SETTING_PATHS = {".".join(path): path for path in setting_paths(BrokerSettings)}


class SpecError(ValueError):
    """A ``ClusterSpec`` names a setting the broker does not have."""


def setting_variables(settings: Mapping[str, object]) -> dict[str, str]:
    """The ``HIGHWATER_*`` environment that gives ``settings`` (named by dotted field path) to a broker.

    Raises ``SpecError`` naming the closest real setting for a name the broker lacks.
    """
    variables = {}
    for name, value in settings.items():
        path = _SETTING_PATHS.get(name)
        if path is None:
            hint = closest_name_hint(tuple(name.split(".")), _SETTING_PATHS.values(), ".".join)
            raise SpecError(f"ClusterSpec: no broker setting {name!r} ({hint})")
        variables[environment_variable(BrokerSettings, path)] = _variable_value(value)
    return variables


def _variable_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value)
    return str(value)


@dataclass(frozen=True)
class ClusterSpec:
    """What a test needs started. Frozen, so a module can share one and derive others with ``with_settings``.

    ``settings`` go over ``FAST_SETTINGS`` unless ``fast`` is off (the brokers' own
    defaults, for tests that measure them). ``per_broker`` gives one broker settings of
    its own (``{2: {"rack": "b"}}``).
    """

    brokers: int = 3
    settings: Mapping[str, object] = field(default_factory=dict)
    per_broker: Mapping[int, Mapping[str, object]] = field(default_factory=dict)
    fast: bool = True
    store: Literal["sqlite", "etcd"] = "sqlite"
    security: bool = False
    """``authentication = "basic"``, with ``admin`` (``ADMIN_PASSWORD``) a super user created offline first."""
    tls: bool = False
    """HTTPS on every listener, from a fresh throwaway CA (``tests.support.pki``)."""
    kafka: bool = False
    """A Kafka listener on each broker, on a free port of its own."""

    def __post_init__(self) -> None:
        self.environment()
        for overrides in self.per_broker.values():
            setting_variables(overrides)
        if self.brokers < 1:
            raise SpecError(f"ClusterSpec: brokers must be at least 1, got {self.brokers}")

    def with_settings(self, **settings: object) -> ClusterSpec:
        """This spec with more settings (keyword names are top-level settings)."""
        return replace(self, settings={**self.settings, **settings})

    def environment(self) -> dict[str, str]:
        """Every broker's ``HIGHWATER_*`` settings from this spec (not those of TLS files or listeners)."""
        chosen = {**(FAST_SETTINGS if self.fast else {}), **self.settings}
        if self.security:
            chosen = {"security.authentication": "basic", "security.super_users": [ADMIN], **chosen}
        return setting_variables(chosen)


@dataclass(frozen=True)
class PartitionState:
    """One partition as the REST API describes it."""

    partition: int
    leader_id: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    high_watermark: int
    replica_log_end_offsets: dict[int, int]
    """Each replica's log end offset as its leader last saw it (-1: unknown)."""


class Cluster:
    """Started brokers and what a test asks of them, with the harness's own credentials and TLS context."""

    def __init__(self, spec: ClusterSpec, root: Path) -> None:
        self.spec = spec
        self.root = root
        self._resources = ExitStack()
        self.etcd: EtcdServer | None = None
        self.pki: Pki | None = make_pki(root / "pki") if spec.tls else None
        self._ssl_context = self._client_ssl_context()
        self.metadata_store = f"sqlite://{(root / 'metadata.db').resolve()}"
        self.kafka_addresses: dict[int, str] = {}
        self.cluster_id = ""
        self.brokers: dict[int, BrokerProcess] = {}
        for node_id in range(1, spec.brokers + 1):
            if spec.kafka:
                self.kafka_addresses[node_id] = f"127.0.0.1:{free_port()}"
            self.brokers[node_id] = self._broker(node_id, root / f"broker-{node_id}", self.kafka_addresses.get(node_id))

    def _broker(self, node_id: int, data_dir: Path, kafka_listener: str | None = None) -> BrokerProcess:
        """Broker ``node_id`` as the spec sets it up: its settings, this cluster's store, TLS and credentials."""
        settings = dict(self.spec.per_broker.get(node_id, {}))
        if kafka_listener is not None:
            settings["kafka_listener"] = kafka_listener
        env = {**self.spec.environment(), **setting_variables(settings)}
        if self.pki is not None:
            env = {**setting_variables(self.pki.tls_settings()), **env}
        return BrokerProcess(
            node_id,
            data_dir,
            self.metadata_store,
            env=env,
            ssl_context=self.ssl_context(),
            auth_headers=self.headers(),
        )

    # --- lifecycle -------------------------------------------------------------------

    def start(self, before_brokers: Callable[[Cluster], None] | None = None) -> Cluster:
        """Start every broker and wait until each sees all of them registered.

        ``before_brokers`` is called once the metadata store runs and before any broker
        starts: a tier that puts something of its own between the brokers and what they
        reach (the chaos tier's cuttable proxies in front of etcd) points
        ``brokers[id].metadata_store`` there. A start that fails stops what it started:
        the caller never gets the cluster to shut down.
        """
        try:
            if self.spec.store == "etcd":
                self.etcd = self._resources.enter_context(EtcdServer(self.root / "etcd"))
                self.metadata_store = self.etcd.url
                for broker in self.brokers.values():
                    broker.metadata_store = self.metadata_store
            if before_brokers is not None:
                before_brokers(self)
            if self.spec.security:
                self.cli(["users", "add", ADMIN, "--password-stdin", "--metadata", self.metadata_store], ADMIN_PASSWORD)
            for broker in self.brokers.values():
                broker.start(wait=False)
            for broker in self.brokers.values():
                broker.wait_ready()
            self.cluster_id = self._ask_cluster_id()
            self.wait_for_brokers(set(self.brokers))
        except BaseException:
            self.shutdown()
            raise
        return self

    def shutdown(self) -> None:
        """SIGTERM every running broker (a paused one is resumed first), then stop the store."""
        for broker in self.brokers.values():
            if broker.alive:
                broker.resume()
                assert broker.process is not None
                broker.process.send_signal(signal.SIGTERM)
        for broker in self.brokers.values():
            if broker.process is not None:
                try:
                    broker.process.wait(20)
                except subprocess.TimeoutExpired:
                    broker.kill()
        self._resources.close()

    def restart(self, broker_id: int) -> None:
        """Start a stopped or killed broker again and wait until every live broker sees it registered."""
        self.brokers[broker_id].start()
        self.wait_until(
            lambda: all(broker_id in self.registered_ids(other) for other in self.live_ids()),
            f"every live broker to see broker {broker_id} registered again",
        )

    def extra_broker(self, node_id: int, name: str) -> BrokerProcess:
        """A broker process set up as this cluster's are (the spec's settings, its store, TLS and
        credentials, no Kafka listener) under ``root/name``, neither started nor one of ``brokers``:
        a broker that joins later, or one that claims a node id already taken. Shutdown kills it
        if it still runs."""
        broker = self._broker(node_id, self.root / name / f"broker-{node_id}")
        self._resources.callback(broker.kill)
        return broker

    # --- addressing ------------------------------------------------------------------

    def live_ids(self) -> set[int]:
        return {broker_id for broker_id, broker in self.brokers.items() if broker.alive}

    def url(self, via: int | None = None) -> str:
        """Broker ``via``'s URL, or one that answers (running and not paused: a stopped one would hang the caller)."""
        if via is not None:
            return self.brokers[via].url
        return next(b.url for b in self.brokers.values() if b.alive and not b.paused)

    def base(self, via: int | None = None) -> str:
        return f"{self.url(via)}/v3/clusters/{self.cluster_id}"

    def bootstrap(self, *broker_ids: int) -> str:
        """Kafka ``bootstrap.servers`` of the given brokers (all by default)."""
        return ",".join(self.kafka_addresses[b] for b in broker_ids or sorted(self.kafka_addresses))

    def ssl_context(self) -> ssl.SSLContext | None:
        """The harness's TLS client context, built once (every request of the harness uses it)."""
        return self._ssl_context

    def _client_ssl_context(self) -> ssl.SSLContext | None:
        """A context that trusts the CA, and presents the client certificate (CN
        ``tests.support.pki.CLIENT_CN``) when the spec's ``tls.client_auth`` asks brokers for one."""
        if self.pki is None:
            return None
        return self.pki.client_context(with_certificate=self.spec.settings.get("tls.client_auth", "none") != "none")

    def headers(self, user: str = ADMIN, password: str = ADMIN_PASSWORD) -> dict[str, str]:
        """The ``Authorization`` of ``user`` (the admin by default); none without security."""
        if not self.spec.security:
            return {}
        return {"Authorization": aiohttp.encode_basic_auth(user, password)}

    def broker_headers(self, node_id: int) -> dict[str, str]:
        """The ``Authorization`` broker ``node_id`` sends other brokers: for tests of the broker-only routes."""
        secret = asyncio.run(_broker_secret(self.metadata_store))
        return {"Authorization": broker_authorization(node_id, secret)}

    def client_options(self, user: str = ADMIN, password: str = ADMIN_PASSWORD) -> dict[str, Any]:
        """Keyword settings of the Python ``Producer``/``Consumer``/``AdminClient`` that reach this cluster as ``user``."""
        options: dict[str, Any] = {}
        if self.spec.security:
            options.update(username=user, password=password)
        if self.pki is not None:
            options["ssl_ca_file"] = self.pki.ca_file
        return options

    def cli_env(self, user: str = ADMIN, password: str = ADMIN_PASSWORD, via: int = 1) -> dict[str, str]:
        """The ``highwater`` command's environment to talk to broker ``via`` as ``user``."""
        env = {variables.SERVER: self.url(via)}
        if self.spec.security:
            env.update({variables.USERNAME: user, variables.PASSWORD: password})
        if self.pki is not None:
            env[variables.SSL_CA_FILE] = str(self.pki.ca_file)
        return env

    def cli(self, arguments: list[str], stdin: str | None = None, env: Mapping[str, str] | None = None) -> str:
        """Run ``highwater <arguments>`` in this process and return its output; it must succeed.

        ``env`` defaults to the admin's on broker 1 once the cluster runs (nothing before:
        the offline commands name the store themselves). ``stdin`` is one line, for
        ``--password-stdin``.
        """
        if env is None:
            env = self.cli_env() if self.cluster_id else {}
        answer = CliRunner().invoke(app, arguments, env=dict(env), input=None if stdin is None else stdin + "\n")
        assert answer.exit_code == 0, answer.output
        return answer.output

    # --- HTTP ------------------------------------------------------------------------

    def http(
        self,
        method: str,
        path: str,
        body: Any = None,
        via: int | None = None,
        headers: dict[str, str] | None = None,
        timeout_s: float = 10.0,
    ) -> tuple[int, Any]:
        """``method`` on ``path`` from the server's root (``/v3/clusters``, ``/consumers/...``, ``/metrics``).

        ``headers`` replace the admin's ``Authorization`` (``{}`` calls anonymously).
        """
        chosen = self.headers() if headers is None else headers
        url = f"{self.url(via)}{path}"
        return http_json(method, url, body, timeout_s=timeout_s, context=self.ssl_context(), headers=chosen)

    def v3(
        self,
        method: str,
        path: str,
        body: Any = None,
        via: int | None = None,
        headers: dict[str, str] | None = None,
        timeout_s: float = 10.0,
    ) -> tuple[int, Any]:
        """``http`` on ``path`` under this cluster's ``/v3/clusters/<id>`` (``/topics``, ``/brokers``...)."""
        return self.http(method, f"/v3/clusters/{self.cluster_id}{path}", body, via, headers, timeout_s)

    def api(self, method: str, path: str, body: Any = None, via: int | None = None) -> Any:
        """``v3`` that expects a 2xx and returns the answer's body."""
        status, answer = self.v3(method, path, body, via)
        assert 200 <= status < 300, (method, path, status, answer)
        return answer

    # --- questions -------------------------------------------------------------------

    def controller_id(self, via: int | None = None) -> int:
        status, answer = self.http("GET", "/v3/clusters", via=via)
        assert status == 200, answer
        return int(answer["data"][0]["controller_id"])

    def registered_ids(self, via: int | None = None) -> set[int]:
        return {broker["broker_id"] for broker in self.api("GET", "/brokers", via=via)["data"]}

    def partitions(self, topic: str, via: int | None = None) -> dict[int, PartitionState]:
        return _partition_states(self.api("GET", f"/topics/{topic}/partitions", via=via))

    def wait_stable(self, topic: str, timeout_s: float = 30.0) -> list[int]:
        """Until every transaction of ``topic`` is decided (each partition's last stable offset is its high
        watermark); the high watermarks then, by partition. A commit returns once its outcome is durable,
        and its markers reach the partitions just after (``docs/transactions.md``)."""

        def stable() -> list[int] | None:
            found = sorted(self.api("GET", f"/topics/{topic}/partitions")["data"], key=lambda p: p["partition_id"])
            decided = all(p["last_stable_offset"] == p["high_watermark"] for p in found)
            return [p["high_watermark"] for p in found] if decided else None

        return self.wait_until(stable, f"every transaction of {topic} decided", timeout_s)

    def led_by(self, topic: str, broker_id: int, via: int | None = None) -> dict[int, PartitionState]:
        return {p: s for p, s in self.partitions(topic, via).items() if s.leader_id == broker_id}

    # --- actions ---------------------------------------------------------------------

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int | None = None,
        configs: Mapping[str, object] | None = None,
        via: int | None = None,
    ) -> dict[int, PartitionState]:
        """Create ``name`` (replication factor: every broker, at most 3) and return its partitions once
        every replica is in the ISR and every live broker knows each partition's leader, so the
        next request, on any broker, finds it."""
        factor = replication_factor if replication_factor is not None else min(3, self.spec.brokers)
        body = {
            "topic_name": name,
            "partitions_count": partitions,
            "replication_factor": factor,
            "configs": [{"name": key, "value": _variable_value(value)} for key, value in (configs or {}).items()],
        }
        status, answer = self.v3("POST", "/topics", body, via=via)
        assert status == 201, (status, answer)
        return self.wait_for_topic(name, partitions)

    def wait_for_topic(self, name: str, partitions: int) -> dict[int, PartitionState]:
        """Wait until every partition's replicas are all in its ISR and every live broker knows its leader."""

        def in_sync() -> dict[int, PartitionState] | None:
            status, answer = self.v3("GET", f"/topics/{name}/partitions")
            if answer.get("retriable"):
                return None  # a new partition's record has not reached the broker asked yet
            assert status == 200, (status, answer)
            states = _partition_states(answer)
            full = len(states) == partitions and all(sorted(s.isr) == sorted(s.replicas) for s in states.values())
            return states if full else None

        states = self.wait_until(in_sync, f"every replica of {name}'s {partitions} partitions in sync")

        def known_everywhere() -> bool:
            for broker_id in self.live_ids() - {b for b, broker in self.brokers.items() if broker.paused}:
                status, answer = self.v3("GET", f"/topics/{name}/partitions", via=broker_id, timeout_s=2)
                led = [p for p in answer.get("data", []) if p["leader_id"] >= 0] if status == 200 else []
                if len(led) != partitions:
                    return False
            return True

        self.wait_until(known_everywhere, f"every live broker to know {name}'s partition leaders")
        return states

    def produce(
        self, topic: str, values: list[str], partition: int = 0, acks: str = "all", via: int | None = None
    ) -> tuple[int, Any]:
        """Produce ``values`` as strings in one batch request; the answer's status and body."""
        entries = [{"partition_id": partition, "value": {"type": "STRING", "data": value}} for value in values]
        return self.v3("POST", f"/topics/{topic}/records:batch?acks={acks}", {"entries": entries}, via=via)

    def read(
        self, topic: str, partition: int = 0, offset: int = 0, via: int | None = None, max_records: int = 1000
    ) -> list[str]:
        """The string values of ``topic-partition`` from ``offset``, as far as the high watermark."""
        path = f"/topics/{topic}/partitions/{partition}/records?offset={offset}&format=string&max_records={max_records}"
        return [record["value"]["data"] for record in self.api("GET", path, via=via)["data"]]

    def wait_for_values(self, topic: str, expected: list[str], partition: int = 0, via: int | None = None) -> None:
        """Until reading ``topic-partition`` from offset 0 gives exactly ``expected`` (a new leader's
        high watermark catches up once its followers fetch, as in Kafka)."""
        self.wait_until(
            lambda: self.read(topic, partition, via=via) == expected, f"{topic}-{partition} to read {expected}"
        )

    def wait_in_every_isr(self, topic: str, broker_id: int) -> dict[int, PartitionState]:
        """Until ``broker_id`` is in the ISR of every partition of ``topic`` it replicates."""

        def rejoined() -> dict[int, PartitionState] | None:
            states = self.partitions(topic)
            missing = [p for p, s in states.items() if broker_id in s.replicas and broker_id not in s.isr]
            return None if missing else states

        return self.wait_until(rejoined, f"broker {broker_id} back in every ISR of {topic}")

    def wait_for_brokers(self, expected: set[int]) -> None:
        """Until every live broker sees exactly ``expected`` registered (and so does the controller)."""

        def agreed() -> bool:
            for broker in self.brokers.values():
                if not broker.alive:
                    if broker.node_id in expected and broker.process is not None:
                        raise AssertionError(
                            f"broker {broker.node_id} exited ({broker.process.returncode}):\n{broker.log_tail()}"
                        )
                    continue
                if self.registered_ids(broker.node_id) != expected:
                    return False
            return True

        self.wait_until(agreed, f"every live broker to see brokers {sorted(expected)} registered")

    def wait_until(self, condition: Callable[[], T | None], what: str, timeout_s: float = 30.0) -> T:
        """``tests.support.waiting.wait_until``: the one way a test waits."""
        return wait_until(condition, what, timeout_s)

    def logs(self) -> str:
        """Every broker's log so far, for tests that look for (or for the absence of) an event."""
        return "".join(b.log_path.read_text(errors="replace") for b in self.brokers.values() if b.log_path.exists())

    def _ask_cluster_id(self) -> str:
        return str(
            self.wait_until(lambda: self.http("GET", "/v3/clusters")[1]["data"][0]["cluster_id"], "a cluster id")
        )


async def _broker_secret(metadata_store: str) -> bytes:
    store = await open_store(metadata_store)
    try:
        return await SecurityStore(store).broker_secret()
    finally:
        await store.close()


def _partition_states(answer: Any) -> dict[int, PartitionState]:
    """A ``GET …/partitions`` answer as ``PartitionState`` by partition id."""
    return {
        p["partition_id"]: PartitionState(
            p["partition_id"],
            p["leader_id"],
            p["leader_epoch"],
            p["replica_ids"],
            p["isr"],
            p["high_watermark"],
            {r["broker_id"]: r["log_end_offset"] for r in p.get("replicas_state") or []},
        )
        for p in answer["data"]
    }


def start_cluster(spec: ClusterSpec, root: Path) -> Cluster:
    """Start ``spec``'s brokers under ``root``; the caller shuts the cluster down."""
    root.mkdir(parents=True, exist_ok=True)
    return Cluster(spec, root).start()


def cluster_fixture(spec: ClusterSpec, scope: Literal["function", "module", "session"] = "function") -> Any:
    """A fixture of one started ``spec`` cluster, per test, shared by a module's tests or by a worker's.

    A module-scoped cluster puts the module's tests in one xdist group (``tests/conftest.py``),
    so it starts once; a session-scoped one starts once per worker that uses it.

    A shared cluster runs with ``STEADY_SETTINGS`` under the spec's own settings: its tests
    break no broker, so nothing waits on a two-second session or lag time, and a broker
    starved of CPU for two seconds on a loaded machine (a lost lease, a new controller
    epoch, a retriable ``NOT_CONTROLLER`` to the next request) fails none of them.
    """
    chosen = spec if scope == "function" else replace(spec, settings={**STEADY_SETTINGS, **spec.settings})

    @pytest.fixture(scope=scope)
    def started_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
        cluster = start_cluster(chosen, tmp_path_factory.mktemp("cluster"))
        try:
            yield cluster
        finally:
            cluster.shutdown()

    return started_cluster


def is_cluster_fixture(function: Callable[..., object]) -> bool:
    """Whether a fixture's function is one ``cluster_fixture`` made (``tests/conftest.py`` groups its users)."""
    return function.__module__ == __name__ and function.__name__ == "started_cluster"


class Clusters:
    """Starts clusters for one test and stops them all after it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.started: list[Cluster] = []

    def start(self, spec: ClusterSpec) -> Cluster:
        cluster = start_cluster(spec, self.root / f"cluster-{len(self.started)}")
        self.started.append(cluster)
        return cluster

    def shutdown(self) -> None:
        for cluster in self.started:
            cluster.shutdown()


@pytest.fixture
def clusters(tmp_path: Path) -> Iterator[Clusters]:
    """``clusters.start(spec)``: a cluster whose spec the test chooses; every one is stopped after the test."""
    started = Clusters(tmp_path)
    try:
        yield started
    finally:
        started.shutdown()
