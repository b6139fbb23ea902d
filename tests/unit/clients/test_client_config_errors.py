"""A refused client setting is one ``ClientConfigError`` line naming it, the value given and what is allowed.

Building a ``Producer`` or ``Consumer`` sends nothing (the HTTP session opens on first
use), so these run without a broker; the sync facades refuse the same way before their
loop thread connects anywhere.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from broker.client.errors import ClientConfigError
from config.client import ConsumerSettings, ProducerSettings
from consumer import Consumer, SyncConsumer
from producer import Producer, SyncProducer

URL = "http://127.0.0.1:9092"
Client = Callable[..., object]


def _refusal(client: Client, *args: Any, **settings: Any) -> ClientConfigError:
    with pytest.raises(ClientConfigError) as raised:
        client(*args, **settings)
    return raised.value


@pytest.mark.parametrize(
    ("client", "settings", "message"),
    [
        (Producer, {"acks": 2}, 'acks=2 is not valid: use 0, 1 or "all"'),
        (Producer, {"lingr_ms": 5}, "lingr_ms is not a producer setting: did you mean linger_ms?"),
        (Producer, {"linger_ms": -1}, "linger_ms=-1 is not valid: use an integer >= 0"),
        (
            Producer,
            {"compression": "snappy"},
            'compression=\'snappy\' is not valid: use "none", "gzip", "lz4" or "zstd"',
        ),
        (Producer, {"max_queue_ms": "soon"}, "max_queue_ms='soon' is not valid: use an integer >= 0 or None"),
        (Producer, {"enable_idempotence": "maybe"}, "enable_idempotence='maybe' is not valid: use True or False"),
        (
            Producer,
            {"acks": 1, "enable_idempotence": True},
            "producer settings are not valid: enable_idempotence needs acks='all' (got acks='1')",
        ),
        (
            Consumer,
            {"auto_offset_reset": "first"},
            'auto_offset_reset=\'first\' is not valid: use "earliest", "latest" or "none"',
        ),
        (
            Consumer,
            {"session_timeout_ms": 10},
            "session_timeout_ms=10 is not valid: use an integer from 100 to 3600000",
        ),
        (Consumer, {"group_ld": "billing"}, "group_ld is not a consumer setting: did you mean group_id?"),
        (SyncProducer, {"acks": 2}, 'acks=2 is not valid: use 0, 1 or "all"'),
        (
            SyncConsumer,
            {"max_poll_recs": 10},
            "max_poll_recs is not a consumer setting: did you mean max_poll_records?",
        ),
    ],
)
def test_a_refused_setting_is_one_line_naming_it_the_value_and_what_is_allowed(
    client: Client, settings: dict[str, Any], message: str
) -> None:
    refusal = _refusal(client, URL, **settings)
    assert str(refusal) == message
    assert isinstance(refusal, ValueError), "except ValueError still catches it"
    assert refusal.__cause__ is None and refusal.__context__ is None, "no pydantic report chained below it"


@pytest.mark.parametrize(
    ("client", "model"),
    [(Producer, ProducerSettings), (Consumer, ConsumerSettings), (SyncProducer, ProducerSettings)],
    ids=["Producer", "Consumer", "SyncProducer"],
)
def test_every_setting_is_refused_in_the_clients_words(client: Client, model: type[ProducerSettings]) -> None:
    for name in model.model_fields:
        if name == "bootstrap_servers":
            continue
        refusal = _refusal(client, URL, **{name: object()})
        assert refusal.settings == (name,)
        assert str(refusal).startswith(name) and " is not valid: use " in str(refusal), str(refusal)
        assert "pydantic" not in str(refusal) and "\n" not in str(refusal)


def test_several_refused_settings_are_named_in_one_line() -> None:
    refusal = _refusal(Producer, URL, acks=2, linger_ms=-5)
    assert refusal.settings == ("acks", "linger_ms")
    assert str(refusal) == 'acks=2 is not valid: use 0, 1 or "all"; linger_ms=-5 is not valid: use an integer >= 0'


def test_a_value_from_the_environment_is_named_by_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIGHWATER_CONSUMER_FETCH_MAX_WAIT_MS", "soon")
    refusal = _refusal(Consumer, URL)
    assert str(refusal) == "HIGHWATER_CONSUMER_FETCH_MAX_WAIT_MS='soon' is not valid: use an integer >= 0"


@pytest.mark.parametrize(
    ("servers", "message"),
    [
        (
            "localhost:9092",
            "servers='localhost:9092' is not valid: 'localhost:9092' must start with http:// or https://",
        ),
        (
            9092,
            'servers=9092 is not valid: use a broker URL ("http://127.0.0.1:9092"), several separated by commas, '
            "or a list of URLs",
        ),
    ],
)
def test_the_servers_argument_is_refused_by_its_name(servers: object, message: str) -> None:
    assert str(_refusal(Producer, servers)) == message
    assert str(_refusal(Consumer, servers)) == message


def test_no_secret_is_shown() -> None:
    wrong_type = _refusal(Producer, URL, username="alice", password=12345)
    assert str(wrong_type) == "password (value not shown) is not valid: use a string or None"
    misspelt = _refusal(Consumer, URL, username="alice", pasword="hunter2")
    assert "hunter2" not in str(misspelt) and "did you mean password?" in str(misspelt)


def test_a_setting_without_a_near_miss_lists_the_settings() -> None:
    refusal = _refusal(Consumer, URL, colour="blue")
    assert str(refusal).startswith("colour is not a consumer setting; the settings are auto_commit_interval_ms, ")
    assert "group_id" in str(refusal) and "bootstrap_servers" not in str(refusal)


def test_the_sync_facades_stop_their_loop_thread_when_refused() -> None:
    before = {thread.name for thread in threading.enumerate()}
    _refusal(SyncProducer, URL, acks=2)
    _refusal(SyncConsumer, URL, auto_offset_reset="first")
    assert {thread.name for thread in threading.enumerate()} <= before


def test_bootstrap_servers_as_a_keyword_points_to_the_servers_argument() -> None:
    refusal = _refusal(Producer, URL, bootstrap_servers="http://elsewhere:9092")
    assert str(refusal) == (
        "bootstrap_servers is not a producer setting: give the broker URLs as servers, the first argument"
    )
