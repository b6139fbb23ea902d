"""``docs/configuration.md`` is what the settings models say, and what it says is true.

The page is generated (``broker.cli.config_reference``); these tests fail when the committed page
is stale, when a setting has no written meaning, and when a name or a message the page
prints is not what the broker and clients really read or say.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field, ValidationError
from pydantic_settings import BaseSettings

from broker.cli.config_reference import (
    INVALID_VALUE_EXAMPLE,
    MISSPELT_VARIABLE,
    PAGE,
    REGENERATE,
    UNKNOWN_KEY_EXAMPLE,
    UNKNOWN_VARIABLE_EXAMPLE,
    env_var,
    markdown_table,
    meaning,
    nested_tables,
    render_reference,
)
from config.broker import BrokerSettings, load_broker_settings
from config.client import ConsumerSettings, ProducerSettings
from config.errors import PROGRAM, UnknownSettingName, format_settings_error
from config.topic import TOPIC_CONFIG_NAMES, TopicConfig, TopicDefaults

REPO_ROOT = Path(__file__).resolve().parents[3]
BROKER_TABLES = nested_tables(BrokerSettings)
MODELS: tuple[type[BaseModel], ...] = (
    BrokerSettings,
    *BROKER_TABLES.values(),
    TopicConfig,
    ProducerSettings,
    ConsumerSettings,
)
EVERY_FIELD = [(model, name) for model in MODELS for name in model.model_fields]


def page() -> str:
    return (REPO_ROOT / PAGE).read_text(encoding="utf-8")


def broker_paths() -> list[tuple[str, ...]]:
    top_level: list[tuple[str, ...]] = [(name,) for name in BrokerSettings.model_fields if name not in BROKER_TABLES]
    nested = [(table, name) for table, model in BROKER_TABLES.items() for name in model.model_fields]
    return top_level + nested


def test_the_committed_page_is_the_rendered_one() -> None:
    assert page() == render_reference(), f"{PAGE} is out of date; regenerate it with: {REGENERATE}"


def test_the_page_does_not_depend_on_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIGHWATER_NODE_ID", "9")
    monkeypatch.setenv("HIGHWATER_PRODUCER_ACKS", "1")
    assert render_reference() == page()


@pytest.mark.parametrize(("model", "name"), EVERY_FIELD, ids=[f"{m.__name__}.{n}" for m, n in EVERY_FIELD])
def test_every_setting_has_a_description(model: type[BaseModel], name: str) -> None:
    assert (model.model_fields[name].description or "").strip(), f"{model.__name__}.{name} needs a description"


def test_a_field_without_a_description_is_refused() -> None:
    class Undocumented(BaseModel):
        documented: int = Field(1, description="says what it is")
        bare: int = 1

    assert meaning(Undocumented, "documented") == "says what it is"
    with pytest.raises(ValueError, match=r"Undocumented\.bare has no description"):
        meaning(Undocumented, "bare")


@pytest.mark.parametrize("path", broker_paths(), ids=".".join)
def test_every_broker_setting_has_its_row(path: tuple[str, ...]) -> None:
    assert f"| `{path[-1]}` | `{env_var(BrokerSettings, *path)}` |" in page()


@pytest.mark.parametrize("table", BROKER_TABLES)
def test_every_broker_table_has_its_section(table: str) -> None:
    assert f"### `[{table}]`" in page()


@pytest.mark.parametrize("name", TOPIC_CONFIG_NAMES)
def test_every_topic_config_has_its_row(name: str) -> None:
    assert f"| `{name}` |" in page()


@pytest.mark.parametrize("settings", [ProducerSettings, ConsumerSettings])
def test_every_client_setting_has_its_row(settings: type[BaseSettings]) -> None:
    for name in settings.model_fields:
        assert f"| `{name}` | `{env_var(settings, name)}` |" in page(), name


@pytest.mark.parametrize(
    ("path", "text", "expected"),
    [
        (("node_id",), "7", 7),
        (("log_level",), "DEBUG", "debug"),
        (("kafka_listener",), "127.0.0.1:19092", "127.0.0.1:19092"),
        (("topic_defaults", "retention_ms"), "3600000", 3_600_000),
        (("topic_defaults", "cleanup_policy"), "compact", "compact"),
        (("security", "super_users"), '["admin"]', ["User:admin"]),
        (("console", "lag_sample_interval_ms"), "1000", 1000),
    ],
    ids=lambda value: ".".join(value) if isinstance(value, tuple) else None,
)
def test_the_printed_broker_variables_are_read(
    monkeypatch: pytest.MonkeyPatch, path: tuple[str, ...], text: str, expected: Any
) -> None:
    monkeypatch.setenv(env_var(BrokerSettings, *path), text)
    value: Any = load_broker_settings()
    for name in path:
        value = getattr(value, name)
    assert value == expected


def test_a_log_setting_variable_reaches_its_topic_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(env_var(BrokerSettings, "log_retention_ms"), "3600000")
    assert load_broker_settings().topic_defaults.retention_ms == 3_600_000


def test_the_printed_client_variables_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(env_var(ProducerSettings, "linger_ms"), "50")
    monkeypatch.setenv(env_var(ProducerSettings, "ssl_ca_file"), "/etc/ca.pem")
    monkeypatch.setenv(env_var(ConsumerSettings, "group_id"), "billing")
    monkeypatch.setenv(env_var(ConsumerSettings, "username"), "alice")
    monkeypatch.setenv(env_var(ConsumerSettings, "password"), "secret")
    producer, consumer = ProducerSettings(), ConsumerSettings()
    assert (producer.linger_ms, producer.ssl_ca_file) == (50, Path("/etc/ca.pem"))
    assert (consumer.group_id, consumer.username) == ("billing", "alice")
    assert consumer.security_options()["password"] == "secret"


def test_the_invalid_value_example_is_what_the_broker_says() -> None:
    with pytest.raises(ValidationError) as caught:
        load_broker_settings(log_segment_bytes=10)
    assert format_settings_error(caught.value) == INVALID_VALUE_EXAMPLE


def test_the_unknown_key_example_is_what_the_broker_says(tmp_path: Path) -> None:
    config_file = tmp_path / "broker.toml"
    config_file.write_text('[tls]\ncert = "broker.pem"\n')
    with pytest.raises(UnknownSettingName) as caught:
        load_broker_settings(config_file)
    assert f"{PROGRAM}: {caught.value}" == UNKNOWN_KEY_EXAMPLE


def test_the_unknown_variable_example_is_what_the_broker_says(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MISSPELT_VARIABLE, "1")
    with pytest.raises(UnknownSettingName) as caught:
        load_broker_settings()
    assert f"{PROGRAM}: {caught.value}" == UNKNOWN_VARIABLE_EXAMPLE


def test_an_unknown_variable_in_a_table_is_refused_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(env_var(BrokerSettings, "tls", "cert"), "broker.pem")
    with pytest.raises(UnknownSettingName) as caught:
        load_broker_settings()
    assert str(caught.value) == (
        "unknown environment variable HIGHWATER_TLS__CERT (did you mean HIGHWATER_TLS__CERT_FILE?)"
    )


def test_every_topic_config_field_has_a_kafka_name() -> None:
    assert set(TopicConfig.model_fields) <= set(TopicDefaults.model_fields)
    assert set(TOPIC_CONFIG_NAMES.values()) == set(TopicConfig.model_fields)


def test_a_pipe_in_a_cell_does_not_split_it() -> None:
    assert markdown_table(("meaning",), [("fsync | os",)]).splitlines()[-1] == "| fsync \\| os |"
