"""Settings layering: flags > environment > TOML file > defaults, including nested tables."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from config.broker import BrokerSettings, load_broker_settings
from config.errors import ConfigFileError, UnknownSettingName, format_settings_error


def write_toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "broker.toml"
    path.write_text(text)
    return path


def test_defaults_without_file_flags_or_environment() -> None:
    settings = load_broker_settings()
    assert (settings.node_id, settings.host, settings.port) == (1, "127.0.0.1", 9092)
    assert settings.data_dir == Path(".highwater/data")
    assert settings.max_request_bytes == 64 * 1024 * 1024
    assert settings.log_flush_policy == "fsync"
    assert settings.topic_defaults.max_message_bytes == 1048588
    assert settings.advertised_url is None and settings.metadata_store is None


def test_toml_file_overrides_defaults(tmp_path: Path) -> None:
    config = write_toml(tmp_path, 'port = 9500\nrack = "r1"\n[topic_defaults]\npartitions = 6\n')
    settings = load_broker_settings(config)
    assert settings.port == 9500
    assert settings.rack == "r1"
    assert settings.topic_defaults.partitions == 6
    assert settings.topic_defaults.replication_factor == 1


def test_environment_overrides_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = write_toml(tmp_path, "port = 9500\nnode_id = 4\n")
    monkeypatch.setenv("HIGHWATER_PORT", "9600")
    settings = load_broker_settings(config)
    assert settings.port == 9600
    assert settings.node_id == 4


def test_flags_override_environment_and_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = write_toml(tmp_path, "port = 9500\nhost = '0.0.0.0'\n")
    monkeypatch.setenv("HIGHWATER_PORT", "9600")
    settings = load_broker_settings(config, port=9700, host=None)
    assert settings.port == 9700
    assert settings.host == "0.0.0.0", "a flag left as None must not hide the file's value"


def test_nested_environment_merges_with_toml_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = write_toml(tmp_path, "[topic_defaults]\npartitions = 6\nretention_ms = 1000\n")
    monkeypatch.setenv("HIGHWATER_TOPIC_DEFAULTS__RETENTION_MS", "3600000")
    settings = load_broker_settings(config)
    assert settings.topic_defaults.retention_ms == 3600000
    assert settings.topic_defaults.partitions == 6


def test_the_cli_and_client_variables_are_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIGHWATER_SERVER", "http://elsewhere:9092")
    monkeypatch.setenv("HIGHWATER_PRODUCER_ACKS", "1")
    assert load_broker_settings().port == 9092


def test_log_setting_fills_its_topic_default_twin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIGHWATER_LOG_SEGMENT_BYTES", "2048")
    settings = load_broker_settings()
    assert settings.topic_defaults.segment_bytes == 2048
    assert settings.log_segment_bytes == 2048


def test_topic_default_fills_its_log_setting_twin(tmp_path: Path) -> None:
    settings = load_broker_settings(write_toml(tmp_path, "[topic_defaults]\nflush_policy = 'os'\n"))
    assert settings.log_flush_policy == "os"
    assert settings.topic_defaults.flush_policy == "os"


def test_twins_given_with_different_values_are_refused(tmp_path: Path) -> None:
    config = write_toml(tmp_path, "log_retention_ms = 5000\n[topic_defaults]\nretention_ms = 6000\n")
    with pytest.raises(ValidationError) as caught:
        load_broker_settings(config)
    line = format_settings_error(caught.value)
    assert "log_retention_ms (5000)" in line and "topic_defaults.retention_ms (6000)" in line


def test_unknown_key_in_toml_is_refused_naming_the_closest_key(tmp_path: Path) -> None:
    with pytest.raises(UnknownSettingName) as caught:
        load_broker_settings(write_toml(tmp_path, "segment_bytes = 2048\n"))
    assert str(caught.value) == "invalid setting segment_bytes: unknown setting (did you mean log_segment_bytes?)"


def test_missing_config_file_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=r"cannot read config file .*missing.toml"):
        load_broker_settings(tmp_path / "missing.toml")


def test_malformed_toml_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="not valid TOML") as caught:
        load_broker_settings(write_toml(tmp_path, "port = = 1\n"))
    assert "\n" not in str(caught.value)


def test_the_file_of_one_load_does_not_leak_into_the_next(tmp_path: Path) -> None:
    load_broker_settings(write_toml(tmp_path, "port = 9500\n"))
    assert load_broker_settings().port == 9092
    assert BrokerSettings().port == 9092


def test_port_zero_is_accepted_for_a_free_port() -> None:
    assert load_broker_settings(port=0).port == 0


def test_metadata_store_url_is_checked_at_load() -> None:
    assert load_broker_settings(metadata_store="etcd://127.0.0.1:2379").metadata_store == "etcd://127.0.0.1:2379"
    with pytest.raises(ValidationError) as caught:
        load_broker_settings(metadata_store="sqlite://relative.db")
    assert format_settings_error(caught.value).startswith("highwater: invalid setting metadata_store:")


def test_log_level_is_case_insensitive_and_advertised_url_normalised() -> None:
    settings = load_broker_settings(log_level="DEBUG", advertised_url="http://broker-1:9092/")
    assert settings.log_level == "debug"
    assert settings.advertised_url == "http://broker-1:9092"
