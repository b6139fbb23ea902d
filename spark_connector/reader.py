"""The ``highwater`` stream reader (Structured Streaming) and batch reader.

Micro-batch contract: ``latestOffset(start, limit)`` reads each partition's high
watermark and plans ``[start, end)`` with ``end <= HW``, so Spark never reads a record
a leader failover could take back; the offsets live in Spark's checkpoint, so a
restarted query resumes at the last committed end, and a replayed batch reads the
same range (hence the same records) again.

Two reader objects exist: the driver's (``initialOffset``, ``latestOffset``,
``partitions``, ``commit``) and a pickled copy on each executor (``read``). Driver
state set here (``_available_now_end``, ``_leaders``, the last trigger and the last
commit to the lag group) is only a planning cache;
``read`` gets everything from its ``RangeTask``. No sockets are ever stored on a
reader: they would not pickle.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from broker.client.library_log import library_logger
from broker.client.types import TopicPartition
from broker.clock import monotonic_ms
from spark_connector.fetch import RangeTask, read_range
from spark_connector.metadata import ClusterMetadata, MetadataError
from spark_connector.offsets import (
    PartitionOffsets,
    delays_batch,
    from_json_dict,
    limit_end_offsets,
    to_json_dict,
)
from spark_connector.options import OptionError, SourceOptions
from spark_connector.planning import (
    TimestampLookup,
    check_data_loss,
    ending_offsets,
    leader_urls,
    plan_tasks,
    starting_offsets,
    subscribed_partitions,
)

log = library_logger(__name__)


def _at_time(metadata: ClusterMetadata) -> TimestampLookup:
    return lambda tp, timestamp_ms: metadata.offset_for_timestamp(tp.topic, tp.partition, timestamp_ms)


class HighwaterStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._available_now_end: PartitionOffsets | None = None
        self._latest_high_watermarks: PartitionOffsets = {}
        self._leaders: dict[TopicPartition, str] = {}
        self._cluster_id: str | None = None
        self._last_trigger_ms: int | None = None
        """When the last micro-batch was let through (``minOffsetsPerTrigger``, the monotonic clock: a
        duration); None: none yet this run."""
        self._committed: PartitionOffsets = {}
        """What was last committed to the lag group."""

    def _metadata(self) -> ClusterMetadata:
        return ClusterMetadata(
            self.options.servers, retry_for_s=self.options.poll_timeout_ms / 1000, security=self.options.security
        )

    def initialOffset(self) -> dict:
        with self._metadata() as metadata:
            states = subscribed_partitions(metadata, self.options)
            offsets = starting_offsets(self.options, states, _at_time(metadata))
        log.debug("source.initial_offset offsets=%s", to_json_dict(offsets))
        return to_json_dict(offsets)

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.options.max_records_per_trigger
        return ReadMaxRows(limit) if limit is not None else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """Snapshot the high watermarks once: this run drains up to them and then stops."""
        with self._metadata() as metadata:
            states = subscribed_partitions(metadata, self.options)
        committed = self.options.read_committed
        self._available_now_end = {tp: state.visible_end(committed) for tp, state in states.items()}
        log.debug("source.available_now end=%s", to_json_dict(self._available_now_end))

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        start_offsets = from_json_dict(start)
        with self._metadata() as metadata:
            states = subscribed_partitions(metadata, self.options)
            self._cluster_id = metadata.cluster_id
            self._leaders = leader_urls(metadata, states)
            self._commit_processed(metadata, start_offsets)
        kept = check_data_loss(self.options, start_offsets, states)
        latest = {tp: state.visible_end(self.options.read_committed) for tp, state in states.items()}
        self._latest_high_watermarks = latest
        if self._available_now_end is not None:
            snapshot = self._available_now_end
            latest = {
                tp: min(hw, snapshot.get(tp, kept.get(tp, hw)))
                for tp, hw in latest.items()
                if tp in snapshot or tp in kept
            }
        effective_start = {tp: kept.get(tp, states[tp].log_start_offset) for tp in latest}
        if self._waits_for_more(effective_start, latest):
            return start
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        end = limit_end_offsets(effective_start, latest, max_rows)
        return to_json_dict(end)

    def _waits_for_more(self, start: PartitionOffsets, latest: PartitionOffsets) -> bool:
        """``minOffsetsPerTrigger``: no batch yet (the same offset as ``start``) while fewer rows are
        available and ``maxTriggerDelay`` has not passed. An ``availableNow`` run drains to its
        snapshot without waiting, as a run that must end cannot wait for records."""
        minimum = self.options.min_records_per_trigger
        if minimum is None or self._available_now_end is not None:
            return False
        now_ms = monotonic_ms()
        if delays_batch(
            minimum,
            start,
            latest,
            now_ms=now_ms,
            last_trigger_ms=self._last_trigger_ms,
            max_trigger_delay_ms=self.options.max_trigger_delay_ms,
        ):
            return True
        self._last_trigger_ms = now_ms
        return False

    def _commit_processed(self, metadata: ClusterMetadata, processed: PartitionOffsets) -> None:
        """Commit what the query has processed to its lag group (``SourceOptions.lag_group``).

        Spark plans a batch only once the previous one is done, so the ``start`` of every
        planning is processed; committing it here rather than in ``commit`` (which Spark calls
        for batch N only while planning N+1) also covers an ``availableNow`` run's last batch,
        which Spark plans past once before it stops. The checkpoint stays the truth: a commit
        that fails is logged and made again at the next planning.
        """
        group = self.options.lag_group
        if group is None or not processed or processed == self._committed:
            return
        try:
            metadata.commit_offsets(group, {(tp.topic, tp.partition): offset for tp, offset in processed.items()})
        except (ConnectionError, MetadataError) as error:
            log.warning("source.lag_commit_failed group=%s error=%s", group, error)
            return
        self._committed = dict(processed)
        log.debug("source.lag_committed group=%s offsets=%s", group, to_json_dict(processed))

    def reportLatestOffset(self) -> dict | None:
        """The high watermarks seen at the last planning, for lag in the query's progress."""
        return to_json_dict(self._latest_high_watermarks) if self._latest_high_watermarks else None

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        start_offsets = from_json_dict(start)
        end_offsets = from_json_dict(end)
        new_partitions = sorted(set(end_offsets) - set(start_offsets))
        new_starts: PartitionOffsets = {}
        if new_partitions or self._cluster_id is None:
            with self._metadata() as metadata:
                self._cluster_id = metadata.cluster_id
                states = subscribed_partitions(metadata, self.options)
                new_starts = {tp: states[tp].log_start_offset for tp in new_partitions if tp in states}
        tasks = plan_tasks(self.options, self._cluster_id, start_offsets, end_offsets, self._leaders, new_starts)
        log.debug("source.planned tasks=%d records=%d", len(tasks), sum(t.end_offset - t.start_offset for t in tasks))
        return tasks

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, RangeTask)
        return read_range(partition)

    def commit(self, end: dict) -> None:
        """Nothing to do: the checkpoint, not the broker, holds the query's offsets."""
        log.debug("source.commit end=%s", end)


class HighwaterBatchReader(DataSourceReader):
    """``spark.read``: ``[startingOffsets, endingOffsets)`` per partition, ``latest`` = high watermark."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        with ClusterMetadata(self.options.servers, security=self.options.security) as metadata:
            states = subscribed_partitions(metadata, self.options)
            committed = self.options.read_committed
            start = starting_offsets(self.options, states, _at_time(metadata))
            end = ending_offsets(self.options, states, _at_time(metadata))
            start = check_data_loss(self.options, start, states)
            for tp, state in states.items():
                start[tp] = max(start[tp], state.log_start_offset)
                end[tp] = min(end[tp], state.visible_end(committed))
                if start[tp] > end[tp]:
                    raise OptionError(
                        f"option 'startingOffsets': offset {start[tp]} of {tp.topic}-{tp.partition} "
                        f"is after its ending offset {end[tp]}"
                    )
            tasks = plan_tasks(self.options, metadata.cluster_id, start, end, leader_urls(metadata, states), {})
        return tasks or [RangeTask("", "", 0, 0, 0, self.options.servers, security=self.options.security)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, RangeTask)
        return read_range(partition)
