"""A ``HIGHWATER_*`` variable or a file key that nothing reads is refused, naming the closest name that is."""

from __future__ import annotations

from pathlib import Path

import pytest

from config import variables
from config.broker import BrokerSettings, load_broker_settings
from config.client import ConsumerSettings, ProducerSettings
from config.errors import UnknownSettingName
from config.unknown_names import (
    NO_SIMILAR_NAME,
    closest,
    environment_refusal,
    environment_variable,
    file_refusal,
    setting_paths,
)

BROKER_VARIABLES = [environment_variable(BrokerSettings, path) for path in setting_paths(BrokerSettings)]


def refusal(**environ: str) -> str | None:
    return environment_refusal(environ, BrokerSettings)


def test_a_misspelt_top_level_variable_is_refused_naming_the_setting_meant() -> None:
    assert refusal(HIGHWATER_LOG_RETENTON_MS="1") == (
        "unknown environment variable HIGHWATER_LOG_RETENTON_MS (did you mean HIGHWATER_LOG_RETENTION_MS?)"
    )


def test_a_misspelt_variable_in_a_table_is_refused_naming_the_key_meant() -> None:
    assert refusal(HIGHWATER_TLS__CERT="broker.pem") == (
        "unknown environment variable HIGHWATER_TLS__CERT (did you mean HIGHWATER_TLS__CERT_FILE?)"
    )


def test_a_misspelt_table_is_named_with_the_table_meant() -> None:
    assert refusal(HIGHWATER_TOPIC_DEFAULT__RETENTION_MS="1") == (
        "unknown environment variable HIGHWATER_TOPIC_DEFAULT__RETENTION_MS "
        "(did you mean HIGHWATER_TOPIC_DEFAULTS__RETENTION_MS?)"
    )


def test_an_unknown_key_in_a_table_is_not_taken_for_the_table_itself() -> None:
    assert refusal(HIGHWATER_TLS__ZZZ="1") == f"unknown environment variable HIGHWATER_TLS__ZZZ ({NO_SIMILAR_NAME})"


def test_a_name_like_none_says_where_the_names_are_listed() -> None:
    assert refusal(HIGHWATER_FOO="1") == (
        "unknown environment variable HIGHWATER_FOO (no setting has a similar name: docs/configuration.md lists them)"
    )


def test_several_unknown_variables_share_one_line_in_name_order() -> None:
    line = refusal(HIGHWATER_PROT="1", HIGHWATER_HSOT="x")
    assert line is not None and "\n" not in line
    assert line == (
        "unknown environment variable HIGHWATER_HSOT (did you mean HIGHWATER_HOST?); "
        "unknown environment variable HIGHWATER_PROT (did you mean HIGHWATER_PORT?)"
    )


@pytest.mark.parametrize("name", BROKER_VARIABLES)
def test_every_broker_variable_is_allowed(name: str) -> None:
    assert refusal(**{name: "1"}) is None


def test_a_whole_table_as_json_is_allowed() -> None:
    assert refusal(HIGHWATER_TLS='{"ca_file": "/etc/ca.pem"}') is None


@pytest.mark.parametrize("name", variables.CLI_VARIABLES)
def test_the_cli_variables_are_allowed(name: str) -> None:
    assert refusal(**{name: "x"}) is None


@pytest.mark.parametrize(
    "name",
    [
        *(environment_variable(ProducerSettings, (field,)) for field in ProducerSettings.model_fields),
        *(environment_variable(ConsumerSettings, (field,)) for field in ConsumerSettings.model_fields),
        "HIGHWATER_PRODUCER_NO_SUCH_SETTING",
    ],
)
def test_the_client_variables_are_allowed_as_the_clients_own_them(name: str) -> None:
    assert refusal(**{name: "1"}) is None


def test_a_misspelt_cli_or_client_variable_is_named_with_the_one_meant() -> None:
    assert (
        refusal(HIGHWATER_SEVER="x") == "unknown environment variable HIGHWATER_SEVER (did you mean HIGHWATER_SERVER?)"
    )
    assert refusal(HIGHWATER_PRODUCR_ACKS="1") == (
        "unknown environment variable HIGHWATER_PRODUCR_ACKS (did you mean HIGHWATER_PRODUCER_ACKS?)"
    )


def test_case_is_what_each_reader_ignores() -> None:
    assert refusal(highwater_port="9500") is None, "pydantic-settings reads a variable whatever its case"
    assert refusal(highwater_server="x") == (
        "unknown environment variable highwater_server (did you mean HIGHWATER_SERVER?)"
    ), "the CLI reads its variables by their exact name"


def test_other_programs_variables_are_not_looked_at() -> None:
    assert refusal(PATH="/usr/bin", HWTEST_CONSOLE_SHOTS="docs/console", HIGHWATERMARK="1") is None


def test_a_misspelt_top_level_key_of_the_file_is_named_with_the_key_meant() -> None:
    assert file_refusal({"log_retenton_ms": 1}, BrokerSettings) == (
        "invalid setting log_retenton_ms: unknown setting (did you mean log_retention_ms?)"
    )


def test_a_misspelt_key_in_a_table_of_the_file_is_named_with_the_key_meant() -> None:
    document = {"port": 9500, "tls": {"cert": "broker.pem"}, "topic_defaults": {"retention_mss": 1}}
    assert file_refusal(document, BrokerSettings) == (
        "invalid setting tls.cert: unknown setting (did you mean tls.cert_file?); "
        "invalid setting topic_defaults.retention_mss: unknown setting (did you mean topic_defaults.retention_ms?)"
    )


def test_file_keys_match_in_the_case_pydantic_settings_matches_them() -> None:
    assert file_refusal({"Port": 9500, "TLS": {"ca_file": "/etc/ca.pem"}}, BrokerSettings) is None
    assert file_refusal({"tls": {"CA_FILE": "/etc/ca.pem"}}, BrokerSettings) == (
        "invalid setting tls.CA_FILE: unknown setting (did you mean tls.ca_file?)"
    )


def test_a_table_key_given_a_plain_value_is_left_to_the_value_checks() -> None:
    assert file_refusal({"tls": "on", "port": {"number": 1}}, BrokerSettings) is None


def test_closest_compares_within_the_table_and_whole_paths_elsewhere() -> None:
    known = [("port",), ("tls",), ("tls", "cert_file"), ("tls", "key_file")]
    assert closest(("tls", "cert"), known) == ("tls", "cert_file")
    assert closest(("tlz", "cert_file"), known) == ("tls", "cert_file")
    assert closest(("prot",), known) == ("port",)
    assert closest(("tls", "zzz"), known) is None


def test_loading_refuses_an_unknown_variable_and_an_unknown_file_key_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "broker.toml"
    config.write_text("log_retenton_ms = 1\n")
    monkeypatch.setenv("HIGHWATER_LOG_RETENTON_MS", "1")
    with pytest.raises(UnknownSettingName) as caught:
        load_broker_settings(config)
    assert str(caught.value) == (
        "invalid setting log_retenton_ms: unknown setting (did you mean log_retention_ms?); "
        "unknown environment variable HIGHWATER_LOG_RETENTON_MS (did you mean HIGHWATER_LOG_RETENTION_MS?)"
    )
