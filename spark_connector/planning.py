"""Driver-side planning shared by the stream and batch readers.

Turns the subscription (``subscribe``, ``subscribePattern``, ``assign``) into the
partitions that exist now, resolves ``earliest``/``latest`` against their offsets,
applies the data-loss rules, and cuts planned ranges into ``RangeTask``s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from broker.client.library_log import library_logger
from broker.client.types import TopicPartition
from spark_connector.fetch import DataLossError, RangeTask
from spark_connector.metadata import ClusterMetadata, PartitionState
from spark_connector.offsets import PartitionOffsets, split_range, spread_ranges
from spark_connector.options import EARLIEST, LATEST, OffsetSpec, OptionError, SourceOptions, TimestampSpec

log = library_logger(__name__)

TimestampLookup = Callable[[TopicPartition, int], int | None]
"""The first offset of a partition at or after a timestamp (``ClusterMetadata.offset_for_timestamp``)."""


def subscribed_partitions(metadata: ClusterMetadata, options: SourceOptions) -> dict[TopicPartition, PartitionState]:
    """The partitions of the subscription that exist now (topics created later appear later)."""
    if options.subscribe_pattern is not None:
        topics = [topic for topic in metadata.topic_names() if options.matches(topic)]
    elif options.subscribe:
        topics = list(options.subscribe)
    else:
        topics = sorted({tp.topic for tp in options.assign})
    states: dict[TopicPartition, PartitionState] = {}
    for topic in topics:
        for state in metadata.partitions(topic) or []:
            topic_partition = TopicPartition(topic, state.partition)
            if not options.assign or topic_partition in options.assign:
                states[topic_partition] = state
    return states


def resolve_offsets(
    spec: OffsetSpec, states: Mapping[TopicPartition, PartitionState], read_committed: bool = False
) -> PartitionOffsets:
    """``earliest`` = log start offset, ``latest`` = high watermark (last stable offset for
    ``read_committed``), else the offset given."""
    resolved: PartitionOffsets = {}
    for topic_partition, state in states.items():
        wanted = spec.offset_for(topic_partition)
        if wanted == EARLIEST:
            resolved[topic_partition] = state.log_start_offset
        elif wanted == LATEST:
            resolved[topic_partition] = state.visible_end(read_committed)
        else:
            resolved[topic_partition] = wanted
    return resolved


def starting_offsets(
    options: SourceOptions, states: Mapping[TopicPartition, PartitionState], at_time: TimestampLookup
) -> PartitionOffsets:
    """Where a new query or a batch read starts: by time when a starting timestamp is given (Spark's
    precedence), else ``startingOffsets``. A timestamp after every record is an error, or the end with
    ``startingOffsetsByTimestampStrategy=latest``."""
    spec = options.starting_timestamps
    if spec is None:
        return resolve_offsets(options.starting_offsets, states, options.read_committed)
    resolved: PartitionOffsets = {}
    for topic_partition, state in sorted(states.items()):
        offset = _offset_at(spec, topic_partition, state, at_time, options.read_committed, "startingOffsetsByTimestamp")
        if offset is None:
            if not options.past_the_end_latest:
                raise OptionError(
                    f"no record of {topic_partition.topic}-{topic_partition.partition} has a timestamp at or after "
                    f"{spec.timestamp_for(topic_partition)}; set startingOffsetsByTimestampStrategy=latest to start "
                    "at the end instead"
                )
            offset = state.visible_end(options.read_committed)
        resolved[topic_partition] = offset
    return resolved


def ending_offsets(
    options: SourceOptions, states: Mapping[TopicPartition, PartitionState], at_time: TimestampLookup
) -> PartitionOffsets:
    """Where a batch read ends: by time when an ending timestamp is given (the end itself where no record
    is that late, as Spark's), else ``endingOffsets``."""
    spec = options.ending_timestamps
    if spec is None:
        return resolve_offsets(options.ending_offsets, states, options.read_committed)
    return {
        topic_partition: state.visible_end(options.read_committed)
        if (
            offset := _offset_at(
                spec, topic_partition, state, at_time, options.read_committed, "endingOffsetsByTimestamp"
            )
        )
        is None
        else offset
        for topic_partition, state in states.items()
    }


def _offset_at(
    spec: TimestampSpec,
    topic_partition: TopicPartition,
    state: PartitionState,
    at_time: TimestampLookup,
    read_committed: bool,
    option: str,
) -> int | None:
    """The first visible offset at or after the partition's timestamp; every partition must have one."""
    timestamp = spec.timestamp_for(topic_partition)
    if timestamp is None:
        raise OptionError(
            f"option {option!r} gives no timestamp for {topic_partition.topic}-{topic_partition.partition}: "
            "name every partition of the subscription"
        )
    offset = at_time(topic_partition, timestamp)
    return None if offset is None else min(offset, state.visible_end(read_committed))


def report_data_loss(options: SourceOptions, message: str, **details: object) -> None:
    """Fail with ``message`` when ``failOnDataLoss`` is set, else log it and carry on."""
    if options.fail_on_data_loss:
        raise DataLossError(message + "; set failOnDataLoss=false to skip ahead instead")
    log.warning("source.data_loss_skipped reason=%s details=%s", message, details)


def check_data_loss(
    options: SourceOptions, start: Mapping[TopicPartition, int], states: Mapping[TopicPartition, PartitionState]
) -> PartitionOffsets:
    """``start`` without vanished partitions; fails (or logs) for vanished or retention-deleted offsets."""
    kept: PartitionOffsets = {}
    for topic_partition, offset in sorted(start.items()):
        state = states.get(topic_partition)
        if state is None:
            report_data_loss(
                options,
                f"partition {topic_partition.topic}-{topic_partition.partition} no longer exists",
                topic=topic_partition.topic,
                partition=topic_partition.partition,
            )
            continue
        if offset < state.log_start_offset:
            report_data_loss(
                options,
                f"data loss in {topic_partition.topic}-{topic_partition.partition}: the query's next offset "
                f"{offset} is below the log start offset {state.log_start_offset} (retention deleted "
                f"{state.log_start_offset - offset} records)",
                topic=topic_partition.topic,
                partition=topic_partition.partition,
                offset=offset,
                log_start_offset=state.log_start_offset,
            )
        kept[topic_partition] = offset
    return kept


def leader_urls(
    metadata: ClusterMetadata, states: Mapping[TopicPartition, PartitionState]
) -> dict[TopicPartition, str]:
    """Each partition's leader URL where known: the first server its read task tries."""
    urls = metadata.broker_urls()
    return {
        tp: urls[state.leader_id]
        for tp, state in states.items()
        if state.leader_id is not None and state.leader_id in urls
    }


def plan_tasks(
    options: SourceOptions,
    cluster_id: str,
    start: Mapping[TopicPartition, int],
    end: Mapping[TopicPartition, int],
    leaders: Mapping[TopicPartition, str],
    new_partition_starts: Mapping[TopicPartition, int],
) -> list[RangeTask]:
    """Input partitions covering ``[start, end)`` of every partition: ranges over ``maxRecordsPerPartition``
    split, then more pieces while fewer than ``minPartitions`` (``spread_ranges``).

    A partition absent from ``start`` is new: it is read from ``new_partition_starts``
    (its log start offset at planning time) and marked ``from_earliest``.
    """
    pieces: list[tuple[TopicPartition, int, int]] = []
    for topic_partition in sorted(end):
        first_offset = (
            new_partition_starts.get(topic_partition, 0) if topic_partition not in start else start[topic_partition]
        )
        pieces += [
            (topic_partition, piece_start, piece_end)
            for piece_start, piece_end in split_range(
                first_offset, end[topic_partition], options.max_records_per_partition
            )
        ]
    tasks: list[RangeTask] = []
    for topic_partition, piece_start, piece_end in spread_ranges(pieces, options.min_partitions):
        leader = leaders.get(topic_partition)
        tasks.append(
            RangeTask(
                cluster_id=cluster_id,
                topic=topic_partition.topic,
                partition=topic_partition.partition,
                start_offset=piece_start,
                end_offset=piece_end,
                servers=tuple(dict.fromkeys(([leader] if leader else []) + list(options.servers))),
                include_headers=options.include_headers,
                fail_on_data_loss=options.fail_on_data_loss,
                from_earliest=topic_partition not in start,
                poll_timeout_ms=options.poll_timeout_ms,
                fetch_max_bytes=options.fetch_max_bytes,
                read_committed=options.read_committed,
                security=options.security,
            )
        )
    return tasks
