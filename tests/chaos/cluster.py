"""A 3-broker cluster whose brokers reach each other only through cuttable proxies.

Clients use each broker's own port; brokers use the proxies (``--inter-broker-url``),
so ``ProxyMesh`` can cut inter-broker traffic while clients still get through. Every
blocking call (HTTP, process control) must run in a worker thread
(``asyncio.to_thread``): the proxies live on the test's event loop, and a broker
answering a describe may ask its peers through them, so a blocking call on the loop
would deadlock until its timeout.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from broker.record.header import iter_batches
from broker.storage.log_manager import partition_directory_name
from tests.chaos.proxy import CuttableProxy, ProxyMesh
from tests.support.brokers import BrokerCluster, BrokerProcess, free_port, http_json
from tests.support.replication import replica_log_bytes

BROKER_COUNT = 3
REPLICATION_FACTOR = 3
MIN_INSYNC_REPLICAS = 2
SESSION_TIMEOUT_MS = 2000
LAG_TIME_MAX_MS = 2000
CHAOS_ENV = {
    "HIGHWATER_BROKER_SESSION_TIMEOUT_MS": str(SESSION_TIMEOUT_MS),
    "HIGHWATER_BROKER_HEARTBEAT_INTERVAL_MS": "300",
    "HIGHWATER_REPLICA_LAG_TIME_MAX_MS": str(LAG_TIME_MAX_MS),
    "HIGHWATER_REPLICA_FETCH_WAIT_MAX_MS": "200",
    "HIGHWATER_REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS": "500",
    "HIGHWATER_AUTO_LEADER_REBALANCE_ENABLE": "false",
    "HIGHWATER_LOG_LEVEL": "info",
}
"""Failures noticed in about two seconds; leadership stays where failover put it."""
HW_CHECKPOINT_FILE = "replication-offset-checkpoint"


@dataclass(frozen=True)
class PartitionState:
    """One partition as its leader reports it; ``replica_leos`` maps broker id → LEO.

    ``isr`` is the partition record's; ``leader_isr`` is the committed ISR the leader itself
    holds, which decides whether acks=all is admitted. A broker's watch can show the stored
    record before the leader has applied its own ISR change, so the two differ for a moment.
    ``leader_isr`` is empty when the leader did not answer.
    """

    leader_id: int
    leader_epoch: int
    isr: tuple[int, ...]
    high_watermark: int
    log_end_offset: int
    replica_leos: dict[int, int]
    leader_isr: tuple[int, ...]

    @property
    def settled(self) -> bool:
        """Led, every replica in sync, every LEO equal to the HW: nothing left in flight."""
        return (
            self.leader_id >= 0
            and len(self.isr) == REPLICATION_FACTOR
            and self.high_watermark == self.log_end_offset
            and len(self.replica_leos) == REPLICATION_FACTOR
            and all(leo == self.high_watermark for leo in self.replica_leos.values())
        )


class ChaosCluster:
    """Brokers 1..3 on loopback, one ``CuttableProxy`` each; an sqlite metadata store,
    or a real etcd that each broker reaches through a proxy of its own (``store_mesh``),
    so a broker can also be cut off from the metadata store (the zombie-leader case)."""

    def __init__(
        self, root: Path, proxies: dict[int, CuttableProxy], store_proxies: dict[int, CuttableProxy] | None
    ) -> None:
        self.cluster = BrokerCluster(root, BROKER_COUNT)
        self.mesh = ProxyMesh(proxies)
        self.store_mesh = ProxyMesh(store_proxies) if store_proxies else None
        for broker_id, broker in self.cluster.brokers.items():
            broker.env = dict(CHAOS_ENV)
            broker.extra_args = ["--inter-broker-url", proxies[broker_id].url]
            if store_proxies:
                broker.metadata_store = f"etcd://127.0.0.1:{store_proxies[broker_id].port}"
        self.cluster_id = ""

    @classmethod
    async def create(cls, root: Path, etcd_port: int | None = None) -> ChaosCluster:
        """Start the proxies first (their ports go into the brokers' flags), on the running loop.

        ``etcd_port``: the client port of a running etcd to use instead of sqlite.
        """
        brokers = {broker_id: free_port() for broker_id in range(1, BROKER_COUNT + 1)}
        proxies = {broker_id: await CuttableProxy(port).start() for broker_id, port in brokers.items()}
        store_proxies = None
        if etcd_port is not None:
            store_proxies = {broker_id: await CuttableProxy(etcd_port).start() for broker_id in brokers}
        chaos = cls(root, proxies, store_proxies)
        for broker_id, port in brokers.items():
            chaos.cluster.brokers[broker_id].port = port
        return chaos

    @property
    def meshes(self) -> list[ProxyMesh]:
        return [self.mesh] + ([self.store_mesh] if self.store_mesh else [])

    def heal_all(self) -> None:
        for mesh in self.meshes:
            mesh.heal_all()

    @property
    def brokers(self) -> dict[int, BrokerProcess]:
        return self.cluster.brokers

    @property
    def servers(self) -> list[str]:
        return [broker.url for broker in self.brokers.values()]

    def start(self) -> None:
        self.cluster.start()
        self.cluster_id = self.cluster.cluster_id()

    def kill_all(self) -> None:
        """SIGKILL every broker: the quickest stop, and recovery must cope with it anyway."""
        for broker in self.brokers.values():
            broker.resume()
            broker.kill()

    async def close(self) -> None:
        self.heal_all()
        self.kill_all()
        for mesh in self.meshes:
            for proxy in mesh.proxies.values():
                await proxy.close()

    def topics_url(self) -> str:
        return f"{self.cluster.any_url()}/v3/clusters/{self.cluster_id}/topics"

    def create_topic(self, name: str, partitions: int) -> None:
        body = {
            "topic_name": name,
            "partitions_count": partitions,
            "replication_factor": REPLICATION_FACTOR,
            "configs": [{"name": "min.insync.replicas", "value": str(MIN_INSYNC_REPLICAS)}],
        }
        status, reply = http_json("POST", self.topics_url(), body)
        assert status == 201, reply

    def partition_states(self, topic: str) -> list[PartitionState]:
        status, reply = http_json("GET", f"{self.topics_url()}/{topic}/partitions", timeout_s=5)
        assert status == 200, reply
        return [_partition_state(item) for item in reply["data"]]

    def leader_of(self, topic: str, partition: int) -> int:
        return self.partition_states(topic)[partition].leader_id

    def controller_id(self) -> int:
        status, reply = http_json("GET", f"{self.cluster.any_url()}/v3/clusters", timeout_s=5)
        assert status == 200, reply
        return int(reply["data"][0]["controller_id"])

    def wait_healed(self, topics: list[str], timeout_s: float) -> dict[str, list[PartitionState]]:
        """Until every broker is registered and every partition is led with its full ISR (writes may go on)."""
        return self._wait_for(topics, timeout_s, lambda s: s.leader_id >= 0 and len(s.isr) == REPLICATION_FACTOR)

    def wait_settled(self, topics: list[str], timeout_s: float) -> dict[str, list[PartitionState]]:
        """Until every broker is registered and every partition is settled (no writes in flight)."""
        return self._wait_for(topics, timeout_s, lambda state: state.settled)

    def _wait_for(self, topics: list[str], timeout_s: float, condition) -> dict[str, list[PartitionState]]:
        deadline = time.monotonic() + timeout_s
        self.cluster.wait_for_brokers(set(self.brokers), timeout_s)
        last: object = None
        while time.monotonic() < deadline:
            try:
                states = {topic: self.partition_states(topic) for topic in topics}
                if all(condition(state) for parts in states.values() for state in parts):
                    return states
                last = states
            except (AssertionError, OSError) as error:
                last = error
            time.sleep(0.2)
        raise AssertionError(f"cluster did not settle within {timeout_s} s: {last}")

    def replica_bytes_live(self, topic: str, partition: int, broker_id: int, high_watermark: int) -> bytes:
        """Raw batches below ``high_watermark`` read straight from the segment files, read-only.

        Safe on a running broker once the partition is settled and no longer written:
        nothing is opened for writing and no recovery runs.
        """
        directory = self.brokers[broker_id].data_dir / partition_directory_name(topic, partition)
        raw = b"".join(path.read_bytes() for path in sorted(directory.glob("*.log")))
        return _below(raw, high_watermark)

    def replica_bytes_stopped(self, topic: str, partition: int, broker_id: int, high_watermark: int) -> bytes:
        """The same, through ``PartitionLog.open`` (recovery included), for a stopped broker."""
        return _below(replica_log_bytes(self.cluster, broker_id, topic, partition), high_watermark)


def _below(raw: bytes, high_watermark: int) -> bytes:
    """The prefix of ``raw`` made of whole batches that end below ``high_watermark``."""
    end = 0
    position = 0
    for header in iter_batches(raw, check_crc=True):
        position += header.size
        if header.last_offset < high_watermark:
            end = position
        else:
            break
    return raw[:end]


def _partition_state(item: dict) -> PartitionState:
    rows = item.get("replicas_state") or []
    leos = {int(row["broker_id"]): int(row["log_end_offset"]) for row in rows}
    return PartitionState(
        leader_id=int(item["leader_id"]),
        leader_epoch=int(item["leader_epoch"]),
        isr=tuple(item["isr"]),
        high_watermark=int(item["high_watermark"]),
        log_end_offset=int(item["log_end_offset"]),
        replica_leos=leos,
        leader_isr=tuple(int(row["broker_id"]) for row in rows if row["in_sync"]),
    )
