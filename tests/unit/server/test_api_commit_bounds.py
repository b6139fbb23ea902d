"""Committing beyond the high watermark is refused; a commit left beyond it is reported, not shown as lag 0 / OK."""

from __future__ import annotations

from broker.groups.lag_status import AHEAD
from tests.unit.server.conftest import Api, error_of
from tests.unit.server.group_offsets import commit, committed


async def topic_with_records(api: Api, count: int) -> None:
    await api.create_topic("t")
    for value in range(count):
        await api.produce("t", {"value": {"data": value}})


async def test_a_commit_up_to_the_high_watermark_is_accepted(group_api: Api) -> None:
    api = group_api
    await topic_with_records(api, 3)
    assert (await commit(api, "g", "t", 3)).status == 200
    assert await committed(api, "g") == {("t", 0): 3}


async def test_a_commit_above_the_high_watermark_is_refused_and_the_stored_offset_kept(group_api: Api) -> None:
    api = group_api
    await topic_with_records(api, 3)
    assert (await commit(api, "g", "t", 2)).status == 200
    for offset in (4, 1_000_000):
        error = await error_of(await commit(api, "g", "t", offset), 416)
        assert error["error"] == "OFFSET_OUT_OF_RANGE"
        assert f"cannot commit offset {offset} for t-0: it is above the high watermark 3" in error["message"]
        assert (error["offset"], error["high_watermark"]) == (offset, 3)
    assert await committed(api, "g") == {("t", 0): 2}


async def test_one_bad_offset_refuses_the_whole_commit(group_api: Api) -> None:
    api = group_api
    await api.create_topic("t", partitions=2)
    await api.produce("t", {"partition_id": 0, "value": {"data": 0}})
    body = {
        "offsets": [
            {"topic_name": "t", "partition_id": 0, "offset": 1},
            {"topic_name": "t", "partition_id": 1, "offset": 5},
        ]
    }
    response = await api.client.post(f"{api.cluster}/consumer-groups/g/offsets", json=body)
    error = await error_of(response, 416)
    assert "t-1" in error["message"]
    assert (await api.client.get(f"{api.cluster}/consumer-groups/g/offsets")).status == 404


async def test_a_commit_left_beyond_the_high_watermark_shows_negative_lag_and_status_ahead(group_api: Api) -> None:
    """The topic is deleted and created again: the group's committed offset 3 now lies beyond HW 0."""
    api = group_api
    await topic_with_records(api, 3)
    assert (await commit(api, "g", "t", 3)).status == 200
    assert (await api.client.delete(api.topic("t"))).status == 204
    await api.create_topic("t")
    await api.produce("t", {"value": {"data": "new"}})

    lags = await (await api.client.get(f"{api.cluster}/consumer-groups/g/lags")).json()
    [row] = lags["data"]
    assert (row["current_offset"], row["log_end_offset"], row["lag"], row["status"]) == (3, 1, -2, AHEAD)
    summary = await (await api.client.get(f"{api.cluster}/consumer-groups/g/lag-summary")).json()
    assert summary["status"] == "ERR"
    assert summary["partitions_ahead_of_high_watermark"] == 1
    assert (summary["max_lag"], summary["total_lag"]) == (0, 0)
