"""Batches checked once at the edge: the log skips the CRC pass, never the other refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.errors import CorruptRecord, RecordTooLarge
from broker.storage.log import check_batches
from broker.storage.log_config import LogConfig
from tests.unit.storage.helpers import make_batch, open_log


def _corrupt(batch: bytes) -> bytes:
    return batch[:-1] + bytes([batch[-1] ^ 0xFF])


def test_check_batches_refuses_a_bad_crc_and_an_empty_append() -> None:
    with pytest.raises(CorruptRecord, match="CRC"):
        check_batches(make_batch(2) + _corrupt(make_batch(2)))
    with pytest.raises(CorruptRecord, match="at least one record batch"):
        check_batches(b"")


def test_checked_batches_append_exactly_as_plain_bytes(tmp_path: Path) -> None:
    data = make_batch(3) + make_batch(2)
    plain, checked = open_log(tmp_path / "plain"), open_log(tmp_path / "checked")
    plain.append_as_leader(data, 4, 1)
    checked.append_as_leader(check_batches(data), 4, 1)
    assert checked.read(0, 1 << 20).data == plain.read(0, 1 << 20).data
    assert checked.log_end_offset == plain.log_end_offset == 5


def test_checked_batches_still_obey_max_message_bytes(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(max_message_bytes=200))
    with pytest.raises(RecordTooLarge):
        log.append_as_leader(check_batches(make_batch(20)), 0, 1)
    assert log.log_end_offset == 0


def test_a_follower_still_refuses_a_corrupt_fetched_batch_and_stores_nothing(tmp_path: Path) -> None:
    leader = open_log(tmp_path / "leader")
    leader.append_as_leader(make_batch(2), 0, 1)
    fetched = leader.read(0, 1 << 20).data
    follower = open_log(tmp_path / "follower")
    with pytest.raises(CorruptRecord, match="CRC"):
        follower.append_as_follower(_corrupt(fetched))
    assert follower.log_end_offset == 0 and follower.size_bytes == 0
    follower.append_as_follower(fetched)
    assert follower.log_end_offset == 2
