"""When the leader-epoch checkpoint reaches the disk.

A log this process created is not durable until its first flush (its directory entry is
fsynced then), so an epoch assigned before that waits for that flush instead of costing
two fsyncs at once; a log that has been flushed writes its checkpoint at every change.
Either way a reopened log knows every epoch of the batches it holds.
"""

from pathlib import Path

from broker.storage.checkpoint import LeaderEpochCheckpointFile
from broker.storage.epoch_cache import EpochEntry
from broker.storage.log import LEADER_EPOCH_CHECKPOINT_FILE
from tests.unit.storage.helpers import make_batch, open_log


def _checkpointed(log_dir: Path) -> list[EpochEntry]:
    return LeaderEpochCheckpointFile(log_dir / LEADER_EPOCH_CHECKPOINT_FILE).read()


def test_a_new_log_writes_its_first_epochs_with_its_first_flush(log_dir: Path) -> None:
    log = open_log(log_dir)
    log.assign_epoch(3, 0)
    assert _checkpointed(log_dir) == []
    log.flush()
    assert _checkpointed(log_dir) == [EpochEntry(3, 0)]


def test_a_flushed_log_writes_its_checkpoint_at_the_assignment(log_dir: Path) -> None:
    log = open_log(log_dir)
    log.append_as_leader(make_batch(2), 1, 0)
    log.flush()
    log.assign_epoch(2, 2)
    assert _checkpointed(log_dir) == [EpochEntry(1, 0), EpochEntry(2, 2)]


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
