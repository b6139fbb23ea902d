"""Seeded runs of a transactional log through rolls, truncations, clean and crashed reopens.

After every step, the aborted transactions a ``read_committed`` read is told about, for
random ranges, must be exactly those a replay of the whole log from its first batch finds
overlapping the range; and no rolled segment may hold its aborted transactions in memory.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from broker.record.control import decode_marker
from broker.record.header import iter_batches
from broker.storage.log import PartitionLog
from broker.storage.log_config import LogConfig
from broker.storage.transactions import AbortedTransaction, PartitionTransactions
from tests.unit.storage.helpers import open_log, whole_log
from tests.unit.storage.transaction_batches import NOW_MS, data_batch, marker_batch

PRODUCERS = (1001, 1002, 1003, 1004)
EPOCH = 1


def replayed_aborts(log: PartitionLog) -> list[AbortedTransaction]:
    """The oracle: every batch from the log's start through a fresh state, the aborts it hands out."""
    data = whole_log(log)
    transactions, aborted = PartitionTransactions(), []
    for header in iter_batches(data):
        closed = transactions.apply(header, decode_marker(data, header) if header.is_control else None)
        if closed is not None:
            aborted.append(closed)
    return aborted


def step(rng: random.Random, log: PartitionLog, directory: Path, config: LogConfig) -> PartitionLog:
    roll = rng.random()
    if roll < 0.06 and log.log_end_offset > 0:
        log.truncate_to(rng.randint(log.log_start_offset, log.log_end_offset))
        return log
    if roll < 0.09:
        log.close()
        return open_log(directory, config)
    if roll < 0.12:
        return open_log(directory, config)  # a crash: the old instance is abandoned, never closed
    producer = rng.choice(PRODUCERS)
    if log.transactions.open_transaction(producer) is not None and rng.random() < 0.45:
        batch = marker_batch(producer, committed=rng.random() < 0.4)
    elif rng.random() < 0.15:
        batch = data_batch(-1, rng.randint(1, 3))
    else:
        batch = data_batch(producer, rng.randint(1, 3))
    log.append_as_leader(batch, EPOCH, NOW_MS)
    return log


@pytest.mark.parametrize("seed", range(6))
def test_the_indexes_answer_as_a_replay_of_the_whole_log(seed: int, log_dir: Path) -> None:
    rng = random.Random(seed)
    config = LogConfig(segment_bytes=rng.choice([160, 240, 400]))
    log = open_log(log_dir, config)
    answers_with_aborts = most_segments = 0
    for _ in range(250):
        log = step(rng, log, log_dir, config)
        assert all(segment.txn_index.active_entries == [] for segment in log.segments[:-1])
        most_segments = max(most_segments, len(log.segments))
        expected = replayed_aborts(log)
        end = log.log_end_offset
        for _ in range(4):
            start = rng.randint(0, end)
            stop = rng.randint(start, end)
            overlapping = [txn for txn in expected if txn.last_offset >= start and txn.first_offset < stop]
            assert log.aborted_between(start, stop) == overlapping, (start, stop)
            answers_with_aborts += bool(overlapping)
    assert answers_with_aborts > 100 and most_segments > 5, "the run rolled segments and searched aborts"
