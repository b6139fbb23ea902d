"""The replication quota's rule: throttled replicas move at the rate, never faster over a span, never throttled in sync."""

from __future__ import annotations

import pytest

from broker.replication.throttle import BURST_S, MIN_ROUND_BYTES, ReplicationQuota, is_throttled


def test_only_an_adding_replica_out_of_the_isr_is_throttled() -> None:
    assert is_throttled(4, adding_replicas=[4], isr=[1, 2, 3])
    assert not is_throttled(4, adding_replicas=[4], isr=[1, 2, 3, 4])
    assert not is_throttled(2, adding_replicas=[4], isr=[1, 3])
    assert not is_throttled(4, adding_replicas=[], isr=[1, 2, 3])


def test_an_unlimited_quota_never_makes_anyone_wait() -> None:
    quota = ReplicationQuota()
    quota.record(10**12, now=0.0)
    assert quota.wait_s(0.0) == 0
    assert quota.round_bytes(1 << 20) == 1 << 20


def test_a_debt_is_paid_at_the_rate() -> None:
    quota = ReplicationQuota(rate=1000)
    assert quota.wait_s(0.0) == 0
    quota.record(2500, now=0.0)
    assert quota.wait_s(0.0) == pytest.approx(2.5)
    assert quota.wait_s(1.0) == pytest.approx(1.5)
    assert quota.wait_s(2.5) == 0


def test_a_copy_that_always_fetches_moves_at_the_rate() -> None:
    """Fetch a round whenever the quota allows, each round as large as it may ask: the bytes over time is the rate."""
    rate, now, moved = 1_000_000, 0.0, 0
    quota = ReplicationQuota(rate=rate)
    while moved < 20_000_000:
        now += quota.wait_s(now)
        chunk = quota.round_bytes(1 << 20)
        quota.record(chunk, now)
        moved += chunk
        now += 0.001
    assert moved / now == pytest.approx(rate, rel=0.02)


def test_a_quiet_quota_saves_up_only_its_burst() -> None:
    quota = ReplicationQuota(rate=1000)
    quota.record(0, now=0.0)
    quota.record(int(1000 * BURST_S), now=3600.0)
    assert quota.wait_s(3600.0) == 0
    quota.record(1, now=3600.0)
    assert quota.wait_s(3600.0) > 0


def test_a_round_asks_for_a_tenth_of_a_second_of_the_rate_but_never_less_than_the_floor() -> None:
    assert ReplicationQuota(rate=10_000_000).round_bytes(1 << 20) == 1_000_000
    assert ReplicationQuota(rate=100_000_000).round_bytes(1 << 20) == 1 << 20
    assert ReplicationQuota(rate=1000).round_bytes(1 << 20) == MIN_ROUND_BYTES


def test_a_rate_of_zero_holds_throttled_replicas_until_it_changes() -> None:
    quota = ReplicationQuota(rate=0)
    quota.record(1, now=0.0)
    assert quota.wait_s(100.0) == float("inf")
    quota.rate = None
    assert quota.wait_s(100.0) == 0


def test_a_lower_rate_takes_effect_on_the_debt_already_owed() -> None:
    quota = ReplicationQuota(rate=1000)
    quota.record(1000, now=0.0)
    quota.rate = 500
    assert quota.wait_s(0.0) == pytest.approx(2.0)
