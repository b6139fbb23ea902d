"""Mutated replica-fetch requests on ``POST /internal/fetch``: 4xx or a well-formed answer, never 5xx or a hang.

Requests are real ``fetch_wire`` encodings with every field drawn (replica ids that
are and are not followers, epochs, offsets out of range, huge waits), some then cut,
flipped or extended. A request that decodes gets 200 with a per-partition error where
it deserves one, as a Kafka leader answers; one that does not decode gets 400. The
leader's log must read back byte for byte afterwards: a fetch only ever reads.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.record.codec import RecordInput, encode_batch
from broker.replication.fetch_wire import CONTENT_TYPE, FetchPartition, FetchRequest, decode_response, encode_request
from tests.fuzz.conftest import scaled
from tests.fuzz.wire import ANSWER_TIMEOUT_S, BATCH, Target, post
from tests.support.cluster import Cluster

pytestmark = [pytest.mark.fuzz, pytest.mark.integration]

TOPIC = "fuzz-fetch"
EXAMPLES = scaled(100)
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)


@pytest.fixture(scope="module")
def leader(fuzz_cluster: Cluster) -> Iterator[tuple[str, Target]]:
    fuzz_cluster.create_topic(TOPIC, 1, 3)
    leader_id = fuzz_cluster.partitions(TOPIC)[0].leader_id
    partition_url = f"{fuzz_cluster.base(leader_id)}/topics/{TOPIC}/partitions/0"
    for index in range(3):
        batch = encode_batch([RecordInput(None, b"fetched-%d" % index, [], 1_700_000_000_000)])
        assert post(f"{partition_url}/batches?acks=all", batch, BATCH).status == 200
    yield fuzz_cluster.url(leader_id), Target(partition_url, Target(partition_url, b"").raw_from_zero())


@pytest.fixture(scope="module")
def broker_headers(fuzz_cluster: Cluster) -> dict[str, str]:
    """Broker 1's token: the route is for brokers only, and the fuzzing is of what a broker may send."""
    return fuzz_cluster.broker_headers(1)


def fetch_partitions() -> st.SearchStrategy[FetchPartition]:
    return st.builds(
        FetchPartition,
        topic=st.sampled_from([TOPIC, "__consumer_offsets", "missing"]) | st.text(max_size=12),
        partition=st.sampled_from([0, 1, -1]) | INT32,
        fetch_offset=st.integers(-1, 5) | INT64,
        last_fetched_epoch=st.integers(-1, 3) | INT32,
        current_leader_epoch=st.integers(-1, 3) | INT32,
        log_start_offset=st.integers(-1, 5) | INT64,
    )


def fetch_requests() -> st.SearchStrategy[bytes]:
    requests = st.builds(
        FetchRequest,
        replica_id=st.integers(-1, 4) | INT32,
        broker_epoch=st.integers(-1, 10) | INT64,
        max_wait_ms=st.integers(0, 50) | st.just(2**31 - 1),
        max_bytes=st.integers(0, 4096) | INT32.filter(lambda value: value >= 0),
        partitions=st.lists(fetch_partitions(), max_size=4),
        session_id=st.integers(0, 3) | INT32,
        session_epoch=st.integers(-1, 3) | INT32.filter(lambda value: value >= -1),
        forgotten=st.lists(st.tuples(st.sampled_from([TOPIC, "missing"]), st.integers(-1, 2)), max_size=3).map(tuple),
    ).map(encode_request)
    return requests.flatmap(
        lambda raw: st.one_of(
            st.just(raw),
            st.integers(0, max(0, len(raw) - 1)).map(lambda end: raw[:end]),
            st.builds(lambda junk: raw + junk, st.binary(min_size=1, max_size=32)),
            st.builds(
                lambda index, mask: raw[:index] + bytes([raw[index] ^ mask]) + raw[index + 1 :],
                st.integers(0, len(raw) - 1),
                st.integers(1, 255),
            ),
        )
    ) | st.binary(max_size=120)


@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
@given(body=fetch_requests())
def test_mutated_fetches_get_4xx_or_a_well_formed_answer(
    leader: tuple[str, Target], broker_headers: dict[str, str], body: bytes
) -> None:
    url, target = leader
    end_before = target.log_end_offset()
    answer = post(f"{url}/internal/fetch", body, CONTENT_TYPE, timeout_s=ANSWER_TIMEOUT_S, headers=broker_headers)
    assert answer.status == 200 or 400 <= answer.status < 500, (answer.status, answer.body)
    if answer.status == 200:
        decode_response(answer.body)
    assert target.log_end_offset() == end_before
    assert target.raw_from_zero()[: len(target.stored)] == target.stored
