"""A negative partition id is one mistake with one answer: 400 INVALID_REQUEST, in a path, a query or a body."""

from __future__ import annotations

from tests.unit.server.conftest import Api, error_of


async def test_a_negative_partition_is_one_400_whether_named_in_a_path_or_a_body(api: Api) -> None:
    await api.create_topic("t", partitions=2)
    await api.produce("t", {"partition_id": 0, "value": {"type": "STRING", "data": "kept"}})
    answers = []
    for method, suffix in [("GET", ""), ("GET", "/offset"), ("GET", "/records")]:
        answers.append(await error_of(await api.client.request(method, api.partition("t", -1) + suffix), 400))
    binary = await api.client.post(
        api.partition("t", -1) + "/batches", data=b"x", headers={"Content-Type": "application/vnd.kafka.batch.v2"}
    )
    answers.append(await error_of(binary, 400))
    record = {"partition_id": -1, "value": {"type": "STRING", "data": "lost?"}}
    answers.append(await error_of(await api.client.post(f"{api.topic('t')}/records", json=record), 400))
    batch = await api.client.post(f"{api.topic('t')}/records:batch", json={"entries": [{"id": "neg", **record}]})
    assert batch.status == 207
    [failure] = (await batch.json())["failures"]
    answers.append(failure)
    assert {(answer["error_code"], answer["error"]) for answer in answers} == {(40001, "INVALID_REQUEST")}
    assert all("partition_id must be a non-negative integer, got" in answer["message"] for answer in answers)
    assert await api.values("t", 0) == ["kept"] and await api.values("t", 1) == []


async def test_a_negative_partition_in_a_consumer_group_request_is_the_same_400(api: Api) -> None:
    await api.create_topic("t")
    group = f"{api.cluster}/consumer-groups/g"
    commit = {"offsets": [{"topic_name": "t", "partition_id": -1, "offset": 0}]}
    heartbeat = {
        "member_epoch": 0,
        "subscribed_topics": ["t"],
        "owned_partitions": [{"topic": "t", "partitions": [-1]}],
    }
    answers = [
        await error_of(await api.client.post(f"{group}/offsets", json=commit), 400),
        await error_of(await api.client.post(f"{group}/consumers/m:heartbeat", json=heartbeat), 400),
        await error_of(await api.client.get(f"{group}/lags/t/partitions/-1"), 400),
    ]
    assert {(answer["error_code"], answer["error"]) for answer in answers} == {(40001, "INVALID_REQUEST")}
    assert all("partition_id must be a non-negative integer, got" in answer["message"] for answer in answers)
    assert answers[0]["errors"] == [
        {"field": "offsets.0.partition_id", "message": "partition_id must be a non-negative integer, got -1"}
    ]
    assert (await api.client.get(f"{group}/offsets")).status == 404, "nothing was committed"
