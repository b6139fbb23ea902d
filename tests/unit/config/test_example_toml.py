"""The shipped example file loads, documents every setting, and shows the real defaults."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import config
from config.broker import BrokerSettings, load_broker_settings
from config.console import ConsoleSettings
from config.security import SecuritySettings, TlsSettings
from config.topic import TopicDefaults

EXAMPLE = Path(config.__file__).parent / "broker.example.toml"


def test_example_loads_and_equals_the_defaults() -> None:
    assert load_broker_settings(EXAMPLE) == BrokerSettings()


def test_example_mentions_every_setting() -> None:
    text = EXAMPLE.read_text()
    keys = set(re.findall(r"^#?\s*([a-z_]+) = ", text, flags=re.MULTILINE))
    assert set(BrokerSettings.model_fields) - {"topic_defaults", "security", "tls", "console"} <= keys
    assert set(TopicDefaults.model_fields) <= keys
    assert (
        set(SecuritySettings.model_fields) | set(TlsSettings.model_fields) | set(ConsoleSettings.model_fields) <= keys
    )


def test_every_example_setting_is_commented() -> None:
    lines = EXAMPLE.read_text().splitlines()
    for number, line in enumerate(lines):
        if re.match(r"^[a-z_]+ = ", line):
            assert lines[number - 1].startswith("#"), f"{line!r} has no comment above it"


def test_example_values_given_are_the_field_defaults() -> None:
    with EXAMPLE.open("rb") as file:
        values = tomllib.load(file)
    defaults = TopicDefaults()
    for name, value in values.pop("topic_defaults").items():
        assert getattr(defaults, name) == value, name
    broker_defaults = BrokerSettings()
    for table in ("security", "tls", "console"):
        for name, value in values.pop(table).items():
            assert getattr(getattr(broker_defaults, table), name) == value, f"{table}.{name}"
    for name, value in values.items():
        shown = str(getattr(broker_defaults, name)) if name == "data_dir" else getattr(broker_defaults, name)
        assert shown == value, name
