"""Requests of any supported version, built from kio's classes as a client would send them."""

from __future__ import annotations

import datetime
import sys
import uuid
from typing import Any

from kio.index import load_request_schema
from kio.static.primitive import i32Timedelta

from broker.kafka.codec import encode_request
from broker.kafka.shapes import build


def request_class(api_key: int, version: int, name: str) -> type:
    return getattr(sys.modules[load_request_schema(api_key, version).__module__], name)


def millis(ms: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=ms))


def frame(api_key: int, version: int, body: Any, correlation_id: int = 42) -> bytes:
    return encode_request(correlation_id, body)


def produce(version: int, topic: str, records: bytes, acks: int = -1) -> Any:
    part = build(request_class(0, version, "PartitionProduceData"), index=0, records=records)
    topic_data = build(request_class(0, version, "TopicProduceData"), name=topic, partition_data=(part,))
    return build(
        request_class(0, version, "ProduceRequest"),
        transactional_id=None,
        acks=acks,
        timeout=millis(1500),
        topic_data=(topic_data,),
    )


def fetch(
    version: int,
    topic: str,
    offset: int,
    current_leader_epoch: int = -1,
    session_id: int = 0,
    isolation_level: int = 0,
    session_epoch: int = -1,
) -> Any:
    part = build(
        request_class(1, version, "FetchPartition"),
        partition=0,
        current_leader_epoch=current_leader_epoch,
        fetch_offset=offset,
        last_fetched_epoch=-1,
        log_start_offset=-1,
        partition_max_bytes=1 << 20,
    )
    fetch_topic = build(
        request_class(1, version, "FetchTopic"), topic=topic, topic_id=uuid.UUID(int=0), partitions=(part,)
    )
    return build(
        request_class(1, version, "FetchRequest"),
        replica_id=-1,
        max_wait=millis(0),
        min_bytes=0,
        max_bytes=1 << 20,
        isolation_level=isolation_level,
        session_id=session_id,
        session_epoch=session_epoch,
        topics=(fetch_topic,),
        forgotten_topics_data=(),
        rack_id="",
    )


def list_offsets(version: int, topic: str, timestamps: list[int], isolation_level: int = 0) -> Any:
    parts = tuple(
        build(
            request_class(2, version, "ListOffsetsPartition"), partition_index=0, current_leader_epoch=-1, timestamp=t
        )
        for t in timestamps
    )
    list_topic = build(request_class(2, version, "ListOffsetsTopic"), name=topic, partitions=parts)
    return build(
        request_class(2, version, "ListOffsetsRequest"),
        replica_id=-1,
        isolation_level=isolation_level,
        topics=(list_topic,),
    )


def metadata(version: int, topics: list[str] | None) -> Any:
    topic_class = request_class(3, version, "MetadataRequestTopic")
    asked = None if topics is None else tuple(build(topic_class, topic_id=None, name=name) for name in topics)
    return build(
        request_class(3, version, "MetadataRequest"),
        topics=asked if asked is not None or version > 0 else (),
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )


def offset_for_leader_epoch(version: int, topic: str, leader_epoch: int) -> Any:
    part = build(
        request_class(23, version, "OffsetForLeaderPartition"),
        partition=0,
        current_leader_epoch=-1,
        leader_epoch=leader_epoch,
    )
    epoch_topic = build(request_class(23, version, "OffsetForLeaderTopic"), topic=topic, partitions=(part,))
    return build(request_class(23, version, "OffsetForLeaderEpochRequest"), replica_id=-1, topics=(epoch_topic,))


def api_versions(version: int) -> Any:
    return build(
        request_class(18, version, "ApiVersionsRequest"),
        client_software_name="test",
        client_software_version="1.0",
    )


def alter_partition_reassignments(
    version: int, moves: list[tuple[str, int, list[int] | None]], allow_replication_factor_change: bool = True
) -> Any:
    topic_class = request_class(45, version, "ReassignableTopic")
    partition_class = request_class(45, version, "ReassignablePartition")
    names = sorted({name for name, _, _ in moves})
    topics = tuple(
        build(
            topic_class,
            name=name,
            partitions=tuple(
                build(partition_class, partition_index=p, replicas=None if r is None else tuple(r))
                for n, p, r in moves
                if n == name
            ),
        )
        for name in names
    )
    return build(
        request_class(45, version, "AlterPartitionReassignmentsRequest"),
        timeout=millis(60000),
        topics=topics,
        allow_replication_factor_change=allow_replication_factor_change,
    )


def list_partition_reassignments(version: int, topics: dict[str, list[int]] | None) -> Any:
    topic_class = request_class(46, version, "ListPartitionReassignmentsTopics")
    named = (
        None
        if topics is None
        else tuple(build(topic_class, name=n, partition_indexes=tuple(p)) for n, p in topics.items())
    )
    return build(request_class(46, version, "ListPartitionReassignmentsRequest"), timeout=millis(60000), topics=named)
