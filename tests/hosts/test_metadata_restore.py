"""The metadata backup and restore of docs/operations.md, as written: an etcd snapshot taken
while the cluster runs, every member lost, the snapshot restored into a new etcd cluster
with every broker stopped, the brokers started again on their own disks.

What the restored store knows comes back whole: the topic created before the snapshot
is served with every acknowledged record, and takes acks=all writes again once its ISRs
are full, its replicas identical, though its leaders and epochs are the snapshot's again
(the brokers' stops after it had moved every leadership on, and their logs remember it). A topic created after the snapshot is unknown to the restored store: each
broker removes its logs as strays when it starts, as it does for a topic deleted while
it was down.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
from pathlib import Path

from tests.hosts.checked_load import replica_bytes, wait_for_partitions, wait_in_sync
from tests.hosts.clients import produce_all, read_back
from tests.hosts.deployment import (
    ETCD_CLIENT_PORT,
    ETCD_CLUSTER_TOKEN,
    ETCD_PEER_PORT,
    HostsDeployment,
)

STOP_TIMEOUT_S = 40.0
KEPT, LATER = "kept", "later"


def _etcdctl(*arguments: str) -> None:
    done = subprocess.run(
        ["etcdctl", *arguments],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "ETCDCTL_API": "3"},
    )
    assert done.returncode == 0, done.stderr


def _restore(deployment: HostsDeployment, snapshot: Path) -> None:
    """Each member's data directory rebuilt from ``snapshot`` (etcd's disaster recovery)."""
    for host in deployment.hosts:
        data_dir = deployment.etcd_data_dir(host.index)
        shutil.rmtree(data_dir)
        _etcdctl(
            "snapshot", "restore", str(snapshot),
            "--name", f"m{host.index}",
            "--initial-cluster", deployment.etcd_initial_cluster(),
            "--initial-cluster-token", ETCD_CLUSTER_TOKEN,
            "--initial-advertise-peer-urls", f"http://{host.address}:{ETCD_PEER_PORT}",
            "--data-dir", str(data_dir),
        )  # fmt: skip


async def test_an_etcd_snapshot_restored_after_every_member_was_lost_brings_the_cluster_back(
    deployment: HostsDeployment,
) -> None:
    await deployment.create_topic(KEPT)
    await wait_in_sync(deployment, 1, KEPT)
    kept = [f"kept-{i}".encode() for i in range(90)]
    await produce_all(deployment.urls, KEPT, kept)
    snapshot = deployment.root / "metadata.snapshot"
    _etcdctl("--endpoints", f"{deployment.host(1).address}:{ETCD_CLIENT_PORT}", "snapshot", "save", str(snapshot))

    await deployment.create_topic(LATER)
    await wait_in_sync(deployment, 1, LATER)
    await produce_all(deployment.urls, LATER, [b"after-the-snapshot"] * 30)
    for node_id, process in deployment.brokers.items():
        process.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(process.wait, STOP_TIMEOUT_S) == 0, deployment.log_tail(node_id)
    for host in deployment.hosts:
        deployment.kill_etcd_member(host.index)

    _restore(deployment, snapshot)
    deployment.start()
    topics = deployment.v3(1, "/topics")
    assert topics is not None
    assert {row["topic_name"] for row in topics} >= {KEPT}
    assert LATER not in {row["topic_name"] for row in topics}, "the restored store knows a topic created after it"
    await wait_in_sync(deployment, 1, KEPT, "in sync after the restore")
    assert sorted(await read_back(deployment.urls, KEPT, len(kept))) == sorted(kept)
    more = [f"more-{i}".encode() for i in range(30)]
    await produce_all(deployment.urls, KEPT, more)
    assert sorted(await read_back(deployment.urls, KEPT, len(kept) + len(more))) == sorted(kept + more)
    settled = await asyncio.to_thread(
        wait_for_partitions, deployment, 1, KEPT, lambda s: s.settled, "settled", STOP_TIMEOUT_S
    )
    for partition, state in enumerate(settled):
        copies = {
            node_id: replica_bytes(deployment, node_id, KEPT, partition, state.high_watermark)
            for node_id in state.replica_leos
        }
        assert len(set(copies.values())) == 1, f"{KEPT}-{partition}: the replicas diverge after the restore"
    for node_id in deployment.brokers:
        strays = sorted(path.name for path in deployment.data_dir(node_id).glob(f"{LATER}-*"))
        assert strays == [], f"broker {node_id} kept the logs of a topic its store does not know: {strays}"
