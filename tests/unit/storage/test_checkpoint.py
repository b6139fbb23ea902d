import threading
from pathlib import Path

import pytest

from broker.storage.checkpoint import (
    CorruptCheckpoint,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
    delete_stray_temp_files,
)
from broker.storage.epoch_cache import EpochEntry


def test_offset_checkpoint_round_trips_in_kafka_text_format(tmp_path: Path) -> None:
    checkpoint = OffsetCheckpointFile(tmp_path / "replication-offset-checkpoint")
    checkpoint.write({("orders-eu", 1): 42, ("orders-eu", 0): 7})
    assert (tmp_path / "replication-offset-checkpoint").read_text() == "0\n2\norders-eu 0 7\norders-eu 1 42\n"
    assert checkpoint.read() == {("orders-eu", 0): 7, ("orders-eu", 1): 42}
    assert not (tmp_path / "replication-offset-checkpoint.tmp").exists()


def test_missing_checkpoint_reads_as_empty(tmp_path: Path) -> None:
    assert OffsetCheckpointFile(tmp_path / "log-start-offset-checkpoint").read() == {}
    assert LeaderEpochCheckpointFile(tmp_path / "leader-epoch-checkpoint").read() == []


def test_rewrite_replaces_the_whole_content(tmp_path: Path) -> None:
    checkpoint = OffsetCheckpointFile(tmp_path / "cp")
    checkpoint.write({("a", 0): 1, ("b", 0): 2})
    checkpoint.write({("a", 0): 5})
    assert checkpoint.read() == {("a", 0): 5}


def test_leader_epoch_checkpoint_round_trips(tmp_path: Path) -> None:
    checkpoint = LeaderEpochCheckpointFile(tmp_path / "leader-epoch-checkpoint")
    checkpoint.write([EpochEntry(0, 0), EpochEntry(3, 120)])
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n2\n0 0\n3 120\n"
    assert checkpoint.read() == [EpochEntry(0, 0), EpochEntry(3, 120)]


@pytest.mark.parametrize(
    "content",
    [
        "",
        "1\n1\nt 0 5\n",  # unknown version
        "0\n2\nt 0 5\n",  # count disagrees
        "0\nx\n",  # count not a number
        "0\n1\nt 0\n",  # missing field
        "0\n1\nt zero 5\n",  # non-integer partition
    ],
)
def test_corrupt_offset_checkpoint_raises_naming_the_file(tmp_path: Path, content: str) -> None:
    path = tmp_path / "recovery-point-offset-checkpoint"
    path.write_text(content)
    with pytest.raises(CorruptCheckpoint) as raised:
        OffsetCheckpointFile(path).read()
    assert str(path) in raised.value.message


def test_binary_garbage_is_reported_as_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(CorruptCheckpoint, match="leader-epoch-checkpoint"):
        LeaderEpochCheckpointFile(path).read()


def test_concurrent_writers_of_one_checkpoint_never_take_each_others_temp_file(tmp_path: Path) -> None:
    """Two threads rewriting one file: with a shared temp name one rename failed (FileNotFoundError)."""
    checkpoint = OffsetCheckpointFile(tmp_path / "log-start-offset-checkpoint")
    errors: list[BaseException] = []

    def rewrite(offset: int) -> None:
        try:
            for _ in range(300):
                checkpoint.write({("orders", 0): offset})
        except Exception as error:  # noqa: BLE001 - an exception in a thread is otherwise lost
            errors.append(error)

    threads = [threading.Thread(target=rewrite, args=(offset,)) for offset in (1, 2, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert checkpoint.read() in ({("orders", 0): 1}, {("orders", 0): 2}, {("orders", 0): 3})
    assert [path.name for path in tmp_path.iterdir()] == ["log-start-offset-checkpoint"]


def test_stray_temp_files_of_an_interrupted_write_are_removed(tmp_path: Path) -> None:
    (tmp_path / "replication-offset-checkpoint.k2j3h4.tmp").write_text("0\n1\nt 0")
    (tmp_path / "replication-offset-checkpoint").write_text("0\n0\n")
    assert delete_stray_temp_files(tmp_path) == [tmp_path / "replication-offset-checkpoint.k2j3h4.tmp"]
    assert [path.name for path in tmp_path.iterdir()] == ["replication-offset-checkpoint"]


def test_a_write_of_unchanged_offsets_leaves_the_file_alone_and_a_change_replaces_it(tmp_path: Path) -> None:
    """An idle broker's periodic checkpoint writes the same offsets again: no new file, no fsync."""
    path = tmp_path / "replication-offset-checkpoint"
    checkpoint = OffsetCheckpointFile(path)
    checkpoint.write({("orders", 0): 7})
    first = path.stat().st_ino
    checkpoint.write({("orders", 0): 7})
    assert path.stat().st_ino == first
    checkpoint.write({("orders", 0): 8})
    assert path.stat().st_ino != first
    assert checkpoint.read() == {("orders", 0): 8}
