"""Regression: a deposed leader that never appended in its epoch must forget that epoch
when the new leader's diverging-epoch answer makes it truncate at its log end.

Found by the multi-broker failover tests: the follower kept its stale epoch entry
(start offset = log end), fetched with it as ``last_fetched_epoch``, was told to
truncate to its log end again, and looped without ever replicating.
"""

from pathlib import Path

from broker.storage.epoch_cache import EpochEntry
from tests.unit.storage.helpers import make_batch, open_log


def test_truncate_at_the_log_end_forgets_epochs_starting_there(log_dir: Path) -> None:
    log = open_log(log_dir)
    log.append_as_leader(make_batch(4), 1, 0)
    log.assign_epoch(2, log.log_end_offset)  # became leader at epoch 2, appended nothing
    log.truncate_to(log.log_end_offset)
    assert log.log_end_offset == 4
    assert log.epoch_cache.entries == [EpochEntry(1, 0)]
    assert open_log(log_dir).epoch_cache.entries == [EpochEntry(1, 0)]
