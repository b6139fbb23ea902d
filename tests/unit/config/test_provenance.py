"""Each effective setting with the layer it came from, written as TOML that gives a broker the same settings."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from pydantic import BaseModel, SecretStr

from config.broker import BrokerSettings, load_broker_settings
from config.provenance import (
    BROKER_TWINS,
    HEADER,
    EffectiveSetting,
    Layers,
    broker_settings_text,
    effective_settings,
    render_toml,
    toml_value,
)

NO_LAYERS = Layers(flag={}, environment={}, file={})


def sources(settings: BrokerSettings, layers: Layers) -> dict[str, str]:
    return {".".join(e.path): e.source for e in effective_settings(settings, layers, BROKER_TWINS)}


def test_each_setting_comes_from_the_highest_layer_that_gives_it() -> None:
    layers = Layers(
        flag={"port": 9700},
        environment={"port": "9600", "node_id": "6", "tls": {"ca_file": "/env/ca.pem"}},
        file={"port": 9500, "node_id": 5, "rack": "r1", "security": {"super_users": ["admin"]}},
    )
    found = sources(BrokerSettings(), layers)
    assert (found["port"], found["node_id"], found["rack"]) == ("flag", "environment", "file")
    assert (found["tls.ca_file"], found["security.super_users"]) == ("environment", "file")
    assert (found["host"], found["tls.cert_file"], found["console.lag_sample_interval_ms"]) == ("default",) * 3


def test_a_log_setting_and_its_topic_default_twin_share_their_source() -> None:
    found = sources(BrokerSettings(), Layers(flag={}, environment={"log_retention_ms": "1"}, file={}))
    assert found["log_retention_ms"] == found["topic_defaults.retention_ms"] == "environment"
    found = sources(BrokerSettings(), Layers(flag={}, environment={}, file={"topic_defaults": {"segment_ms": 9}}))
    assert found["log_segment_ms"] == found["topic_defaults.segment_ms"] == "file"


def test_a_top_level_file_key_counts_whatever_its_case() -> None:
    assert sources(BrokerSettings(), Layers(flag={}, environment={}, file={"Port": 9500}))["port"] == "file"


def test_every_setting_is_listed_once_with_its_effective_value() -> None:
    settings = BrokerSettings(port=9500)
    entries = effective_settings(settings, NO_LAYERS, BROKER_TWINS)
    assert len({entry.path for entry in entries}) == len(entries)
    assert EffectiveSetting(("port",), 9500, "default") in entries
    assert EffectiveSetting(("topic_defaults", "partitions"), 1, "default") in entries


def test_the_text_is_toml_that_gives_a_broker_the_same_settings(tmp_path: Path) -> None:
    settings = load_broker_settings(
        port=9500,
        rack='rack "one"\\',
        log_level="DEBUG",
        log_retention_ms=3_600_000,
        security={"super_users": ["admin", "ops"]},
        tls={"ca_file": tmp_path / "ca.pem"},
    )
    text = broker_settings_text(settings, NO_LAYERS)
    config = tmp_path / "printed.toml"
    config.write_text(text)
    assert load_broker_settings(config) == settings


def test_top_level_keys_come_before_the_tables_and_lines_end_with_their_source() -> None:
    lines = broker_settings_text(BrokerSettings(), Layers(flag={"port": 1}, environment={}, file={})).splitlines()
    assert lines[0] == HEADER
    first_table = lines.index("[topic_defaults]")
    assert "kafka_max_request_bytes = 104857600  # default" in lines[:first_table]
    assert "port = 1  # flag" not in lines, "the value printed is the settings', the source the layers'"
    assert "port = 9092  # flag" in lines
    assert [line for line in lines if line.startswith("[")] == ["[topic_defaults]", "[security]", "[tls]", "[console]"]


def test_an_unset_setting_is_commented_out() -> None:
    assert "# rack = (unset)  # default" in broker_settings_text(BrokerSettings(), NO_LAYERS).splitlines()


class WithSecret(BaseModel):
    user: str = "alice"
    password: SecretStr = SecretStr("hunter2")


def test_a_secret_is_never_printed() -> None:
    text = render_toml(effective_settings(WithSecret(), Layers(flag={}, environment={"password": "x"}, file={}), {}))
    assert "hunter2" not in text
    assert text.splitlines()[1:] == ['user = "alice"  # default', "# password = (secret, not shown)  # environment"]


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (True, "true"),
        (-1, "-1"),
        ("fsync", '"fsync"'),
        (Path("/srv/data"), '"/srv/data"'),
        (["User:a", "User:b"], '["User:a", "User:b"]'),
        ('quote " backslash \\ tab \t delete \x7f é', '"quote \\" backslash \\\\ tab \\t delete \\u007f é"'),
    ],
)
def test_values_are_written_as_toml(value: object, written: str) -> None:
    assert toml_value(value) == written
    assert tomllib.loads(f"key = {written}")["key"] == (str(value) if isinstance(value, Path) else value)


def test_a_value_without_a_toml_form_is_refused() -> None:
    with pytest.raises(TypeError, match="no TOML form"):
        toml_value(1.5)
