"""A produced batch's CRC is computed once per request, and every refusal it made stays."""

from __future__ import annotations

import pytest

import broker.record.header as header_module
from broker.record.codec import RecordInput, encode_batch
from tests.unit.server.conftest import Api, error_of

BATCH = "application/vnd.kafka.batch.v2"


def _batch(count: int) -> bytes:
    return encode_batch([RecordInput(b"k", b"v%d" % i, [], 1_700_000_000_000) for i in range(count)])


@pytest.fixture
def crc_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Lengths of the buffers CRC-32C was computed over (the real CRC still runs)."""
    calls: list[int] = []
    real = header_module._crc32c

    def counting(data: bytes | bytearray | memoryview) -> int:
        calls.append(len(data))
        return real(data)

    monkeypatch.setattr(header_module, "_crc32c", counting)
    return calls


@pytest.mark.parametrize("acks", ["1", "all"])
async def test_a_binary_produce_checksums_its_batch_once(api: Api, crc_calls: list[int], acks: str) -> None:
    await api.create_topic("t", partitions=1)
    batch = _batch(50)
    crc_calls.clear()
    response = await api.client.post(
        f"{api.partition('t', 0)}/batches", data=batch, params={"acks": acks}, headers={"Content-Type": BATCH}
    )
    assert response.status == 200
    assert len(crc_calls) == 1


async def test_a_json_produce_checks_the_batch_it_encoded_once(api: Api, crc_calls: list[int]) -> None:
    """Encoding computes the CRC once; the leader's append checks it once (it was twice)."""
    await api.create_topic("t", partitions=1)
    crc_calls.clear()
    await api.produce("t", {"value": {"type": "STRING", "data": "x"}})
    assert len(crc_calls) == 2


async def test_a_batch_with_a_bad_crc_is_refused_and_nothing_is_stored(api: Api) -> None:
    await api.create_topic("t", partitions=1)
    url = f"{api.partition('t', 0)}/batches"
    good = _batch(3)
    bad = good[:-1] + bytes([good[-1] ^ 0xFF])
    body = await error_of(await api.client.post(url, data=bad, headers={"Content-Type": BATCH}), 400)
    assert body["error"] == "CORRUPT_MESSAGE" and "CRC" in body["message"]
    partition = api.node.replicas.local_partition("t", 0)
    assert partition is not None
    assert partition.log.log_end_offset == 0
    assert (await api.client.post(url, data=good, headers={"Content-Type": BATCH})).status == 200
    partition = api.node.replicas.local_partition("t", 0)
    assert partition is not None
    assert partition.log.log_end_offset == 3
