"""kafkajs's ``admin.resetOffsets({earliest: true})`` commits a literal ``-2``: stored, answered, no position.

Kafka stores it and OffsetFetch answers it (kafkajs's own tests expect ``fetchOffsets`` to
say ``'-2'``); a kafkajs consumer then has no committed offset and follows its
``fromBeginning``. Every other view reads it as Kafka's tools do, as no committed offset:
the lag routes and ``highwater groups describe`` (``-``), the lag gauges, the offsets
listing and the REST v2 committed offsets (-1). Against a real 3-broker RF 3 cluster.
"""

from __future__ import annotations

import urllib.request
from typing import Any

import pytest

from tests.integration.kafka.conftest import MIN_ISR_2
from tests.integration.kafka.kafkajs import run_kafkajs
from tests.integration.test_rest_v2_consumer import call, create_instance, instance_path
from tests.support.cluster import Cluster

pytestmark = pytest.mark.integration

TOPIC, GROUP, RECORDS = "kjs-reset", "kjs-resetters", 14


def kafkajs(cluster: Cluster, step: str, *args: object) -> dict[str, Any]:
    return run_kafkajs("reset_offsets.js", cluster.bootstrap(), TOPIC, GROUP, step, *args)


def lag_gauge(cluster: Cluster, coordinator: int) -> str | None:
    """The group's lag gauge line for partition 0 on its coordinator, if it has one."""
    with urllib.request.urlopen(f"{cluster.url(coordinator)}/metrics", timeout=5) as response:
        text = response.read().decode()
    prefix = f'highwater_consumer_group_lag{{group="{GROUP}",partition="0",topic="{TOPIC}"}} '
    return next((line for line in text.splitlines() if line.startswith(prefix)), None)


def test_a_reset_to_earliest_is_no_committed_offset_and_the_group_reads_again(kafka_cluster: Cluster) -> None:
    kafka_cluster.create_topic(TOPIC, partitions=1, configs=MIN_ISR_2)
    expected = [f"kjs-{i}" for i in range(RECORDS)]
    assert kafkajs(kafka_cluster, "produce", RECORDS) == {"ok": True, "sent": RECORDS}
    assert kafkajs(kafka_cluster, "consume", RECORDS)["values"] == expected
    coordinator = kafka_cluster.api("GET", f"/consumer-groups/{GROUP}")["coordinator_id"]
    kafka_cluster.wait_until(lambda: lag_gauge(kafka_cluster, coordinator) == lag_prefix(0), "lag 0 gauged", 15)

    assert kafkajs(kafka_cluster, "reset")["offsets"] == [[0, "-2"]], "stored and answered as Kafka does"

    (row,) = kafka_cluster.api("GET", f"/consumer-groups/{GROUP}/lags")["data"]
    assert (row["current_offset"], row["lag"], row["lag_ms"], row["log_end_offset"]) == (None, None, None, RECORDS)
    assert row["last_commit_ms"] is not None, "when the reset was committed"
    summary = kafka_cluster.api("GET", f"/consumer-groups/{GROUP}/lag-summary")
    assert (summary["total_lag"], summary["partitions_without_commit"]) == (0, 1)
    assert kafka_cluster.api("GET", f"/consumer-groups/{GROUP}/offsets")["data"] == []
    assert kafka_cluster.api("GET", f"/consumer-groups/{GROUP}")["committed_partitions"] == 0
    described = kafka_cluster.cli(["groups", "describe", GROUP])
    (line,) = [line.split() for line in described.splitlines() if line.startswith(TOPIC)]
    assert line[:5] == [TOPIC, "0", "-", str(RECORDS), "-"], described
    kafka_cluster.wait_until(lambda: lag_gauge(kafka_cluster, coordinator) is None, "no lag gauged for -2", 15)
    instance = instance_path(create_instance(kafka_cluster, 1, GROUP))
    status, answer = call(
        kafka_cluster, 1, "GET", f"{instance}/offsets", {"partitions": [{"topic": TOPIC, "partition": 0}]}
    )
    assert (status, answer["offsets"]) == (200, [{"topic": TOPIC, "partition": 0, "offset": -1, "metadata": ""}])
    assert call(kafka_cluster, 1, "DELETE", instance)[0] == 204

    assert kafkajs(kafka_cluster, "consume", RECORDS)["values"] == expected, "fromBeginning: no committed offset"
    (row,) = kafka_cluster.api("GET", f"/consumer-groups/{GROUP}/lags")["data"]
    assert (row["current_offset"], row["lag"]) == (RECORDS, 0)


def lag_prefix(lag: int) -> str:
    return f'highwater_consumer_group_lag{{group="{GROUP}",partition="0",topic="{TOPIC}"}} {float(lag)}'
