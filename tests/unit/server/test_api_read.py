"""Reading over HTTP: formats, offsets inside batches, limits, raw batches, long-poll, bad input."""

from __future__ import annotations

import asyncio
import base64

import pytest

from broker.record.codec import RecordInput, encode_batch
from broker.record.decode import iter_records
from tests.unit.server.conftest import Api, error_of

BATCH = "application/vnd.kafka.batch.v2"


async def append_batch(api: Api, topic: str, *values: bytes, partition: int = 0) -> None:
    batch = encode_batch([RecordInput(b"k", value, [], 1000) for value in values])
    response = await api.client.post(
        f"{api.partition(topic, partition)}/batches", data=batch, headers={"Content-Type": BATCH}
    )
    assert response.status == 200


async def test_formats_binary_string_json(api: Api) -> None:
    await api.create_topic("t")
    await append_batch(api, "t", b'{"n": 1}', b"\xff")
    url = f"{api.partition('t', 0)}/records"
    binary = await (await api.client.get(url)).json()
    assert binary["data"][0]["value"] == {"type": "BINARY", "data": base64.b64encode(b'{"n": 1}').decode()}
    assert binary["data"][0]["key"] == {"type": "BINARY", "data": "aw=="}
    as_string = await (await api.client.get(url, params={"format": "string"})).json()
    assert as_string["data"][0]["value"] == {"type": "STRING", "data": '{"n": 1}'}
    assert as_string["data"][1]["value"]["type"] == "BINARY"
    as_json = await (await api.client.get(url, params={"format": "json"})).json()
    assert as_json["data"][0]["value"] == {"type": "JSON", "data": {"n": 1}}
    assert (as_json["next_offset"], as_json["high_watermark"], as_json["log_start_offset"]) == (2, 2, 0)
    assert set(as_json["data"][0]) == {"topic_name", "partition_id", "offset", "timestamp", "headers", "key", "value"}
    await error_of(await api.client.get(url, params={"format": "avro"}), 400)


async def test_records_below_offset_in_the_first_batch_are_skipped(api: Api) -> None:
    await api.create_topic("t")
    await append_batch(api, "t", b"0", b"1", b"2", b"3")
    await append_batch(api, "t", b"4", b"5")
    body = await api.read("t", offset=2)
    assert [r["offset"] for r in body["data"]] == [2, 3, 4, 5]
    assert body["next_offset"] == 6


async def test_max_records_and_next_offset_walk(api: Api) -> None:
    await api.create_topic("t")
    await append_batch(api, "t", *[str(i).encode() for i in range(7)])
    seen, offset = [], 0
    while True:
        body = await api.read("t", offset=offset, max_records=3)
        if not body["data"]:
            break
        assert len(body["data"]) <= 3
        seen += [r["value"]["data"] for r in body["data"]]
        offset = body["next_offset"]
    assert seen == [str(i) for i in range(7)] and offset == 7


async def test_reading_at_the_high_watermark_is_empty(api: Api) -> None:
    await api.create_topic("t")
    await append_batch(api, "t", b"a")
    body = await api.read("t", offset=1)
    assert body["data"] == [] and body["next_offset"] == 1 and body["high_watermark"] == 1


async def test_record_bigger_than_max_bytes_is_returned_whole(api: Api) -> None:
    await api.create_topic("t")
    await append_batch(api, "t", b"x" * 10_000)
    await append_batch(api, "t", b"y")
    body = await api.read("t", offset=0, max_bytes=100)
    assert [len(r["value"]["data"]) for r in body["data"]] == [10_000]
    assert body["next_offset"] == 1


async def test_raw_batches_with_offsets_in_headers(api: Api) -> None:
    await api.create_topic("t")
    await append_batch(api, "t", b"a", b"b")
    await append_batch(api, "t", b"c")
    response = await api.client.get(
        f"{api.partition('t', 0)}/records", params={"offset": "1"}, headers={"Accept": BATCH}
    )
    assert response.status == 200 and response.content_type == BATCH
    assert response.headers["X-High-Watermark"] == "3"
    assert response.headers["X-Log-Start-Offset"] == "0"
    assert response.headers["X-Next-Offset"] == "3"
    assert [r.value for r in iter_records(await response.read())] == [b"a", b"b", b"c"]


async def test_long_poll_returns_when_data_crosses_the_high_watermark(api: Api) -> None:
    await api.create_topic("t")
    reader = asyncio.create_task(api.read("t", offset=0, timeout_ms=5000))
    await asyncio.sleep(0.2)
    assert not reader.done()
    await api.produce("t", {"value": {"type": "STRING", "data": "late"}})
    body = await asyncio.wait_for(reader, 5)
    assert [r["value"]["data"] for r in body["data"]] == ["late"]


async def test_long_poll_times_out_empty(api: Api) -> None:
    await api.create_topic("t")
    started = asyncio.get_running_loop().time()
    body = await api.read("t", offset=0, timeout_ms=300)
    assert body["data"] == [] and asyncio.get_running_loop().time() - started >= 0.25


async def test_offset_out_of_range_is_416_with_the_range(api: Api) -> None:
    await api.create_topic("t")
    await append_batch(api, "t", b"a", b"b")
    response = await api.client.get(f"{api.partition('t', 0)}/records", params={"offset": "50"})
    body = await error_of(response, 416)
    assert body["error"] == "OFFSET_OUT_OF_RANGE"
    assert (body["log_start_offset"], body["log_end_offset"]) == (0, 2)
    assert [r["value"]["data"] for r in (await api.read("t"))["data"]] == ["a", "b"]


@pytest.mark.parametrize(
    "query",
    [
        {"offset": "-1"},
        {"offset": "abc"},
        {"offset": "1e3"},
        {"max_records": "0"},
        {"max_records": "-2"},
        {"max_bytes": "0"},
        {"max_bytes": "x"},
        {"timeout_ms": "-1"},
        {"timeout_ms": "999999999"},
    ],
)
async def test_negative_or_non_numeric_parameters_are_400(api: Api, query: dict) -> None:
    await api.create_topic("t")
    await append_batch(api, "t", b"a")
    body = await error_of(await api.client.get(f"{api.partition('t', 0)}/records", params=query), 400)
    assert next(iter(query)) in body["message"]
    assert [r["value"]["data"] for r in (await api.read("t"))["data"]] == ["a"]


async def test_unknown_topic_or_partition(api: Api) -> None:
    await api.create_topic("t")
    assert (await error_of(await api.client.get(f"{api.partition('t', 1)}/records"), 404))["error_code"] == 40402
    assert (await error_of(await api.client.get(f"{api.partition('x', 0)}/records"), 404))["error_code"] == 40403


async def test_a_page_spans_segment_boundaries(api: Api) -> None:
    await api.create_topic("t", segment_bytes="1024")
    for index in range(12):
        await append_batch(api, "t", bytes([65 + index]) * 150)
    assert len(list(api.node.data_dir.glob("t-0/*.log"))) > 3
    body = await api.read("t", offset=0, max_records=1000)
    assert [r["offset"] for r in body["data"]] == list(range(12)) and body["next_offset"] == 12
    limited = await api.read("t", offset=0, max_bytes=700)
    assert 1 <= len(limited["data"]) < 12
    assert limited["next_offset"] == limited["data"][-1]["offset"] + 1
