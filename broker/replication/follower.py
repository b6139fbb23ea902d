"""The follower's view of one partition: what to fetch, how to apply the answer.

Kafka's ``AbstractFetcherThread`` / ``ReplicaFetcherThread`` (core/src/main/scala/kafka/
server/): ``buildFetch``, ``processPartitionData``, ``truncateOnFetchResponse`` /
``getOffsetTruncationState`` (KIP-101, KIP-279, KIP-595 truncation on fetch) and
``handleOutOfRangeError`` / ``fetchOffsetAndTruncate``.

Rules:

- the fetch offset is the follower's own LEO; ``last_fetched_epoch`` is the latest
  epoch in its own epoch cache; ``current_leader_epoch`` fences stale leaders/followers;
- follower HW = min(leader HW from the response, own LEO after the append), clamped
  to >= log start offset (Kafka ``UnifiedLog.updateHighWatermark``). Like Kafka, it
  may go down when a new leader's HW lags the old one's: only a leader's HW is
  monotonic;
- the follower never truncates to its own HW (that lost data before KIP-101). On a
  diverging epoch ``(epoch, end_offset)`` from the leader it truncates to
  min(end_offset, its own end offset for that epoch, own LEO); if its own cache has no
  such epoch it truncates to the end of its largest epoch below it and fetches again,
  which repeats until the logs agree;
- OFFSET_OUT_OF_RANGE: own LEO above the leader's LEO -> truncate to the leader's
  LEO (the leader only says so when epoch validation could not, i.e. the follower
  sent no epoch); own LEO below the leader's log start -> delete everything and start
  at the leader's log start; otherwise fetch again from own LEO.

Pure: the log, its epoch cache and its offsets belong to storage; each call receives
them as a ``LocalLogView`` and returns ordered actions for the driver. Owned by the
single task that owns the partition on this broker.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from broker.errors import CorruptRecord, HighwaterError, OffsetOutOfRange
from broker.record.header import iter_batches
from broker.replication.actions import (
    AppendRecords,
    AwaitLeaderChange,
    DivergingEpoch,
    FollowerAction,
    RetryAfterBackoff,
    TruncateFullyAndStartAt,
    TruncateTo,
    UpdateFollowerOffsets,
)
from broker.storage.epoch_cache import UNDEFINED_EPOCH, LeaderEpochCache

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class LocalLogView:
    """The replica's own log as storage reports it right now.

    ``recovery_point``: everything below it is fsynced (``PartitionLog.recovery_point``).
    """

    log_start_offset: int
    log_end_offset: int
    epoch_cache: LeaderEpochCache
    recovery_point: int


@dataclass(frozen=True, slots=True)
class FetchRequestFields:
    """One partition of a follower's fetch to its leader."""

    replica_id: int
    fetch_offset: int
    last_fetched_epoch: int
    current_leader_epoch: int
    log_start_offset: int


@dataclass(frozen=True, slots=True)
class PartitionFetchResponse:
    """One partition of the leader's answer, as decoded by the driver.

    ``records_last_offset`` is the last offset of the batches carried (``None`` when
    there are none), read from the last batch header without parsing records.
    """

    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    error: HighwaterError | None = None
    diverging_epoch: DivergingEpoch | None = None
    records_last_offset: int | None = None


def fetched_last_offset(records: bytes) -> int | None:
    """The last offset of the fetched batches, from the last batch header (records are not parsed)."""
    last = None
    for header in iter_batches(records, check_crc=False):
        last = header.last_offset
    return last


class FollowerState:
    """Replication state of a partition this broker follows, for one leader epoch."""

    def __init__(
        self,
        *,
        topic: str,
        partition: int,
        local_broker_id: int,
        leader_id: int,
        leader_epoch: int,
        high_watermark: int,
    ) -> None:
        """Become follower. Nothing is truncated here: the first fetch's epoch check decides."""
        self.topic = topic
        self.partition = partition
        self.local_broker_id = local_broker_id
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch
        self._high_watermark = high_watermark

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    def on_log_truncated(self, log_end_offset: int) -> None:
        """The log cuts whole batches, so it may end below the offset asked for: keep HW <= LEO."""
        self._high_watermark = min(self._high_watermark, log_end_offset)

    def fetch_request(self, local: LocalLogView) -> FetchRequestFields:
        """What to ask the leader for: from own LEO, naming own latest epoch."""
        return FetchRequestFields(
            replica_id=self.local_broker_id,
            fetch_offset=local.log_end_offset,
            last_fetched_epoch=local.epoch_cache.latest_epoch,
            current_leader_epoch=self.leader_epoch,
            log_start_offset=local.log_start_offset,
        )

    def on_fetch_response(self, response: PartitionFetchResponse, local: LocalLogView) -> list[FollowerAction]:
        """Turn one partition of a fetch response into ordered actions for the driver."""
        if response.error is not None:
            return self._on_error(response.error, response, local)
        if response.diverging_epoch is not None:
            return [self.on_diverging_epoch(response.diverging_epoch, local)]
        actions: list[FollowerAction] = []
        new_log_end_offset = local.log_end_offset
        if response.records_last_offset is not None:
            if response.records_last_offset < local.log_end_offset:
                return [
                    RetryAfterBackoff(
                        CorruptRecord(
                            f"{self.topic}-{self.partition}: fetched records end at "
                            f"{response.records_last_offset}, before the local log end offset "
                            f"{local.log_end_offset}; nothing appended"
                        )
                    )
                ]
            actions.append(AppendRecords(local.log_end_offset, response.records_last_offset))
            new_log_end_offset = response.records_last_offset + 1
        offsets = self._learn_leader_offsets(response, local, new_log_end_offset)
        if offsets is not None:
            actions.append(offsets)
        return actions

    def _learn_leader_offsets(
        self,
        response: PartitionFetchResponse,
        local: LocalLogView,
        new_log_end_offset: int,
    ) -> UpdateFollowerOffsets | None:
        """Follower HW = min(leader HW, own LEO), >= log start; log start follows the leader's.

        The log start offset only moves forward and never past the new HW, keeping
        ``log_start_offset <= high_watermark <= log_end_offset``.
        """
        new_high_watermark = min(response.high_watermark, new_log_end_offset)
        new_log_start_offset = max(local.log_start_offset, min(response.log_start_offset, new_high_watermark))
        new_high_watermark = max(new_high_watermark, new_log_start_offset)
        if new_high_watermark == self._high_watermark and new_log_start_offset == local.log_start_offset:
            return None
        self._high_watermark = new_high_watermark
        return UpdateFollowerOffsets(new_high_watermark, new_log_start_offset)

    def on_diverging_epoch(self, diverging: DivergingEpoch, local: LocalLogView) -> FollowerAction:
        """Where to cut the log after the leader reported a diverging epoch.

        Kafka ``getOffsetTruncationState``: look the leader's epoch up in our cache.
        Same epoch -> min(leader's end offset, ours); we lack that epoch -> the end of
        our largest epoch below it (another round will follow); our cache is empty
        -> the leader's end offset. Never past our own LEO, never to our HW.
        """
        follower_epoch, follower_end_offset = local.epoch_cache.end_offset_for(diverging.epoch, local.log_end_offset)
        if follower_epoch == UNDEFINED_EPOCH:
            offset = diverging.end_offset
        elif follower_epoch != diverging.epoch:
            offset = follower_end_offset
        else:
            offset = min(follower_end_offset, diverging.end_offset)
        return self._truncate(min(offset, local.log_end_offset), local, reason="diverging_epoch")

    def on_offset_out_of_range(
        self,
        leader_log_start_offset: int,
        leader_log_end_offset: int,
        local: LocalLogView,
    ) -> list[FollowerAction]:
        """Kafka ``fetchOffsetAndTruncate`` with the leader's offsets from the response."""
        if leader_log_end_offset < local.log_end_offset:
            return [self._truncate(leader_log_end_offset, local, reason="above_leader_end")]
        if leader_log_start_offset > local.log_end_offset:
            return [self._restart_at(leader_log_start_offset)]
        return []

    def _on_error(
        self,
        error: HighwaterError,
        response: PartitionFetchResponse,
        local: LocalLogView,
    ) -> list[FollowerAction]:
        """Out of range: re-position. Retriable (UNKNOWN_LEADER_EPOCH, NOT_LEADER): back off.
        Anything else, FENCED_LEADER_EPOCH included: wait for new metadata (Kafka
        removes a fenced partition from its fetcher until the next leader change)."""
        if isinstance(error, OffsetOutOfRange):
            return self.on_offset_out_of_range(response.log_start_offset, response.log_end_offset, local)
        if error.retriable:
            return [RetryAfterBackoff(error)]
        return [AwaitLeaderChange(error)]

    def _truncate(self, offset: int, local: LocalLogView, *, reason: str) -> FollowerAction:
        """Cut at ``offset``; below the log start that means starting over there (Kafka)."""
        if offset < local.log_start_offset:
            return self._restart_at(offset)
        if offset < self._high_watermark:
            log.warning(
                "follower_truncating_below_high_watermark",
                topic=self.topic,
                partition=self.partition,
                reason=reason,
                truncation_offset=offset,
                high_watermark=self._high_watermark,
                leader_epoch=self.leader_epoch,
            )
        else:
            log.info(
                "follower_truncating",
                topic=self.topic,
                partition=self.partition,
                reason=reason,
                truncation_offset=offset,
                log_end_offset=local.log_end_offset,
                leader_epoch=self.leader_epoch,
            )
        self._high_watermark = min(self._high_watermark, offset)
        return TruncateTo(offset, self._high_watermark)

    def _restart_at(self, offset: int) -> TruncateFullyAndStartAt:
        log.info(
            "follower_truncating_fully",
            topic=self.topic,
            partition=self.partition,
            new_log_start_offset=offset,
            leader_epoch=self.leader_epoch,
        )
        self._high_watermark = offset
        return TruncateFullyAndStartAt(offset)
