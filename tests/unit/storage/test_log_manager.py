import threading
from pathlib import Path

import pytest

from broker.errors import InvalidTopic
from broker.storage.checkpoint import OffsetCheckpointFile
from broker.storage.log_config import LogConfig
from broker.storage.log_manager import LogManager, parse_partition_directory_name
from tests.unit.storage.helpers import make_batch


def test_directory_names_split_at_the_last_dash() -> None:
    assert parse_partition_directory_name("orders-eu-west-12") == ("orders-eu-west", 12)
    assert parse_partition_directory_name("orders") is None
    assert parse_partition_directory_name("orders-x") is None
    assert parse_partition_directory_name("bad topic-0") is None


def test_get_or_create_makes_kafka_style_directories(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, LogConfig())
    log = manager.get_or_create("orders-eu", 3)
    assert log.directory == tmp_path / "orders-eu-3"
    assert manager.get_or_create("orders-eu", 3) is log
    assert manager.get("orders-eu", 3) is log and manager.get("orders-eu", 4) is None
    with pytest.raises(InvalidTopic):
        manager.get_or_create("../escape", 0)


def test_clean_restart_reloads_every_log_without_recovery(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, LogConfig())
    manager.get_or_create("orders-eu", 0).append_as_leader(make_batch(3), 1, 0)
    manager.get_or_create("orders-eu", 1).append_as_leader(make_batch(2), 1, 0)
    manager.close_all()
    assert (tmp_path / "clean-shutdown").exists()
    assert OffsetCheckpointFile(tmp_path / "recovery-point-offset-checkpoint").read() == {
        ("orders-eu", 0): 3,
        ("orders-eu", 1): 2,
    }
    restarted = LogManager(tmp_path, LogConfig())
    logs = restarted.load_all()
    assert {key: log.log_end_offset for key, log in logs.items()} == {("orders-eu", 0): 3, ("orders-eu", 1): 2}
    assert not (tmp_path / "clean-shutdown").exists()


def test_unclean_restart_recovers_from_the_checkpointed_recovery_point(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, LogConfig())
    log = manager.get_or_create("orders", 0)
    log.append_as_leader(make_batch(2), 1, 0)
    log.flush()
    manager.checkpoint_recovery_points()
    log.append_as_leader(make_batch(2), 1, 0)
    segment = log.segments[-1].log_path
    with open(segment, "r+b") as file:  # the unflushed tail was torn by the crash
        file.truncate(segment.stat().st_size - 5)
    restarted = LogManager(tmp_path, LogConfig()).load_all()
    assert restarted[("orders", 0)].log_end_offset == 2


def test_log_start_offsets_survive_a_restart(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, LogConfig())
    log = manager.get_or_create("orders", 0)
    for _ in range(3):
        log.append_as_leader(make_batch(2), 1, 0)
    log.advance_log_start_offset(3)
    manager.close_all()
    assert LogManager(tmp_path, LogConfig()).load_all()[("orders", 0)].log_start_offset == 3


def test_delete_removes_the_directory_and_the_checkpoint_entries(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, LogConfig())
    manager.get_or_create("orders", 0).append_as_leader(make_batch(1), 1, 0)
    manager.get_or_create("orders", 1)
    assert manager.delete("orders", 0)
    assert not manager.delete("orders", 0)
    assert not (tmp_path / "orders-0").exists()
    assert set(manager.logs()) == {("orders", 1)}
    assert set(OffsetCheckpointFile(tmp_path / "log-start-offset-checkpoint").read()) == {("orders", 1)}


def test_per_topic_configs_apply_at_load(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, LogConfig())
    manager.get_or_create("orders", 0)
    manager.close_all()
    special = LogConfig(flush_policy="os")
    logs = LogManager(tmp_path, LogConfig()).load_all({"orders": special})
    assert logs[("orders", 0)].config is special


def test_deletes_racing_checkpoint_writes_leave_a_checkpoint_without_the_deleted_logs(tmp_path: Path) -> None:
    """A topic deleted while the broker checkpoints (or stops): both write the same files."""
    manager = LogManager(tmp_path, LogConfig())
    for partition in range(40):
        manager.get_or_create("orders", partition)
    errors: list[BaseException] = []

    def checkpoint_repeatedly() -> None:
        try:
            for _ in range(100):
                manager.checkpoint_all({key: 0 for key in manager.logs()})
        except Exception as error:  # noqa: BLE001 - an exception in a thread is otherwise lost
            errors.append(error)

    writer = threading.Thread(target=checkpoint_repeatedly)
    writer.start()
    for partition in range(40):
        assert manager.delete("orders", partition)
    writer.join()
    assert errors == []
    manager.checkpoint_log_start_offsets()
    assert OffsetCheckpointFile(tmp_path / "log-start-offset-checkpoint").read() == {}
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "log-start-offset-checkpoint",
        "recovery-point-offset-checkpoint",
        "replication-offset-checkpoint",
    ]


def test_a_partition_created_again_after_delete_starts_empty_in_its_own_directory(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, LogConfig())
    manager.get_or_create("orders", 0).append_as_leader(make_batch(3), 1, 0)
    assert manager.delete("orders", 0)
    again = manager.get_or_create("orders", 0)
    assert again.log_end_offset == 0 and again.directory == tmp_path / "orders-0"
    assert [path.name for path in tmp_path.iterdir() if path.is_dir()] == ["orders-0"]


def test_load_finishes_an_interrupted_delete_and_drops_checkpoint_temp_files(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, LogConfig())
    manager.get_or_create("orders", 0).append_as_leader(make_batch(1), 1, 0)
    manager.get_or_create("orders", 1).append_as_leader(make_batch(1), 1, 0)
    manager.close_all()
    (tmp_path / "orders-1").rename(tmp_path / "orders-1.5f0c-delete")
    (tmp_path / "recovery-point-offset-checkpoint.x1y2.tmp").write_text("0\n")
    logs = LogManager(tmp_path, LogConfig()).load_all()
    assert set(logs) == {("orders", 0)}
    assert not (tmp_path / "orders-1.5f0c-delete").exists()
    assert not (tmp_path / "recovery-point-offset-checkpoint.x1y2.tmp").exists()


def test_a_partition_created_again_before_its_detached_log_is_deleted_gets_a_new_log_the_deletion_leaves_alone(
    tmp_path: Path,
) -> None:
    """A topic deleted and created again at once: the broker detaches the old log on its event loop and
    deletes it in a thread later. The new partition opened the old log meanwhile (its end offset 3), and
    the late deletion closed it under the new one, whose next append failed on a closed file."""
    manager = LogManager(tmp_path, LogConfig())
    manager.get_or_create("orders", 0).append_as_leader(make_batch(3), 1, 0)
    detached = manager.detach("orders", 0)
    assert detached is not None
    again = manager.get_or_create("orders", 0)
    assert again.log_end_offset == 0 and again.directory == tmp_path / "orders-0"
    manager.delete_detached(detached)
    again.append_as_leader(make_batch(2), 1, 0)
    assert again.log_end_offset == 2 and manager.get("orders", 0) is again
    assert [path.name for path in tmp_path.iterdir() if path.is_dir()] == ["orders-0"]
