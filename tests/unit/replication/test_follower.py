"""The follower side (AbstractFetcherThread / ReplicaFetcherThread)."""

from broker.errors import CorruptRecord, FencedLeaderEpoch, OffsetOutOfRange, UnknownLeaderEpoch
from broker.replication import (
    AppendRecords,
    AwaitLeaderChange,
    DivergingEpoch,
    FetchRequestFields,
    FollowerState,
    LocalLogView,
    PartitionFetchResponse,
    RetryAfterBackoff,
    TruncateFullyAndStartAt,
    TruncateTo,
    UpdateFollowerOffsets,
)
from broker.storage.epoch_cache import EpochEntry, LeaderEpochCache


def make_follower(high_watermark: int = 0) -> FollowerState:
    return FollowerState(
        topic="orders",
        partition=0,
        local_broker_id=2,
        leader_id=1,
        leader_epoch=4,
        high_watermark=high_watermark,
    )


def local_log(start: int, end: int, *entries: tuple[int, int]) -> LocalLogView:
    cache = LeaderEpochCache([EpochEntry(epoch, offset) for epoch, offset in entries])
    return LocalLogView(log_start_offset=start, log_end_offset=end, epoch_cache=cache, recovery_point=end)


def test_fetch_request_starts_at_own_log_end_and_names_own_latest_epoch():
    """fetch_offset = own LEO (never the HW); last_fetched_epoch = latest cached epoch."""
    follower = make_follower(high_watermark=3)
    request = follower.fetch_request(local_log(0, 9, (1, 0), (3, 6)))
    assert request == FetchRequestFields(
        replica_id=2,
        fetch_offset=9,
        last_fetched_epoch=3,
        current_leader_epoch=4,
        log_start_offset=0,
    )


def test_follower_high_watermark_is_the_leader_hw_capped_by_own_log_end():
    """Follower HW = min(leader HW, own LEO after the append)."""
    follower = make_follower()
    response = PartitionFetchResponse(high_watermark=50, log_start_offset=0, log_end_offset=60, records_last_offset=19)
    actions = follower.on_fetch_response(response, local_log(0, 10, (4, 0)))
    assert actions == [AppendRecords(10, 19), UpdateFollowerOffsets(20, 0)]
    assert follower.high_watermark == 20
    actions = follower.on_fetch_response(
        PartitionFetchResponse(high_watermark=15, log_start_offset=0, log_end_offset=60),
        local_log(0, 20, (4, 0)),
    )
    assert actions == [UpdateFollowerOffsets(15, 0)]


def test_follower_high_watermark_clamped_to_log_start_and_log_start_follows_leader():
    """HW >= log start offset; the log start moves forward with the leader's, never past HW."""
    follower = make_follower()
    actions = follower.on_fetch_response(
        PartitionFetchResponse(high_watermark=3, log_start_offset=8, log_end_offset=40),
        local_log(12, 30, (4, 0)),
    )
    assert actions == [UpdateFollowerOffsets(12, 12)]
    follower = make_follower(high_watermark=25)
    actions = follower.on_fetch_response(
        PartitionFetchResponse(high_watermark=40, log_start_offset=20, log_end_offset=40),
        local_log(12, 30, (4, 0)),
    )
    assert actions == [UpdateFollowerOffsets(30, 20)]


def test_nothing_to_report_when_nothing_changed():
    follower = make_follower(high_watermark=10)
    response = PartitionFetchResponse(high_watermark=10, log_start_offset=0, log_end_offset=10)
    assert follower.on_fetch_response(response, local_log(0, 10, (4, 0))) == []


def test_out_of_range_below_leader_log_start_truncates_fully():
    """Scenario 17: own LEO < leader log start -> delete all, start at the leader's log start."""
    follower = make_follower(high_watermark=5)
    response = PartitionFetchResponse(
        high_watermark=900,
        log_start_offset=500,
        log_end_offset=1_000,
        error=OffsetOutOfRange("out of range"),
    )
    assert follower.on_fetch_response(response, local_log(0, 40, (4, 0))) == [TruncateFullyAndStartAt(500)]
    assert follower.high_watermark == 500


def test_out_of_range_above_leader_log_end_truncates_to_it():
    """Own LEO above the leader's LEO (no epoch to validate with) -> truncate to the leader LEO."""
    follower = make_follower(high_watermark=5)
    assert follower.on_offset_out_of_range(0, 30, local_log(0, 45)) == [TruncateTo(30, 5)]
    assert follower.on_offset_out_of_range(0, 45, local_log(0, 45)) == []


def test_fencing_errors_back_off_or_wait_for_new_metadata():
    """UNKNOWN_LEADER_EPOCH is retriable; FENCED_LEADER_EPOCH waits for a leader change."""
    follower = make_follower()
    local = local_log(0, 10, (4, 0))
    unknown = UnknownLeaderEpoch("newer")
    fenced = FencedLeaderEpoch("older")
    response = PartitionFetchResponse(0, 0, 10, error=unknown)
    assert follower.on_fetch_response(response, local) == [RetryAfterBackoff(unknown)]
    response = PartitionFetchResponse(0, 0, 10, error=fenced)
    assert follower.on_fetch_response(response, local) == [AwaitLeaderChange(fenced)]


def test_a_truncation_that_cuts_a_whole_batch_lower_keeps_the_hw_at_or_below_the_log_end():
    """The log cuts whole batches, so it can end below the requested offset; HW <= LEO still holds."""
    follower = make_follower(high_watermark=8)
    action = follower.on_diverging_epoch(DivergingEpoch(3, 7), local_log(0, 9, (1, 0), (3, 6)))
    assert action == TruncateTo(7, 7)
    follower.on_log_truncated(log_end_offset=6)
    assert follower.high_watermark == 6


def test_records_ending_below_the_own_log_end_append_nothing_and_back_off():
    """A leader's answer cannot hold records below the fetch offset; if one does, the
    follower appends nothing and fetches again after the back-off (the fetch loop goes on)."""
    follower = make_follower()
    response = PartitionFetchResponse(high_watermark=0, log_start_offset=0, log_end_offset=9, records_last_offset=3)
    [action] = follower.on_fetch_response(response, local_log(0, 5, (1, 0)))
    assert isinstance(action, RetryAfterBackoff)
    assert isinstance(action.error, CorruptRecord) and "before the local log end offset 5" in action.error.message
