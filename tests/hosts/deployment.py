"""highwater as it is deployed across machines: one etcd member and one broker per test host.

Each of the first ``HOSTS`` hosts of a ``HostNetwork`` runs a member of one 3-member etcd
cluster (Debian's ``etcd-server``, a real raft quorum over the bridge) and a broker
listening on the host's own address, with every etcd member as its metadata endpoints and
its host as its rack; the spare hosts run a broker when a scenario starts one there. The
test process, the client host, reaches the brokers at their advertised URLs. A broker
may be started with its time of day set off (libfaketime), or from a command of its own
(the deployment kit's).

The members run with ``--pre-vote`` (etcd 3.5's default, off in Debian's 3.4): without it
a member cut off keeps raising its raft term, and on its return forces the others into
elections; in 2 of 7 runs of the cut-off scenario a broker on another host lost its lease
in that storm although its keep-alives were answered. A deployment sets it too.

Nothing here waits by sleeping: each start waits for what it promises (etcd's ``/health``,
every broker listing every broker), through ``wait_until``.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from broker.client.admin import AdminClient
from broker.client.http import ClusterClient
from broker.cluster.records import broker_key
from broker.cluster.store_url import open_store
from tests.hosts.network import Host, HostNetwork
from tests.support.cluster import setting_variables
from tests.support.etcd import member_command
from tests.support.launcher import REPO_ROOT
from tests.support.waiting import wait_until

HOSTS = 3
"""Hosts of a deployment: one etcd member and one broker on each."""
SPARE_HOSTS = 2
"""Hosts of the tier's network beyond the deployment's: a broker added later, or five brokers."""
TOPIC_PARTITIONS = 3
"""Partitions of a scenario's topic: one led from each host."""
REPLICAS = 3
"""Replicas of a scenario's topic's partitions: one per host of the deployment proper."""
ETCD_CLIENT_PORT = 2379
ETCD_CLUSTER_TOKEN = "highwater-hosts"
ETCD_PEER_PORT = 2380
BROKER_PORT = 9092
START_TIMEOUT_S = 30.0
POLL_S = 0.1
HTTP_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class ClientAccess:
    """How the client host reaches brokers that serve HTTPS and ask for a user (None: plain HTTP, anonymous)."""

    ca_file: Path
    username: str
    password: str

    def context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    def authorization(self) -> str:
        return "Basic " + base64.b64encode(f"{self.username}:{self.password}".encode()).decode()


def http_json(url: str, timeout_s: float = HTTP_TIMEOUT_S, access: ClientAccess | None = None) -> tuple[int, object]:
    """GET ``url``: its status and JSON body; status 0 when nothing answered."""
    request = urllib.request.Request(url)
    context = None
    if access is not None:
        request.add_header("Authorization", access.authorization())
        context = access.context()
    try:
        with urllib.request.urlopen(request, timeout=timeout_s, context=context) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, None
    except (OSError, ValueError):
        return 0, None


class HostsDeployment:
    """etcd members and brokers on the hosts of ``network``, their files under ``root``; with
    ``access``, brokers are reached over HTTPS as that user."""

    def __init__(
        self,
        network: HostNetwork,
        root: Path,
        settings: Mapping[str, object] | None = None,
        access: ClientAccess | None = None,
    ) -> None:
        self.network = network
        self.root = root
        self.settings = dict(settings or {})
        self.access = access
        self.brokers: dict[int, subprocess.Popen[bytes]] = {}
        self.etcd_members: dict[int, subprocess.Popen[bytes]] = {}

    @property
    def hosts(self) -> list[Host]:
        """The hosts of the deployment proper (an etcd member and a broker each); the network's
        further hosts are spares a scenario may add a broker on (``start_broker``)."""
        return self.network.hosts[:HOSTS]

    def host(self, node_id: int) -> Host:
        return self.network.hosts[node_id - 1]

    def url(self, node_id: int) -> str:
        scheme = "http" if self.access is None else "https"
        return f"{scheme}://{self.host(node_id).address}:{BROKER_PORT}"

    @property
    def urls(self) -> list[str]:
        """The brokers started so far (the deployment's hosts' before any is)."""
        return [self.url(node_id) for node_id in sorted(self.brokers) or [host.index for host in self.hosts]]

    @property
    def metadata_store(self) -> str:
        return "etcd://" + ",".join(f"{host.address}:{ETCD_CLIENT_PORT}" for host in self.hosts)

    def data_dir(self, node_id: int) -> Path:
        return self.root / f"host-{node_id}" / "broker"

    # --- etcd ---------------------------------------------------------------------

    def start_etcd(self) -> None:
        """One member per host, one cluster; returns once every member reports itself healthy."""
        for host in self.hosts:
            self.start_etcd_member(host.index)
        for host in self.hosts:
            self.wait_for_etcd_member(host)

    def etcd_initial_cluster(self) -> str:
        """The members' ``name=peer URL`` list, as each member starts with and a restore rebuilds."""
        return ",".join(f"m{host.index}=http://{host.address}:{ETCD_PEER_PORT}" for host in self.hosts)

    def etcd_data_dir(self, index: int) -> Path:
        return self.root / f"host-{index}" / "etcd"

    def start_etcd_member(self, index: int) -> subprocess.Popen[bytes]:
        """Host ``index``'s member, not waited for; started again on its data directory after a
        kill, it rejoins the cluster (etcd ignores the initial-cluster flags once it has data)."""
        host = self.host(index)
        client, peer = f"http://{host.address}:{ETCD_CLIENT_PORT}", f"http://{host.address}:{ETCD_PEER_PORT}"
        command = member_command(f"m{index}", self.etcd_data_dir(index), client, peer, self.etcd_initial_cluster())
        self.etcd_data_dir(index).parent.mkdir(parents=True, exist_ok=True)
        process = host.spawn(
            [*command, "--initial-cluster-token", ETCD_CLUSTER_TOKEN, "--pre-vote"],
            self.etcd_data_dir(index).parent / "etcd.log",
        )
        self.etcd_members[index] = process
        return process

    def kill_etcd_member(self, index: int) -> None:
        """SIGKILL host ``index``'s member (its data directory stays)."""
        process = self.etcd_members.pop(index)
        process.kill()
        process.wait(10)

    def wait_for_etcd_member(self, host: Host, timeout_s: float = START_TIMEOUT_S) -> None:
        """Until ``host``'s member answers its ``/health`` as healthy (it is part of a quorum)."""
        health = f"http://{host.address}:{ETCD_CLIENT_PORT}/health"
        wait_until(
            lambda: http_json(health)[1] == {"health": "true"} or None,
            f"etcd member on host {host.index} healthy",
            timeout_s,
            POLL_S,
        )

    # --- brokers ------------------------------------------------------------------

    def start_broker(self, node_id: int, clock_offset: str | None = None) -> subprocess.Popen[bytes]:
        """Broker ``node_id`` on its host (log appended to ``host-N/broker.log``); not waited for.

        ``clock_offset`` (libfaketime's ``+2h``, ``-1h``...) sets its host's time of day
        that far off; the monotonic clock, which timeouts and leases use, stays true.
        """
        host = self.host(node_id)
        settings = {"rack": f"host-{node_id}", "advertised_url": self.url(node_id), **self.settings}
        skew = [] if clock_offset is None else ["faketime", "-f", clock_offset]
        argv = [
            *skew,
            sys.executable, "-m", "broker", "serve",
            "--node-id", str(node_id),
            "--host", host.address,
            "--port", str(BROKER_PORT),
            "--data-dir", str(self.data_dir(node_id)),
            "--metadata", self.metadata_store,
            "--allow-anonymous",
        ]  # fmt: skip
        variables = setting_variables(settings)
        if clock_offset is not None:
            variables["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
        return self.spawn_broker(node_id, argv, variables)

    def spawn_broker(self, node_id: int, argv: list[str], variables: Mapping[str, str]) -> subprocess.Popen[bytes]:
        """Run ``argv`` as broker ``node_id`` on its host with ``variables`` added to the environment."""
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **variables}
        directory = self.root / f"host-{node_id}"
        directory.mkdir(parents=True, exist_ok=True)
        process = self.host(node_id).spawn(argv, directory / "broker.log", env)
        self.brokers[node_id] = process
        return process

    def start(self, brokers: int = HOSTS) -> HostsDeployment:
        """etcd, then a broker on each of the first ``brokers`` hosts (spares included beyond
        the deployment's own); returns once each broker lists all of them."""
        self.start_etcd()
        for node_id in range(1, brokers + 1):
            self.start_broker(node_id)
        self.wait_for_brokers(set(self.brokers), set(self.brokers))
        return self

    async def create_topic(self, topic: str, partitions: int = TOPIC_PARTITIONS) -> None:
        """``partitions`` partitions of three replicas, acks=all needing two in sync."""
        client = ClusterClient(self.urls)
        try:
            await AdminClient(client).create_topic(topic, partitions, REPLICAS, {"min.insync.replicas": "2"})
        finally:
            await client.close()

    async def broker_epochs(self, node_ids: list[int]) -> dict[int, int | None]:
        """Each broker's epoch (its registration's revision) as etcd holds it; None when not registered."""
        store = await open_store(self.metadata_store)
        try:
            registrations = {node_id: await store.get(broker_key(node_id)) for node_id in node_ids}
        finally:
            await store.close()
        return {node_id: kv.mod_revision if kv is not None else None for node_id, kv in registrations.items()}

    def cluster(self, node_id: int) -> dict | None:
        """The cluster as broker ``node_id`` describes it (``GET /v3/clusters``), or None when it does not answer."""
        status, body = http_json(f"{self.url(node_id)}/v3/clusters", access=self.access)
        return body["data"][0] if status == 200 and isinstance(body, dict) else None

    def v3(self, node_id: int, path: str) -> list[dict] | None:
        """The ``data`` rows broker ``node_id`` answers ``GET /v3/clusters/{id}{path}`` with
        (None unless it answers 200)."""
        cluster = self.cluster(node_id)
        if cluster is None:
            return None
        status, reply = http_json(f"{self.url(node_id)}/v3/clusters/{cluster['cluster_id']}{path}", access=self.access)
        return reply["data"] if status == 200 and isinstance(reply, dict) else None

    def controller_id(self, node_id: int) -> int | None:
        """The controller broker ``node_id`` names (None when it does not answer)."""
        cluster = self.cluster(node_id)
        return None if cluster is None else int(cluster["controller"]["related"].rsplit("/", 1)[1])

    def registered(self, node_id: int) -> set[int] | None:
        """The broker ids broker ``node_id`` lists (None when it does not answer)."""
        rows = self.v3(node_id, "/brokers")
        return None if rows is None else {int(row["broker_id"]) for row in rows}

    def wait_for_brokers(self, asked: set[int], expected: set[int], timeout_s: float = START_TIMEOUT_S) -> None:
        """Until every broker in ``asked`` lists exactly ``expected`` as registered."""
        for node_id in asked:
            wait_until(
                partial(self._lists, node_id, expected),
                f"broker {node_id} listing brokers {sorted(expected)}",
                timeout_s,
                POLL_S,
            )

    def _lists(self, node_id: int, expected: set[int]) -> bool | None:
        """Whether broker ``node_id`` lists ``expected``; an exited broker fails the wait at once."""
        process = self.brokers[node_id]
        if process.poll() is not None:
            raise AssertionError(f"broker {node_id} exited with {process.returncode}:\n{self.log_tail(node_id)}")
        return self.registered(node_id) == expected or None

    def log_tail(self, node_id: int, lines: int = 40) -> str:
        path = self.root / f"host-{node_id}" / "broker.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""
