"""When the leader-epoch checkpoint reaches the disk.

An epoch assigned at the log end (a new leader's, or a follower's from the batches it
appends) waits for the next flush, which writes the checkpoint before the recovery point
passes any batch of it (KAFKA-15046); a truncation of the epochs writes it at once. A
log this process created is not durable until its first flush, so everything about it
waits for that flush. Either way a reopened log knows every epoch of the batches it holds.
"""

from pathlib import Path

from broker.record.header import stamp
from broker.storage.checkpoint import LeaderEpochCheckpointFile
from broker.storage.epoch_cache import EpochEntry
from broker.storage.log import LEADER_EPOCH_CHECKPOINT_FILE, PartitionLog
from tests.unit.storage.helpers import make_batch, open_log


def _checkpointed(log_dir: Path) -> list[EpochEntry]:
    return LeaderEpochCheckpointFile(log_dir / LEADER_EPOCH_CHECKPOINT_FILE).read()


def _flushed_in_epoch_1(log_dir: Path) -> PartitionLog:
    """A log holding two records of epoch 1, flushed: its checkpoint is [epoch 1 at 0]."""
    log = open_log(log_dir)
    log.assign_epoch(1, 0)
    log.append_as_leader(make_batch(2), 1, 0)
    log.flush()
    return log


def test_a_new_log_writes_its_first_epochs_with_its_first_flush(log_dir: Path) -> None:
    log = open_log(log_dir)
    log.assign_epoch(3, 0)
    assert _checkpointed(log_dir) == []
    log.flush()
    assert _checkpointed(log_dir) == [EpochEntry(3, 0)]


def test_a_flushed_log_writes_an_assigned_epoch_with_its_next_flush(log_dir: Path) -> None:
    log = _flushed_in_epoch_1(log_dir)
    assert _checkpointed(log_dir) == [EpochEntry(1, 0)]
    log.assign_epoch(2, 2)
    assert _checkpointed(log_dir) == [EpochEntry(1, 0)], "a new leader's assignment costs no fsync"
    log.flush()
    assert _checkpointed(log_dir) == [EpochEntry(1, 0), EpochEntry(2, 2)]


def test_a_follower_writes_the_epochs_of_the_batches_it_appends_with_its_next_flush(log_dir: Path) -> None:
    log = _flushed_in_epoch_1(log_dir)
    batch = bytearray(make_batch(2))
    stamp(batch, 0, 2, 3)
    log.append_as_follower(bytes(batch))
    assert _checkpointed(log_dir) == [EpochEntry(1, 0)]
    log.flush()
    assert _checkpointed(log_dir) == [EpochEntry(1, 0), EpochEntry(3, 2)]


def test_a_crash_before_the_flush_keeps_every_epoch_a_batch_holds(log_dir: Path) -> None:
    log = _flushed_in_epoch_1(log_dir)
    log.assign_epoch(2, 2)
    log.append_as_leader(make_batch(1), 2, 0)
    log.assign_epoch(5, 3)
    assert _checkpointed(log_dir) == [EpochEntry(1, 0)]
    reopened = open_log(log_dir)
    assert reopened.epoch_cache.entries == [EpochEntry(1, 0), EpochEntry(2, 2)], (
        "epoch 2 comes back from its batch; epoch 5, which no batch holds, is gone as it never reached a follower"
    )


def test_a_truncation_writes_the_checkpoint_at_once(log_dir: Path) -> None:
    log = open_log(log_dir)
    log.assign_epoch(1, 0)
    log.append_as_leader(make_batch(2), 1, 0)
    log.assign_epoch(2, 2)
    log.append_as_leader(make_batch(2), 2, 0)
    log.flush()
    log.truncate_to(2)
    assert _checkpointed(log_dir) == [EpochEntry(1, 0)]


def test_a_new_log_reopened_before_any_flush_rebuilds_its_epochs_from_the_batches(log_dir: Path) -> None:
    log = open_log(log_dir)
    log.assign_epoch(1, 0)
    log.append_as_leader(make_batch(2), 1, 0)
    log.assign_epoch(4, 2)
    log.append_as_leader(make_batch(1), 4, 0)
    assert _checkpointed(log_dir) == []
    assert open_log(log_dir).epoch_cache.entries == [EpochEntry(1, 0), EpochEntry(4, 2)]


def test_closing_a_new_log_writes_the_epochs_it_was_assigned(log_dir: Path) -> None:
    log = open_log(log_dir)
    log.assign_epoch(5, 0)
    log.close()
    assert _checkpointed(log_dir) == [EpochEntry(5, 0)]
