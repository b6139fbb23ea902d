"""Reading by isolation over HTTP, and the produces a partition refuses for transactions.

Transactional records reach the leader's log here as a follower's would (appended to
the log itself), since no door takes them from a producer until the transaction
coordinator adds partitions to transactions.
"""

from __future__ import annotations

from broker.record.committed import parse_aborted
from broker.record.header import iter_batches
from broker.replica_io.partition import Partition
from tests.unit.server.conftest import Api, error_of
from tests.unit.storage.transaction_batches import data_batch, marker_batch

BATCH = "application/vnd.kafka.batch.v2"
P1, P2 = 1001, 1002


async def _post(api: Api, batch: bytes):
    return await api.client.post(f"{api.partition('t', 0)}/batches", data=batch, headers={"Content-Type": BATCH})


def _leader(api: Api) -> Partition:
    partition = api.node.replicas.local_partition("t", 0)
    assert partition is not None
    return partition


async def _direct(api: Api, batch: bytes) -> None:
    """Append to the leader's log the way replication appends to a follower's."""
    partition = _leader(api)
    partition.log.append_as_leader(batch, partition.leader_epoch, 0)


async def _plain(api: Api, tag: str) -> None:
    response = await _post(api, data_batch(-1, tag=tag))
    assert response.status == 200, await response.text()


def _values(body: dict) -> list[str]:
    return [record["value"]["data"] for record in body["data"]]


async def test_read_committed_stops_at_the_open_transaction_and_drops_aborted_records(api: Api) -> None:
    await api.create_topic("t")
    await _plain(api, "a")  # 0
    await _direct(api, data_batch(P1, 2, tag="aborted"))  # 1-2
    await _direct(api, data_batch(P2, tag="committed"))  # 3
    await _plain(api, "b")  # 4
    open_body = await api.read("t", offset=0, isolation="read_committed")
    assert _values(open_body) == ["a-0"]
    assert (open_body["last_stable_offset"], open_body["high_watermark"], open_body["next_offset"]) == (1, 5, 1)

    await _direct(api, marker_batch(P1, committed=False))  # 5
    await _direct(api, marker_batch(P2, committed=True))  # 6
    await _plain(api, "c")  # 7
    committed = await api.read("t", offset=0, isolation="read_committed")
    assert _values(committed) == ["a-0", "committed-0", "b-0", "c-0"]
    assert committed["last_stable_offset"] == committed["high_watermark"] == committed["next_offset"] == 8
    uncommitted = await api.read("t", offset=0)
    assert _values(uncommitted) == ["a-0", "aborted-0", "aborted-1", "committed-0", "b-0", "c-0"]

    raw = await api.client.get(
        f"{api.partition('t', 0)}/records", params={"isolation": "read_committed"}, headers={"Accept": BATCH}
    )
    assert raw.status == 200
    assert raw.headers["X-Last-Stable-Offset"] == "8"
    assert parse_aborted(raw.headers["X-Aborted-Transactions"]) == ((P1, 1),)
    assert [header.base_offset for header in iter_batches(await raw.read())] == [0, 1, 3, 4, 5, 6, 7]


async def test_partitions_report_the_last_stable_offset(api: Api) -> None:
    await api.create_topic("t")
    await _plain(api, "a")
    await _direct(api, data_batch(P1))
    await _plain(api, "b")
    partition = await (await api.client.get(api.partition("t", 0))).json()
    assert (partition["log_start_offset"], partition["last_stable_offset"], partition["high_watermark"]) == (0, 1, 3)
    [opened] = partition["open_transactions"]
    assert (opened["producer_id"], opened["producer_epoch"], opened["first_offset"]) == (P1, 0, 1)
    assert opened["started_ms"] > 0
    offsets = await (await api.client.get(f"{api.partition('t', 0)}/offset")).json()
    assert (offsets["last_stable_offset"], offsets["latest_offset"]) == (1, 3)


async def test_an_unknown_isolation_is_refused_by_name(api: Api) -> None:
    await api.create_topic("t")
    response = await api.client.get(f"{api.partition('t', 0)}/records", params={"isolation": "serializable"})
    body = await error_of(response, 400)
    assert "isolation" in body["message"] and "read_committed" in body["message"]


async def test_transactional_and_control_batches_are_refused_with_nothing_written(api: Api) -> None:
    await api.create_topic("t")
    await _plain(api, "kept")
    transactional = await error_of(await _post(api, data_batch(P1)), 409)
    assert transactional["error"] == "INVALID_TXN_STATE" and f"producer {P1}" in transactional["message"]
    control = await error_of(await _post(api, marker_batch(P1, committed=True)), 400)
    assert control["error"] == "INVALID_RECORD"
    assert _leader(api).log_end_offset == 1
    assert _values(await api.read("t", offset=0)) == ["kept-0"]
