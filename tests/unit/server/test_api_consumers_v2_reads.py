"""v2 reads on one real broker: ``max_bytes`` bounds a whole answer across partitions, and
``fetch.min.bytes`` holds a read until that many bytes are readable (the three-broker
version is ``tests/integration/test_rest_v2_consumer.py``)."""

from __future__ import annotations

import asyncio
import base64
import time
from typing import Any

from broker.record.codec import RecordInput, encode_batch
from tests.unit.server.conftest import Api
from tests.unit.storage.transaction_batches import data_batch, marker_batch

V2 = "application/vnd.kafka.v2+json"
BINARY = "application/vnd.kafka.binary.v2+json"
VALUE_BYTES = 1000


async def instance(api: Api, group: str, **config: Any) -> str:
    body = {"name": "reader", "format": "binary", "auto.offset.reset": "earliest", **config}
    response = await api.client.post(f"/consumers/{group}", json=body, headers={"Content-Type": V2})
    assert response.status == 200, await response.text()
    return f"/consumers/{group}/instances/reader"


async def assign(api: Api, path: str, topic: str, partitions: int) -> None:
    body = {"partitions": [{"topic": topic, "partition": p} for p in range(partitions)]}
    response = await api.client.post(f"{path}/assignments", json=body, headers={"Content-Type": V2})
    assert response.status == 204, await response.text()


async def produce(api: Api, topic: str, partition: int, count: int) -> None:
    """``count`` records without keys, each value ``VALUE_BYTES`` bytes (acks=all: below the HW when answered)."""
    for _ in range(count):
        await api.produce(topic, {"partition_id": partition, "value": {"type": "STRING", "data": "v" * VALUE_BYTES}})


async def read(api: Api, path: str, **query: int) -> list[dict]:
    response = await api.client.get(
        f"{path}/records", params={k: str(v) for k, v in query.items()}, headers={"Accept": BINARY}
    )
    assert response.status == 200, await response.text()
    return await response.json()


async def test_max_bytes_bounds_the_whole_answer_across_partitions(group_api: Api) -> None:
    api = group_api
    await api.create_topic("wide", partitions=3)
    for partition in range(3):
        await produce(api, "wide", partition, 4)
    path = await instance(api, "bounded")
    await assign(api, path, "wide", 3)
    seen: list[tuple[int, int]] = []
    for _ in range(12):
        records = await read(api, path, max_bytes=4 * VALUE_BYTES + VALUE_BYTES // 2, timeout=0)
        assert len(records) <= 4, "keys and values within max_bytes, whichever partitions they come from"
        seen += [(r["partition"], r["offset"]) for r in records]
        if len(seen) == 12:
            break
    assert sorted(seen) == [(p, o) for p in range(3) for o in range(4)], "nothing skipped, nothing repeated"


async def test_fetch_min_bytes_holds_a_read_until_enough_is_below_the_high_watermark(group_api: Api) -> None:
    api = group_api
    await api.create_topic("trickle")
    path = await instance(api, "patient", **{"fetch.min.bytes": 5 * VALUE_BYTES})
    await assign(api, path, "trickle", 1)
    pending = asyncio.create_task(read(api, path, timeout=30_000))
    await produce(api, "trickle", 0, 3)
    assert not pending.done(), "three of five values are readable: the read goes on waiting"
    await produce(api, "trickle", 0, 2)
    records = await pending
    assert [r["offset"] for r in records] == [0, 1, 2, 3, 4]
    assert await read(api, path, timeout=0) == [], "the position moved past all five"


async def test_fetch_min_bytes_never_reached_answers_at_the_timeout_with_what_it_has(group_api: Api) -> None:
    """A lower bound on the wait is safe on a loaded machine (the broker cannot answer before its
    timeout); no upper bound is asserted."""
    api = group_api
    await api.create_topic("dribble")
    await produce(api, "dribble", 0, 2)
    path = await instance(api, "unmet", **{"fetch.min.bytes": 3 * VALUE_BYTES})
    await assign(api, path, "dribble", 1)
    started = time.monotonic()
    records = await read(api, path, timeout=300)
    assert time.monotonic() - started >= 0.3
    assert [r["offset"] for r in records] == [0, 1]


async def test_a_read_committed_instance_reads_committed_records_only(group_api: Api) -> None:
    """Confluent's ``isolation.level``; transactional records reach the log as a follower's would."""
    api = group_api
    await api.create_topic("txn-v2")
    leader = api.node.replicas.local_partition("txn-v2", 0)
    assert leader is not None
    plain = encode_batch([RecordInput(None, b"plain", (), 1)])
    for batch in (data_batch(1001, tag="aborted"), data_batch(1002, tag="committed"), plain):
        leader.log.append_as_leader(batch, leader.leader_epoch, 0)
    for batch in (
        marker_batch(1001, committed=False),
        marker_batch(1002, committed=True),
        data_batch(1003, tag="open"),
    ):
        leader.log.append_as_leader(batch, leader.leader_epoch, 0)
    await produce(api, "txn-v2", 0, 1)  # a plain write moves the HW over everything above
    values: dict[str, list[bytes]] = {}
    for isolation in ("read_committed", "read_uncommitted"):
        path = await instance(api, f"txn-{isolation}", **{"isolation.level": isolation})
        await assign(api, path, "txn-v2", 1)
        values[isolation] = []
        while records := await read(api, path, timeout=0):
            values[isolation] += [base64.b64decode(r["value"])[:9] for r in records]
    assert values["read_committed"] == [b"committed", b"plain"], "aborted dropped, stops at the open transaction"
    assert values["read_uncommitted"] == [b"aborted-0", b"committed", b"plain", b"open-0", b"v" * 9]


async def test_a_read_committed_instance_moves_past_an_aborted_transaction_read_alone(group_api: Api) -> None:
    """A read whose fetch holds only an aborted transaction's batches (or its marker) renders nothing,
    and must still move the position past them, or every later read fetches them again."""
    api = group_api
    await api.create_topic("txn-v2-alone")
    leader = api.node.replicas.local_partition("txn-v2-alone", 0)
    assert leader is not None
    for batch in (data_batch(1001, tag="aborted"), marker_batch(1001, committed=False)):
        leader.log.append_as_leader(batch, leader.leader_epoch, 0)
    await produce(api, "txn-v2-alone", 0, 1)  # offset 2, and the HW over all three
    path = await instance(api, "txn-alone", **{"isolation.level": "read_committed"})
    await assign(api, path, "txn-v2-alone", 1)
    offsets: list[int] = []
    for _ in range(4):  # max_bytes 1: each fetch holds one whole batch
        offsets += [record["offset"] for record in await read(api, path, max_bytes=1, timeout=0)]
    assert offsets == [2]
