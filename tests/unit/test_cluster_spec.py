"""The harness's spec refuses what the broker would ignore, before any broker starts."""

from __future__ import annotations

import pytest

from tests.support.cluster import FAST_SETTINGS, ClusterSpec, SpecError, setting_variables


def test_a_misspelt_setting_fails_naming_the_closest_real_one() -> None:
    with pytest.raises(SpecError, match=r"'replica_lag_time_max_msec' \(did you mean replica_lag_time_max_ms\?\)"):
        ClusterSpec(settings={"replica_lag_time_max_msec": 100})


def test_a_misspelt_key_of_a_table_names_the_tables_key() -> None:
    with pytest.raises(SpecError, match=r"did you mean security.authentication\?"):
        ClusterSpec(settings={"security.authentcation": "basic"})


def test_a_misspelt_per_broker_setting_fails_too() -> None:
    with pytest.raises(SpecError, match="did you mean rack"):
        ClusterSpec(per_broker={2: {"rakc": "b"}})


def test_settings_become_the_variables_the_broker_reads() -> None:
    assert setting_variables({"security.super_users": ["admin"], "auto_leader_rebalance_enable": False}) == {
        "HIGHWATER_SECURITY__SUPER_USERS": '["admin"]',
        "HIGHWATER_AUTO_LEADER_REBALANCE_ENABLE": "false",
    }


def test_a_tests_settings_go_over_the_fast_timings_which_can_be_turned_off() -> None:
    spec = ClusterSpec(settings={"broker_session_timeout_ms": 9000})
    assert spec.environment()["HIGHWATER_BROKER_SESSION_TIMEOUT_MS"] == "9000"
    assert spec.environment()["HIGHWATER_REPLICA_FETCH_WAIT_MAX_MS"] == str(FAST_SETTINGS["replica_fetch_wait_max_ms"])
    assert ClusterSpec(fast=False).environment() == {}


def test_security_turns_basic_authentication_on_with_the_admin_a_super_user() -> None:
    environment = ClusterSpec(security=True, fast=False).environment()
    assert environment == {
        "HIGHWATER_SECURITY__AUTHENTICATION": "basic",
        "HIGHWATER_SECURITY__SUPER_USERS": '["admin"]',
    }
