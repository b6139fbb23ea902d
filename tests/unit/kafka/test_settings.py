"""The Kafka listener's settings: off by default, never on a broker that authenticates clients."""

from __future__ import annotations

import os

import pytest
from pydantic import ValidationError

from config.broker import BrokerSettings, split_host_port


@pytest.fixture(autouse=True)
def clean_highwater_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("HIGHWATER_"):
            monkeypatch.delenv(name)


def test_the_listener_is_off_unless_configured() -> None:
    settings = BrokerSettings()
    assert settings.kafka_listener is None
    assert settings.kafka_max_request_bytes == 100 * 1024 * 1024


def test_a_listener_and_its_advertised_address_are_host_port() -> None:
    settings = BrokerSettings(kafka_listener="0.0.0.0:19092", kafka_advertised_listener="broker-1:19092")
    assert split_host_port(settings.kafka_listener or "") == ("0.0.0.0", 19092)


@pytest.mark.parametrize("address", ["19092", "host:", "host:port", "host:70000", "[::1]"])
def test_an_address_that_is_not_host_port_is_refused(address: str) -> None:
    with pytest.raises(ValidationError, match="not host:port"):
        BrokerSettings(kafka_listener=address)


def test_ipv6_brackets_are_taken_off_the_host() -> None:
    assert split_host_port("[::1]:9092") == ("::1", 9092)


def test_a_wildcard_listener_needs_an_advertised_address() -> None:
    with pytest.raises(ValidationError, match="kafka_advertised_listener"):
        BrokerSettings(kafka_listener="0.0.0.0:19092")


def test_the_listener_is_refused_on_a_broker_with_authentication() -> None:
    with pytest.raises(ValidationError, match=r"kafka_listener cannot be used with security\.authentication = 'basic'"):
        BrokerSettings(kafka_listener="127.0.0.1:0", security={"authentication": "basic"})
