"""Hostile bodies on the binary produce endpoint: 4xx and nothing written, or a clean append; never 5xx.

Whatever arrives, the partition's records written before read back byte for byte, its
log end offset moves only for a batch the broker accepted, and a JSON read of the
whole partition still reads. Only a batch whose header, CRC and records all check out
is appended (a flipped base offset or leader epoch, which the leader overwrites, is
one); every other body must be refused with 4xx.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings

from broker.record.codec import RecordInput, encode_batch
from tests.fuzz.batches import hostile_batches
from tests.fuzz.conftest import scaled
from tests.fuzz.wire import BATCH, Target, get, post
from tests.support.cluster import Cluster

pytestmark = [pytest.mark.fuzz, pytest.mark.integration]

TOPIC = "fuzz-batches"
EXAMPLES = scaled(120)


@pytest.fixture(scope="module")
def target(fuzz_cluster: Cluster) -> Iterator[Target]:
    fuzz_cluster.create_topic(TOPIC, 1, 3)
    leader = fuzz_cluster.partitions(TOPIC)[0].leader_id
    partition_url = f"{fuzz_cluster.base(leader)}/topics/{TOPIC}/partitions/0"
    for index in range(3):
        batch = encode_batch([RecordInput(b"k%d" % index, b"seed-%d" % index, [], 1_700_000_000_000)])
        answer = post(f"{partition_url}/batches?acks=all", batch, BATCH)
        assert answer.status == 200, answer.body
    probe = Target(partition_url, b"")
    yield Target(partition_url, probe.raw_from_zero())


@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(body=hostile_batches())
def test_hostile_batches_never_corrupt_the_log(target: Target, body: bytes) -> None:
    end_before = target.log_end_offset()
    answer = post(f"{target.partition_url}/batches?acks=1&timeout_ms=5000", body, BATCH)
    assert answer.status == 200 or 400 <= answer.status < 500, (answer.status, answer.body)
    if answer.status != 200:
        assert answer.json()["error_code"] // 100 == answer.status
        assert target.log_end_offset() == end_before, "a refused batch changed the log"
    assert target.raw_from_zero()[: len(target.stored)] == target.stored
    json_read = get(f"{target.partition_url}/records?offset=0&format=json&max_records=1000")
    assert json_read.status == 200, ("an accepted batch made the partition unreadable", body, json_read.body)
