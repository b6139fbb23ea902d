"""The order in which a client asks its brokers, with time passed in (no clock, no sleeping)."""

from __future__ import annotations

import random

from broker.client.unresponsive import UnresponsiveServers, server_of

A, B, C = "http://a:1", "http://b:2", "http://c:3"
BACKOFF_MS = 30_000


def test_servers_that_never_failed_keep_their_given_order() -> None:
    servers = UnresponsiveServers(BACKOFF_MS)
    assert servers.in_order([A, B, C], now_ms=0) == [A, B, C]
    assert servers.in_order([C, A], now_ms=0) == [C, A]


def test_a_server_that_gave_no_answer_is_asked_last_until_its_backoff_ends() -> None:
    servers = UnresponsiveServers(BACKOFF_MS)
    servers.no_answer(A, now_ms=1_000)
    assert servers.in_order([A, B, C], now_ms=1_000) == [B, C, A]
    assert servers.in_order([A, B, C], now_ms=1_000 + BACKOFF_MS - 1) == [B, C, A]
    assert servers.in_order([A, B, C], now_ms=1_000 + BACKOFF_MS) == [A, B, C]


def test_any_answer_forgives_at_once() -> None:
    servers = UnresponsiveServers(BACKOFF_MS)
    servers.no_answer(A, now_ms=0)
    servers.answered(A)
    assert servers.in_order([A, B], now_ms=1) == [A, B]


def test_a_new_failure_restarts_the_backoff() -> None:
    servers = UnresponsiveServers(BACKOFF_MS)
    servers.no_answer(A, now_ms=0)
    servers.no_answer(A, now_ms=20_000)
    assert servers.in_order([A, B], now_ms=BACKOFF_MS) == [B, A]
    assert servers.in_order([A, B], now_ms=20_000 + BACKOFF_MS) == [A, B]


def test_backed_off_servers_come_in_the_order_their_backoff_ends() -> None:
    servers = UnresponsiveServers(BACKOFF_MS)
    servers.no_answer(C, now_ms=0)
    servers.no_answer(A, now_ms=5_000)
    assert servers.in_order([A, B, C], now_ms=6_000) == [B, C, A]


def test_when_every_server_failed_every_one_is_still_asked() -> None:
    servers = UnresponsiveServers(BACKOFF_MS)
    servers.no_answer(B, now_ms=0)
    servers.no_answer(A, now_ms=1)
    assert servers.in_order([A, B], now_ms=2) == [B, A]


def test_every_url_on_one_server_shares_its_fate() -> None:
    servers = UnresponsiveServers(BACKOFF_MS)
    servers.no_answer("http://A:1/v3/clusters/c1/topics/t/partitions/0/batches?acks=all", now_ms=0)
    assert servers.in_order([A, B], now_ms=1) == [B, A]
    servers.answered(A + "/v3/clusters")
    assert servers.in_order([A, B], now_ms=1) == [A, B]
    assert server_of("https://b:2/") != server_of("http://b:2/")


def test_the_order_is_always_a_permutation_with_the_trusted_first() -> None:
    rng = random.Random(11)
    urls = [f"http://h{index}:9092" for index in range(5)]
    servers = UnresponsiveServers(BACKOFF_MS)
    now_ms = 0
    for _ in range(2_000):
        now_ms += rng.randrange(0, 10_000)
        url = rng.choice(urls)
        if rng.random() < 0.5:
            servers.no_answer(url, now_ms)
        else:
            servers.answered(url)
        asked = rng.sample(urls, rng.randint(0, len(urls)))
        order = servers.in_order(asked, now_ms)
        assert sorted(order) == sorted(asked)
        flags = [servers.backed_off(server, now_ms) for server in order]
        assert flags == sorted(flags), "no trusted server after a backed-off one"
        trusted = [server for server, flag in zip(order, flags) if not flag]
        assert trusted == [server for server in asked if not servers.backed_off(server, now_ms)]
