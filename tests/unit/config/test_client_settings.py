"""Producer and consumer settings: Kafka defaults, their own env prefixes, Kafka's cross-field rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from config.client import ConsumerSettings, ProducerSettings
from config.errors import format_settings_error


def test_producer_defaults_are_kafkas() -> None:
    settings = ProducerSettings()
    assert settings.acks == "all"
    assert settings.enable_idempotence is True
    assert settings.max_in_flight_requests_per_connection == 5
    assert (settings.linger_ms, settings.batch_size) == (5, 16384)
    assert (settings.request_timeout_ms, settings.delivery_timeout_ms) == (30000, 120000)
    assert settings.bootstrap_urls == ["http://127.0.0.1:9092"]


def test_producer_reads_its_env_prefix_and_kwargs_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIGHWATER_PRODUCER_LINGER_MS", "20")
    monkeypatch.setenv("HIGHWATER_PRODUCER_COMPRESSION", "zstd")
    monkeypatch.setenv("HIGHWATER_PRODUCER_BOOTSTRAP_SERVERS", "http://a:1, http://b:2/")
    settings = ProducerSettings(linger_ms=50)
    assert settings.linger_ms == 50
    assert settings.compression == "zstd"
    assert settings.bootstrap_urls == ["http://a:1", "http://b:2"]


def test_acks_given_as_a_number_is_accepted() -> None:
    assert ProducerSettings(acks=1, enable_idempotence=False).acks == "1"


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"acks": "1"}, "enable_idempotence needs acks='all'"),
        ({"max_in_flight_requests_per_connection": 6}, "max_in_flight_requests_per_connection <= 5"),
        ({"delivery_timeout_ms": 1000}, "delivery_timeout_ms must be >= linger_ms + request_timeout_ms"),
        ({"compression": "snappy"}, "invalid setting compression: must be one of"),
        ({"bootstrap_servers": "broker:9092"}, "must start with http://"),
    ],
)
def test_producer_rules(kwargs: dict, fragment: str) -> None:
    with pytest.raises(ValidationError) as caught:
        ProducerSettings(**kwargs)
    assert fragment in format_settings_error(caught.value)


def test_consumer_defaults_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    defaults = ConsumerSettings()
    assert (defaults.auto_offset_reset, defaults.enable_auto_commit, defaults.group_id) == ("latest", True, None)
    assert (defaults.session_timeout_ms, defaults.heartbeat_interval_ms) == (45000, 3000)
    assert defaults.fetch_max_wait_ms == 500
    monkeypatch.setenv("HIGHWATER_CONSUMER_GROUP_ID", "billing")
    monkeypatch.setenv("HIGHWATER_CONSUMER_AUTO_OFFSET_RESET", "earliest")
    settings = ConsumerSettings()
    assert (settings.group_id, settings.auto_offset_reset) == ("billing", "earliest")


def test_consumer_heartbeat_must_be_shorter_than_session() -> None:
    with pytest.raises(ValidationError, match="heartbeat_interval_ms must be less than session_timeout_ms"):
        ConsumerSettings(heartbeat_interval_ms=45000)


@pytest.mark.parametrize(("settings_class", "prefix"), [(ProducerSettings, "PRODUCER"), (ConsumerSettings, "CONSUMER")])
def test_security_options_come_from_the_clients_env_prefix_and_hide_the_password(
    settings_class: type[ProducerSettings] | type[ConsumerSettings], prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(f"HIGHWATER_{prefix}_USERNAME", "alice")
    monkeypatch.setenv(f"HIGHWATER_{prefix}_PASSWORD", "s3cret-pw")
    monkeypatch.setenv(f"HIGHWATER_{prefix}_SSL_CA_FILE", "/etc/highwater/ca.pem")
    settings = settings_class(ssl_cert_file="/c.pem", ssl_key_file="/k.pem")
    assert "s3cret-pw" not in repr(settings) and "s3cret-pw" not in str(settings)
    assert settings.security_options() == {
        "username": "alice",
        "password": "s3cret-pw",
        "ssl_ca_file": Path("/etc/highwater/ca.pem"),
        "ssl_cert_file": Path("/c.pem"),
        "ssl_key_file": Path("/k.pem"),
    }


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ({"username": "alice"}, "username and password go together"),
        ({"password": "s3cret-pw"}, "username and password go together"),
        ({"ssl_key_file": "/k.pem"}, "ssl_key_file needs ssl_cert_file"),
    ],
)
def test_half_given_security_options_are_refused(given: dict, problem: str) -> None:
    with pytest.raises(ValidationError, match=problem) as caught:
        ProducerSettings(**given)
    assert "s3cret-pw" not in str(caught.value)
