"""A negative committed offset (kafkajs's ``resetOffsets`` commits ``-2`` or ``-1``): stored, but no position.

Kafka stores it and OffsetFetch answers it; its consumers and tools read it as no
committed offset. So ``GroupState`` keeps it in ``offsets`` and leaves it out of
``position``/``positions``, and it makes no lag-window sample.
"""

from __future__ import annotations

from broker.groups.offsets_records import OffsetKey, OffsetValue
from broker.groups.shard import OffsetsShard
from tests.unit.storage.transaction_batches import NOW_MS

GROUP = "reset"
TP = ("orders", 0)
OTHER = ("orders", 1)


def commit(shard: OffsetsShard, record_offset: int, tp: tuple[str, int], offset: int) -> None:
    shard.apply_record(record_offset, OffsetKey(GROUP, *tp).encode(), OffsetValue(offset, "", NOW_MS).encode())


def test_a_negative_commit_is_stored_but_is_no_position() -> None:
    shard = OffsetsShard(0, 1)
    commit(shard, 10, TP, 14)
    commit(shard, 11, OTHER, 3)
    state = shard.groups[GROUP]
    assert state.position(TP) is not None and len(state.windows[TP]) == 1
    commit(shard, 12, TP, -2)
    assert state.offsets[TP].offset == -2, "what OffsetFetch answers, as Kafka's does"
    assert state.position(TP) is None
    assert list(state.positions()) == [OTHER]
    assert TP not in state.windows, "the samples before the reset say nothing of the position after it"
    commit(shard, 13, TP, 0)
    position = state.position(TP)
    assert position is not None and position.offset == 0 and len(state.windows[TP]) == 1


def test_latest_reset_is_no_position_either() -> None:
    shard = OffsetsShard(0, 1)
    commit(shard, 10, TP, -1)
    state = shard.groups[GROUP]
    assert state.position(TP) is None and state.positions() == {} and TP not in state.windows
