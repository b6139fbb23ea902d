"""KIP-903 with real brokers: a follower restarted with its data directory wiped is a new
incarnation (a new broker epoch). The leader keeps it out of the ISR until it has caught up
again, and refuses a fetch its previous incarnation sent (REPLICATION-REFERENCE scenario 20).

3 brokers, RF 3, min.insync.replicas 2, the harness's short timeouts (``FAST_SETTINGS``).
"""

from __future__ import annotations

import shutil
import urllib.request
from typing import Any

import pytest

from broker.replication.fetch_wire import (
    CONTENT_TYPE,
    FetchPartition,
    FetchRequest,
    decode_response,
    encode_request,
)
from tests.support.cluster import Cluster
from tests.support.replication import (
    TOPIC,
    Description,
    assert_replica_files_identical,
    create_replicated,
    decode_values,
    describe,
    produce_ok,
    read_all,
    wait_for_isr,
)
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

ALL_BROKERS = {1, 2, 3}


def _replica(description: Description, broker_id: int) -> dict[str, Any]:
    return next(row for row in description["replicas_state"] if row["broker_id"] == broker_id)


def _fetch_as(
    leader_url: str, replica_id: int, broker_epoch: int, description: Description, topic: str, headers: dict[str, str]
) -> str:
    """One replica fetch, as broker ``replica_id`` in incarnation ``broker_epoch`` would send it;
    returns the partition's error name ('' for none)."""
    request = FetchRequest(
        replica_id=replica_id,
        broker_epoch=broker_epoch,
        max_wait_ms=0,
        max_bytes=1 << 20,
        partitions=[
            FetchPartition(
                topic=topic,
                partition=0,
                fetch_offset=description["log_end_offset"],
                last_fetched_epoch=description["leader_epoch"],
                current_leader_epoch=description["leader_epoch"],
                log_start_offset=0,
            )
        ],
    )
    http = urllib.request.Request(
        f"{leader_url}/internal/fetch",
        data=encode_request(request),
        method="POST",
        headers={"Content-Type": CONTENT_TYPE, **headers},
    )
    with urllib.request.urlopen(http, timeout=10) as reply:
        [partition] = decode_response(reply.read()).partitions
    return partition.error.name if partition.error else ""


def test_a_follower_restarted_with_an_empty_disk_rejoins_only_once_caught_up(cluster: Cluster) -> None:
    create_replicated(cluster)
    acknowledged = [(produce_ok(cluster, TOPIC, f"before-{i}"), f"before-{i}") for i in range(20)]
    description = describe(cluster)
    leader = description["leader_id"]
    follower = min(ALL_BROKERS - {leader})
    old_epoch = wait_until(
        lambda: _replica(describe(cluster), follower)["broker_epoch"], "the follower's broker epoch", 5
    )
    assert old_epoch > 0

    cluster.brokers[follower].kill()
    shutil.rmtree(cluster.brokers[follower].data_dir)
    wait_for_isr(cluster, TOPIC, ALL_BROKERS - {follower})
    acknowledged += [(produce_ok(cluster, TOPIC, f"while-down-{i}"), f"while-down-{i}") for i in range(20)]

    cluster.brokers[follower].start()
    new_epoch = wait_until(
        lambda: (epoch := _replica(describe(cluster), follower)["broker_epoch"]) > old_epoch and epoch,
        "a fetch from the follower's new incarnation",
        15,
    )

    current = describe(cluster)
    leader_url = cluster.brokers[leader].url
    headers = cluster.broker_headers(follower)
    assert _fetch_as(leader_url, follower, old_epoch, current, TOPIC, headers) == "STALE_BROKER_EPOCH"
    assert _replica(describe(cluster), follower)["broker_epoch"] == new_epoch

    rejoined = wait_for_isr(cluster, TOPIC, ALL_BROKERS)
    assert _replica(rejoined, follower)["log_end_offset"] >= rejoined["high_watermark"]
    acknowledged.append((produce_ok(cluster, TOPIC, "after-rejoin"), "after-rejoin"))
    assert read_all(cluster) == sorted(acknowledged)
    raw = assert_replica_files_identical(cluster)
    assert decode_values(raw) == sorted(acknowledged)
