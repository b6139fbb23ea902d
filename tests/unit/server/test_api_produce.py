"""Producing over HTTP: JSON single/multi/stream, records:batch, binary batches, and bad input."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from aiohttp.test_utils import TestClient, TestServer

from broker.node.broker_node import BrokerNode
from broker.partitioner import partition_for_key
from broker.record.codec import RecordInput, encode_batch
from broker.record.decode import iter_records
from broker.record.header import iter_batches
from broker.server.app import create_app
from tests.unit.server.conftest import MAX_REQUEST_BYTES, Api, broker_settings, error_of

BATCH = "application/vnd.kafka.batch.v2"


async def raw_batches(api: Api, topic: str, partition: int = 0) -> bytes:
    response = await api.client.get(
        f"{api.partition(topic, partition)}/records", params={"offset": "0"}, headers={"Accept": BATCH}
    )
    assert response.status == 200
    return await response.read()


def string(data: str) -> dict:
    return {"type": "STRING", "data": data}


async def test_single_record_delivery_report(api: Api) -> None:
    await api.create_topic("t")
    report = await api.produce(
        "t", {"key": string("k"), "value": {"type": "JSON", "data": {"n": 1}}, "timestamp": 1234}, acks="1"
    )
    assert report == {
        "error_code": 200,
        "cluster_id": api.node.cluster_id,
        "topic_name": "t",
        "partition_id": 0,
        "offset": 0,
        "timestamp": "1970-01-01T00:00:01.234Z",
        "timestamp_ms": 1234,
        "key": {"type": "STRING", "size": 1},
        "value": {"type": "JSON", "size": len(b'{"n":1}')},
    }
    second = await api.produce("t", {"value": string("x")})
    assert second["offset"] == 1 and second["key"] is None
    assert await api.values("t") == ['{"n":1}', "x"]


async def test_keyed_records_land_where_the_java_client_puts_them(api: Api) -> None:
    await api.create_topic("t", partitions=4)
    for key in ("user-1", "user-2", "user-3"):
        report = await api.produce("t", {"key": string(key), "value": string("v")})
        assert report["partition_id"] == partition_for_key(key.encode(), 4)


async def test_keyless_records_go_round_robin(api: Api) -> None:
    await api.create_topic("t", partitions=3)
    partitions = [(await api.produce("t", {"value": string("v")}))["partition_id"] for _ in range(6)]
    assert sorted(partitions) == [0, 0, 1, 1, 2, 2]


async def test_concatenated_objects_are_one_batch_per_partition(api: Api) -> None:
    await api.create_topic("t", partitions=2)
    records = [{"partition_id": p, "value": string(f"v{i}")} for i, p in enumerate([0, 1, 0, 0, 1])]
    records.insert(2, {"value": {"type": "BINARY", "data": "***"}})
    body = "\n".join(json.dumps(r) for r in records).encode()
    response = await api.client.post(
        f"{api.topic('t')}/records", data=body, headers={"Content-Type": "application/json"}
    )
    assert response.status == 200 and response.content_type == "application/x-ndjson"
    lines = [json.loads(line) for line in (await response.text()).splitlines()]
    assert [line.get("offset") for line in lines] == [0, 0, None, 1, 2, 1]
    assert lines[2]["error"] == "INVALID_REQUEST" and "base64" in lines[2]["message"]
    assert len(list(iter_batches(await raw_batches(api, "t", 0)))) == 1
    assert len(list(iter_batches(await raw_batches(api, "t", 1)))) == 1
    assert await api.values("t", 0) == ["v0", "v2", "v3"]


async def test_streaming_produce_reports_each_record_as_it_is_appended(api: Api) -> None:
    await api.create_topic("t")
    chunks: asyncio.Queue[bytes | None] = asyncio.Queue()

    async def body():
        while (chunk := await chunks.get()) is not None:
            yield chunk

    chunks.put_nowait(json.dumps({"value": string("one")}).encode())
    response = await api.client.post(
        f"{api.topic('t')}/records", data=body(), headers={"Content-Type": "application/json"}
    )
    assert response.status == 200
    first = json.loads(await asyncio.wait_for(response.content.readline(), 5))
    assert first["offset"] == 0 and first["error_code"] == 200
    for piece in (
        b'{"value": {"type": "STRING", "da',
        b'ta": "two"}}\n{"value": {"type": "BINARY", "data": "!"}}',
        None,
    ):
        chunks.put_nowait(piece)
    rest = [json.loads(line) for line in (await response.text()).splitlines()]
    assert rest[0]["offset"] == 1
    assert rest[1]["error"] == "INVALID_REQUEST"
    assert await api.values("t") == ["one", "two"]


async def test_streaming_to_unknown_topic_is_404_before_the_stream(api: Api) -> None:
    async def body():
        yield b'{"value": {"data": 1}}'

    response = await api.client.post(
        f"{api.topic('nope')}/records", data=body(), headers={"Content-Type": "application/json"}
    )
    assert (await error_of(response, 404))["error_code"] == 40403


async def test_records_batch_reports_each_entry(api: Api) -> None:
    await api.create_topic("t", partitions=2)
    entries = [
        {"id": "a", "partition_id": 1, "value": string("x")},
        {"id": "b", "value": {"type": "BINARY", "data": "@@"}},
        {"id": "c", "partition_id": 9, "value": string("y")},
        {"partition_id": 1, "value": string("z"), "timestamp": 77},
        {"id": "e", "partition_id": "one"},
    ]
    response = await api.client.post(f"{api.topic('t')}/records:batch", json={"entries": entries})
    assert response.status == 207
    body = await response.json()
    first = body["successes"][0]
    assert first == {
        "id": "a",
        "partition_id": 1,
        "offset": 0,
        "timestamp": first["timestamp"],
        "timestamp_ms": first["timestamp_ms"],
    }
    assert first["timestamp"].endswith("Z") and first["timestamp_ms"] > 0
    assert {
        key: body["successes"][1][key] for key in ("id", "partition_id", "offset", "timestamp", "timestamp_ms")
    } == {
        "id": "3",
        "partition_id": 1,
        "offset": 1,
        "timestamp": "1970-01-01T00:00:00.077Z",
        "timestamp_ms": 77,
    }
    failures = {f["id"]: f for f in body["failures"]}
    assert failures["b"]["error_code"] == 40001
    assert failures["c"]["error_code"] == 40402
    assert failures["e"]["error_code"] == 42201 and "partition_id" in failures["e"]["message"]
    assert len(list(iter_batches(await raw_batches(api, "t", 1)))) == 1
    assert await api.values("t", 1) == ["x", "z"]


async def test_records_batch_entry_limit(tmp_path: Path) -> None:
    node = await BrokerNode.start(broker_settings(tmp_path, max_batch_entries=2))
    try:
        async with TestClient(TestServer(create_app(node), host="127.0.0.1")) as client:
            api = Api(client, node)
            await api.create_topic("t")
            entries = [{"value": string(str(i))} for i in range(3)]
            response = await client.post(f"{api.topic('t')}/records:batch", json={"entries": entries})
            body = await error_of(response, 400)
            assert body["max_entries"] == 2 and "1 to 2 entries" in body["message"]
            response = await client.post(f"{api.topic('t')}/records:batch", json={"entries": []})
            await error_of(response, 400)
            assert await api.values("t") == []
    finally:
        await node.stop()


async def test_acks_zero_answers_202_then_appends(api: Api) -> None:
    await api.create_topic("t")
    response = await api.client.post(f"{api.topic('t')}/records", json={"value": string("fire")}, params={"acks": "0"})
    assert response.status == 202
    report = await response.json()
    assert report["offset"] is None and report["error_code"] == 202
    read = await api.read("t", offset=0, timeout_ms=5000)
    assert [r["value"]["data"] for r in read["data"]] == ["fire"]


async def test_bad_acks_and_timeout(api: Api) -> None:
    await api.create_topic("t")
    for query in ({"acks": "2"}, {"timeout_ms": "-1"}, {"timeout_ms": "soon"}):
        response = await api.client.post(f"{api.topic('t')}/records", json={"value": string("v")}, params=query)
        await error_of(response, 400)
    assert await api.values("t") == []


async def test_record_over_max_message_bytes_is_413_and_not_appended(api: Api) -> None:
    await api.create_topic("t", max_message_bytes="2000")
    await api.produce("t", {"value": string("small")})
    response = await api.client.post(f"{api.topic('t')}/records", json={"value": string("x" * 5000)})
    body = await error_of(response, 413)
    assert body["error"] == "MESSAGE_TOO_LARGE" and body["max_message_bytes"] == 2000
    assert await api.values("t") == ["small"]


async def test_body_over_the_request_limit_is_413(api: Api) -> None:
    await api.create_topic("t")
    response = await api.client.post(f"{api.topic('t')}/records", json={"value": string("x" * MAX_REQUEST_BYTES)})
    body = await error_of(response, 413)
    assert body["error"] == "REQUEST_TOO_LARGE"
    assert await api.values("t") == []


async def test_malformed_and_wrongly_typed_records(api: Api) -> None:
    await api.create_topic("t")
    url = f"{api.topic('t')}/records"
    await error_of(await api.client.post(url, data=b'{"value": ', headers={"Content-Type": "application/json"}), 400)
    await error_of(await api.client.post(url, data=b"", headers={"Content-Type": "application/json"}), 400)
    body = await error_of(await api.client.post(url, json={"value": {"type": "STRING", "data": 5}}), 400)
    assert "value.data" in body["message"]
    body = await error_of(await api.client.post(url, json={"partition_id": [1]}), 422)
    assert "partition_id" in body["message"]
    for timestamp in (False, "123", 1.5):
        body = await error_of(await api.client.post(url, json={"value": None, "timestamp": timestamp}), 422)
        assert "timestamp" in body["message"], timestamp
    await error_of(await api.client.post(url, data=b"v", headers={"Content-Type": "text/plain"}), 415)
    assert await api.values("t") == []


def binary_batch(*values: bytes) -> bytes:
    return encode_batch([RecordInput(None, value, [("h", b"1")], 1000 + i) for i, value in enumerate(values)])


async def test_binary_produce_appends_the_batch_as_is(api: Api) -> None:
    await api.create_topic("t")
    url = f"{api.partition('t', 0)}/batches"
    first = await api.client.post(url, data=binary_batch(b"a", b"b"), headers={"Content-Type": BATCH})
    assert first.status == 200
    assert await first.json() == {
        "cluster_id": api.node.cluster_id,
        "topic_name": "t",
        "partition_id": 0,
        "base_offset": 0,
        "last_offset": 1,
        "log_append_time": -1,
    }
    second = await (await api.client.post(url, data=binary_batch(b"c"), headers={"Content-Type": BATCH})).json()
    assert (second["base_offset"], second["last_offset"]) == (2, 2)
    records = list(iter_records(await raw_batches(api, "t")))
    assert [(r.offset, r.value, r.headers) for r in records] == [
        (0, b"a", [("h", b"1")]),
        (1, b"b", [("h", b"1")]),
        (2, b"c", [("h", b"1")]),
    ]


async def test_corrupt_or_truncated_binary_batch_is_rejected_and_nothing_appended(api: Api) -> None:
    await api.create_topic("t")
    url = f"{api.partition('t', 0)}/batches"
    await api.client.post(url, data=binary_batch(b"kept"), headers={"Content-Type": BATCH})
    good = binary_batch(b"payload")
    flipped = bytearray(good)
    flipped[-3] ^= 0xFF
    for bad in (bytes(flipped), good[:-5], good[:30], b""):
        for acks in ("1", "0"):
            response = await api.client.post(url, data=bad, headers={"Content-Type": BATCH}, params={"acks": acks})
            assert (await error_of(response, 400))["error"] == "CORRUPT_MESSAGE"
    await asyncio.sleep(0.05)
    assert [r.value for r in iter_records(await raw_batches(api, "t"))] == [b"kept"]


async def test_binary_produce_content_type_and_unknowns(api: Api) -> None:
    await api.create_topic("t")
    batch = binary_batch(b"x")
    await error_of(
        await api.client.post(
            f"{api.partition('t', 0)}/batches", data=batch, headers={"Content-Type": "application/json"}
        ),
        415,
    )
    body = await error_of(
        await api.client.post(f"{api.partition('t', 3)}/batches", data=batch, headers={"Content-Type": BATCH}), 404
    )
    assert body["error_code"] == 40402
    body = await error_of(
        await api.client.post(f"{api.partition('zz', 0)}/batches", data=batch, headers={"Content-Type": BATCH}), 404
    )
    assert body["error_code"] == 40403
    assert await api.values("t") == []


async def test_records_batch_echoes_only_string_or_integer_ids(api: Api) -> None:
    """An id of another type (found by fuzzing: ``{"id": {}}``) is replaced by the entry's position,
    so every result matches the documented ``id: string | integer``."""
    await api.create_topic("ids", partitions=1)
    entries = [{"id": {}, "value": string("x")}, {"id": [1], "partition_id": "one"}, {"id": True, "value": string("y")}]
    response = await api.client.post(f"{api.topic('ids')}/records:batch", json={"entries": entries})
    body = await response.json()
    assert response.status == 207
    assert [s["id"] for s in body["successes"]] == ["2"]
    assert [f["id"] for f in body["failures"]] == ["0", "1"]


async def test_timestamps_before_1970_are_refused_not_a_crash(api: Api) -> None:
    """Found by fuzzing: a date-time before 1970 became a negative timestamp, and with a late one in
    the same records:batch the timestamp delta overflowed its varlong (500)."""
    await api.create_topic("old", partitions=1)
    entries = [{"timestamp": "0867-01-01T00:00:00Z", "value": string("a")}, {"timestamp": 2**63 - 1}]
    response = await api.client.post(f"{api.topic('old')}/records:batch", json={"entries": entries})
    body = await response.json()
    assert response.status == 207
    assert [f["id"] for f in body["failures"]] == ["0"]
    assert [s["id"] for s in body["successes"]] == ["1"]
    single = await api.client.post(f"{api.topic('old')}/records", json={"timestamp": "1969-12-31T23:59:59Z"})
    assert single.status == 400


async def test_a_batch_whose_counts_or_records_disagree_is_refused_and_never_poisons_reads(api: Api) -> None:
    """Found by fuzzing: a batch with a valid CRC over a wrong record count was appended, and from
    then on every JSON read of the partition failed. The leader now refuses it, as Kafka's does."""
    from tests.fuzz.batches import rewrite, with_crc

    await api.create_topic("t", partitions=1)
    url = f"{api.partition('t', 0)}/batches"
    good = encode_batch([RecordInput(b"k", b"v", [], 1_700_000_000_000)])
    assert (await api.client.post(url, data=good, headers={"Content-Type": BATCH})).status == 200
    garbage_records = with_crc(good[:61] + b"\x7f" * (len(good) - 61))
    for bad in (rewrite(good, "records_count", 5), rewrite(good, "last_offset_delta", 100), garbage_records):
        body = await error_of(await api.client.post(url, data=bad, headers={"Content-Type": BATCH}), 400)
        assert body["error"] == "CORRUPT_MESSAGE"
    read = await api.client.get(f"{api.partition('t', 0)}/records", params={"offset": "0", "format": "string"})
    assert read.status == 200 and [r["value"]["data"] for r in (await read.json())["data"]] == ["v"]
