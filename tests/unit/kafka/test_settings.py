"""The Kafka listener's settings: off by default; TLS on it needs the broker's certificate, mTLS needs TLS on it."""

from __future__ import annotations

import os
from pathlib import Path

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


def test_the_listener_serves_a_broker_with_password_authentication() -> None:
    settings = BrokerSettings(kafka_listener="127.0.0.1:0", security={"authentication": "basic"})
    assert settings.kafka_listener_tls is False


def test_a_tls_listener_needs_the_brokers_certificate() -> None:
    with pytest.raises(ValidationError, match=r"kafka_listener_tls needs tls\.cert_file"):
        BrokerSettings(kafka_listener="127.0.0.1:0", kafka_listener_tls=True)


def test_certificate_authentication_needs_a_tls_listener(tmp_path: Path) -> None:
    tls = {
        "cert_file": tmp_path / "c",
        "key_file": tmp_path / "k",
        "ca_file": tmp_path / "ca",
        "client_auth": "required",
    }
    with pytest.raises(ValidationError, match="'mtls' needs kafka_listener_tls = true"):
        BrokerSettings(kafka_listener="127.0.0.1:0", security={"authentication": "mtls"}, tls=tls)
    assert BrokerSettings(
        kafka_listener="127.0.0.1:0", kafka_listener_tls=True, security={"authentication": "mtls"}, tls=tls
    ).kafka_listener_tls
