"""Invalid settings produce one line naming the setting and the problem."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from config.broker import load_broker_settings
from config.errors import format_settings_error


def error_line(**overrides: Any) -> str:
    with pytest.raises(ValidationError) as caught:
        load_broker_settings(**overrides)
    line = format_settings_error(caught.value)
    assert "\n" not in line
    return line


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"log_segment_bytes": 10}, "highwater: invalid setting log_segment_bytes: must be >= 1024 (got 10)"),
        ({"port": 70000}, "highwater: invalid setting port: must be <= 65535 (got 70000)"),
        ({"port": -1}, "highwater: invalid setting port: must be >= 0 (got -1)"),
        ({"max_batch_entries": 0}, "highwater: invalid setting max_batch_entries: must be >= 1 (got 0)"),
        ({"log_retention_ms": -2}, "highwater: invalid setting log_retention_ms: must be >= -1 (got -2)"),
        ({"node_id": "one"}, "highwater: invalid setting node_id: must be an integer (got 'one')"),
        (
            {"log_flush_policy": "sometimes"},
            "highwater: invalid setting log_flush_policy: must be one of 'fsync', 'interval' or 'os' (got 'sometimes')",
        ),
        (
            {"auto_leader_rebalance_enable": "perhaps"},
            "highwater: invalid setting auto_leader_rebalance_enable: must be true or false (got 'perhaps')",
        ),
        (
            {"leader_imbalance_per_broker_percentage": 101},
            "highwater: invalid setting leader_imbalance_per_broker_percentage: must be <= 100 (got 101)",
        ),
        (
            {"advertised_url": "broker-1:9092"},
            "highwater: invalid setting advertised_url: must start with http:// or https:// (got 'broker-1:9092')",
        ),
    ],
)
def test_one_line_names_setting_and_problem(overrides: dict, expected: str) -> None:
    assert error_line(**overrides) == expected


def test_nested_setting_is_named_with_its_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIGHWATER_TOPIC_DEFAULTS__MIN_INSYNC_REPLICAS", "0")
    assert error_line() == "highwater: invalid setting topic_defaults.min_insync_replicas: must be >= 1 (got 0)"


def test_several_bad_settings_share_one_line() -> None:
    line = error_line(port=70000, log_segment_bytes=10)
    assert line.count("invalid setting") == 2
    assert "port:" in line and "log_segment_bytes:" in line


def test_cross_setting_rules_name_both_settings() -> None:
    line = error_line(broker_heartbeat_interval_ms=6000, broker_session_timeout_ms=6000)
    assert line == (
        "highwater: invalid settings: broker_heartbeat_interval_ms (6000) must be less than "
        "broker_session_timeout_ms (6000)"
    )
    assert "replica_lag_time_max_ms" in error_line(replica_fetch_wait_max_ms=20000)
