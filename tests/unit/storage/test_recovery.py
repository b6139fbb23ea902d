"""Recovery after a crash: the log reopens with exactly the whole batches before the damage."""

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from broker.record.header import (
    PARTITION_LEADER_EPOCH_LENGTH,
    PARTITION_LEADER_EPOCH_OFFSET,
    iter_batches,
)
from broker.storage.epoch_cache import EpochEntry
from broker.storage.log_config import LogConfig
from tests.unit.storage.helpers import make_batch, open_log

CONFIG = LogConfig(segment_bytes=600, index_interval_bytes=100)
EPOCH_BYTES = range(PARTITION_LEADER_EPOCH_OFFSET, PARTITION_LEADER_EPOCH_OFFSET + PARTITION_LEADER_EPOCH_LENGTH)


@pytest.fixture
def written_log(tmp_path: Path) -> tuple[Path, int, int]:
    """A closed log over two segments; returns (directory, last batch base offset, its file position)."""
    directory = tmp_path / "pristine" / "orders-0"
    log = open_log(directory, CONFIG)
    for i in range(8):
        info = log.append_as_leader(make_batch(1 + i % 3, tag=i), 1 if i < 7 else 2, 0)
    assert len(log.segments) == 2
    last_position = log.segments[-1].size_bytes - info.size_bytes
    log.close()
    return directory, info.base_offset, last_position


def _active_segment_path(directory: Path) -> Path:
    return max(directory.glob("*.log"))


def _assert_reopens_with_batches_before(directory: Path, last_base_offset: int, last_position: int) -> None:
    log = open_log(directory, CONFIG)
    assert log.log_end_offset == last_base_offset
    assert log.segments[-1].size_bytes == last_position
    assert log.epoch_cache.entries == [EpochEntry(1, 0)]  # epoch 2 began with the lost batch
    offset, batches = 0, 0
    while offset < log.log_end_offset:
        result = log.read(offset, 1 << 20)
        batches += len(list(iter_batches(result.data)))
        offset = result.next_offset
    assert batches == 7
    assert log.append_as_leader(make_batch(1), 3, 0).base_offset == last_base_offset
    log.close()
    assert open_log(directory, CONFIG).log_end_offset == last_base_offset + 1


def test_cut_last_batch_at_every_byte_boundary(written_log, tmp_path: Path) -> None:
    pristine, last_base_offset, last_position = written_log
    batch_size = _active_segment_path(pristine).stat().st_size - last_position
    for cut in range(batch_size):
        directory = tmp_path / f"cut-{cut}" / "orders-0"
        shutil.copytree(pristine, directory)
        os.truncate(_active_segment_path(directory), last_position + cut)
        _assert_reopens_with_batches_before(directory, last_base_offset, last_position)


def test_corrupt_each_byte_of_last_batch(written_log, tmp_path: Path) -> None:
    """Every byte but the leader epoch: by Kafka's design it lies outside the CRC, so no check can see it."""
    pristine, last_base_offset, last_position = written_log
    batch_size = _active_segment_path(pristine).stat().st_size - last_position
    for byte in (b for b in range(batch_size) if b not in EPOCH_BYTES):
        directory = tmp_path / f"flip-{byte}" / "orders-0"
        shutil.copytree(pristine, directory)
        path = _active_segment_path(directory)
        data = bytearray(path.read_bytes())
        data[last_position + byte] ^= 0xFF
        path.write_bytes(data)
        _assert_reopens_with_batches_before(directory, last_base_offset, last_position)


def test_corruption_in_an_early_segment_drops_everything_after_it(written_log) -> None:
    directory, _, _ = written_log
    first_segment = min(directory.glob("*.log"))
    first_batch_size = len(make_batch(1))
    data = bytearray(first_segment.read_bytes())
    data[first_batch_size + 70] ^= 0x01  # inside the second batch's records
    first_segment.write_bytes(data)
    log = open_log(directory, CONFIG)
    assert log.log_end_offset == 1
    assert [s.base_offset for s in log.segments] == [0]
    assert len(list(directory.glob("*.log"))) == 1


def test_segments_below_the_recovery_point_are_trusted_not_reread(written_log) -> None:
    directory, _, _ = written_log
    first_segment = min(directory.glob("*.log"))
    data = bytearray(first_segment.read_bytes())
    data[-1] ^= 0x01  # payload of the first segment's last batch: only a CRC check sees it
    first_segment.write_bytes(data)
    second_base_offset = int(sorted(directory.glob("*.log"))[1].stem)
    trusted = open_log(directory, CONFIG, recovery_point=second_base_offset)
    assert trusted.log_end_offset == 15
    trusted.close()
    assert open_log(directory, CONFIG, recovery_point=0).log_end_offset < second_base_offset


@pytest.mark.parametrize(
    "damage",
    ["delete offset index", "delete time index", "garbage time index", "offset index past the log end"],
)
def test_missing_or_wrong_indexes_are_rebuilt_identically(written_log, damage: str) -> None:
    directory, _, _ = written_log
    originals = {path.name: path.read_bytes() for path in directory.glob("*index")}
    assert any(originals.values())
    for name in originals:
        path = directory / name
        deleted_suffix = {"delete offset index": ".index", "delete time index": ".timeindex"}.get(damage)
        if deleted_suffix is not None and name.endswith(deleted_suffix):
            path.unlink()
        elif damage == "garbage time index" and name.endswith(".timeindex"):
            path.write_bytes(b"\x07" * 13)
        elif damage == "offset index past the log end" and name.endswith(".index"):
            path.write_bytes(path.read_bytes() + (500).to_bytes(4, "big") + (10**6).to_bytes(4, "big"))
    log = open_log(directory, CONFIG, recovery_point=10**18)
    assert {path.name: path.read_bytes() for path in directory.glob("*index")} == originals
    assert log.log_end_offset == 15
    for offset in range(15):
        assert log.read(offset, 1).first_batch_offset <= offset < log.read(offset, 1).next_offset


def test_stray_files_are_deleted(written_log) -> None:
    directory, _, _ = written_log
    strays = [
        "00000000000000000000.log.swap",
        "00000000000000000000.log.cleaned",
        "leader-epoch-checkpoint.tmp",
        "00000000000000000000.log.deleted",
        "00000000000000000999.index",
        "00000000000000000999.txnindex",
        "00000000000000000000.txnindex.tmp",
    ]
    for name in strays:
        (directory / name).write_bytes(b"x")
    open_log(directory, CONFIG)
    assert [name for name in strays if (directory / name).exists()] == []


def test_lost_epoch_checkpoint_is_rebuilt_from_the_batches(written_log) -> None:
    directory, last_base_offset, _ = written_log
    (directory / "leader-epoch-checkpoint").unlink()
    log = open_log(directory, CONFIG)
    assert log.epoch_cache.entries == [EpochEntry(1, 0), EpochEntry(2, last_base_offset)]
    assert (directory / "leader-epoch-checkpoint").exists()


_APPENDER = """
import sys
from pathlib import Path
from broker.record.codec import RecordInput, encode_batch
from broker.storage.log import PartitionLog
from broker.storage.log_config import LogConfig
log = PartitionLog.open(Path(sys.argv[1]), LogConfig(flush_policy="os", segment_bytes=50_000),
                        topic="orders", partition=0)
batch = encode_batch([RecordInput(b"k", b"v" * 200, (), 1)] * 5)
while True:
    info = log.append_as_leader(batch, 0, 0)
    sys.stdout.write(f"ack {info.last_offset}\\n")
    sys.stdout.flush()
"""


def test_kill_9_loses_nothing_acknowledged(log_dir: Path) -> None:
    """Appends are written to the OS before they return, so SIGKILL cannot drop one."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    child = subprocess.Popen(
        [sys.executable, "-c", _APPENDER, str(log_dir)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    acknowledged = -1
    assert child.stdout is not None
    for line in child.stdout:
        if not line.startswith(b"ack "):
            continue
        acknowledged = int(line.split()[1])
        if acknowledged >= 2000:
            break
    child.send_signal(signal.SIGKILL)
    child.wait()
    log = open_log(log_dir, LogConfig(segment_bytes=50_000))
    assert log.log_end_offset > acknowledged
    assert len(log.segments) > 1
