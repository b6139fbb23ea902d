"""kafkajs in the client matrix: its producers (acks -1, 1, 0; idempotent; gzip), a group consumer and its
admin calls, against a real 3-broker RF 3 cluster (``make kafkajs`` installs it on Debian's Node)."""

from __future__ import annotations

import pytest

from tests.integration.kafka.kafkajs import run_kafkajs
from tests.support.cluster import Cluster

pytestmark = pytest.mark.integration


def test_kafkajs_produces_consumes_and_administers(kafka_cluster: Cluster) -> None:
    answer = run_kafkajs("matrix.js", kafka_cluster.bootstrap(), "kjs-matrix")
    assert answer["consumed"] == sorted(["acks-1", "acks1", "acks0", "gzip-1", "gzip-2", "idem-1", "idem-2"])
    assert answer["partitions"] == 3, "createPartitions"
    assert answer["groupOffsets"] == ["7"], "the group committed what it read"
    assert (answer["groupsListed"], answer["groupsAfterDelete"]) == (True, False), "deleteGroups"
    assert (answer["aclPrincipals"], answer["aclsDeleted"]) == (["User:kafkajs-reader"], 1)
    assert answer["reassignments"] == 0 and answer["clusterBrokers"] == 3
    assert kafka_cluster.read("kjs-matrix-topic")[:3] == ["acks-1", "acks1", "acks0"], "in the order sent"
    assert "kjs-matrix-group" not in {
        g["consumer_group_id"] for g in kafka_cluster.api("GET", "/consumer-groups")["data"]
    }
