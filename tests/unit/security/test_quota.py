"""Byte-rate quotas: Kafka's windowed rate, the throttle that brings a client back to its quota, the hard limit."""

from __future__ import annotations

import pytest

from broker.security.quota import QuotaMeters, Throttle, limit_of
from broker.security.quota_limits import QuotaLimits

ALICE = "User:alice"
BOB = "User:bob"
T0 = 1_000_000
QUOTA = 10_000
"""Bytes per second: with the default window (11 × 1 s) a fresh meter takes 100 kB before it throttles."""


def produced(meters: QuotaMeters, principal: str, nbytes: int) -> None:
    """``nbytes`` admitted at ``T0`` in requests of at most a fresh meter's burst."""
    for _ in range(nbytes // 100_000):
        assert not meters.admit(principal, "produce", QUOTA, 100_000, T0).refused


def run_client(meters: QuotaMeters, size: int, duration_ms: int, service_ms: int = 1) -> list[tuple[int, int]]:
    """A producer that sends ``size`` bytes as soon as its previous answer arrives: (send time, delay) each."""
    sent, now = [], T0
    while now < T0 + duration_ms:
        decision = meters.admit(ALICE, "produce", QUOTA, size, now)
        assert not decision.refused
        sent.append((now, decision.delay_ms))
        now += service_ms + decision.delay_ms
    return sent


def test_under_the_quota_nothing_is_delayed() -> None:
    meters = QuotaMeters()
    decisions = [meters.admit(ALICE, "produce", QUOTA, QUOTA // 2, T0 + i * 1000) for i in range(60)]
    assert all(decision == Throttle(0, 0, decision.rate) for decision in decisions)
    assert max(decision.rate for decision in decisions) <= QUOTA


def test_a_fresh_meter_measures_over_the_minimum_span_so_a_burst_of_quota_times_span_passes() -> None:
    meters = QuotaMeters()
    assert meters.admit(ALICE, "produce", QUOTA, QUOTA * 10, T0).delay_ms == 0
    assert meters.admit(ALICE, "produce", QUOTA, QUOTA * 5, T0).delay_ms == 5_000


def test_the_throttle_is_kafkas_formula() -> None:
    meters = QuotaMeters()
    meters.admit(ALICE, "produce", QUOTA, 100_000, T0)
    decision = meters.admit(ALICE, "produce", QUOTA, 50_000, T0)
    span_ms = 10_000
    assert decision.rate == 15_000
    assert decision.delay_ms == (decision.rate - QUOTA) / QUOTA * span_ms == 5_000


def test_a_sustained_over_rate_client_converges_to_its_quota() -> None:
    meters = QuotaMeters()
    sent = run_client(meters, size=5_000, duration_ms=300_000)
    assert sum(delay for _, delay in sent) > 200_000
    late = [(at, delay) for at, delay in sent if at >= T0 + 60_000]
    elapsed_ms = late[-1][0] + late[-1][1] - late[0][0]
    achieved = len(late) * 5_000 * 1000 / elapsed_ms
    assert achieved == pytest.approx(QUOTA, rel=0.05)
    overall = len(sent) * 5_000 * 1000 / (sent[-1][0] + sent[-1][1] - T0)
    assert QUOTA * 0.95 <= overall <= QUOTA * 1.1


def test_the_window_slides_old_buckets_are_forgotten() -> None:
    meters = QuotaMeters()
    meters.admit(ALICE, "produce", QUOTA, 100_000, T0)
    meters.admit(ALICE, "produce", QUOTA, 100_000, T0 + 5_000)
    assert meters.check(ALICE, "produce", QUOTA, 0, T0 + 10_000).delay_ms == 10_000
    assert meters.check(ALICE, "produce", QUOTA, 0, T0 + 11_000).delay_ms == 0
    assert meters.check(ALICE, "produce", QUOTA, 0, T0 + 11_000).rate == 10_000
    assert meters.check(ALICE, "produce", QUOTA, 0, T0 + 16_000) == Throttle()
    assert len(meters) == 0


def test_bytes_of_one_bucket_add_up() -> None:
    meters = QuotaMeters(sample_ms=100, samples=3)
    for offset_ms in (0, 10, 99):
        meters.admit(ALICE, "produce", QUOTA, 1_000, T0 + offset_ms)
    assert meters.check(ALICE, "produce", QUOTA, 0, T0 + 99).rate == 3_000 * 1000 / 200


def test_a_throttle_beyond_the_maximum_is_capped_and_the_rest_is_owed() -> None:
    meters = QuotaMeters(max_throttle_ms=30_000)
    for _ in range(3):
        meters.admit(ALICE, "produce", QUOTA, 100_000, T0)
    assert meters.admit(ALICE, "produce", QUOTA, 100_000, T0).delay_ms == 30_000
    assert meters.admit(ALICE, "produce", QUOTA, 100_000, T0).delay_ms == 30_000
    assert meters.check(ALICE, "produce", QUOTA, 0, T0).refuse_ms == 50_000 - 10_000 - 30_000


def test_owing_more_than_the_maximum_refuses_with_the_excess_and_the_refusal_is_not_counted() -> None:
    meters = QuotaMeters(max_throttle_ms=30_000)
    for _ in range(5):
        meters.admit(ALICE, "produce", QUOTA, 90_000, T0)
    before = meters.check(ALICE, "produce", QUOTA, 0, T0)
    refused = meters.admit(ALICE, "produce", QUOTA, 1_000, T0)
    assert refused.refused and refused.delay_ms == 0
    assert refused.refuse_ms == before.refuse_ms == 45_000 - 10_000 - 30_000
    assert refused.rate == 451_000 / 10
    assert meters.check(ALICE, "produce", QUOTA, 0, T0) == before
    assert not meters.admit(ALICE, "produce", QUOTA, 1_000, T0 + 11_000).refused


def test_one_request_larger_than_a_fresh_meters_burst_is_refused_and_not_counted() -> None:
    meters = QuotaMeters(max_throttle_ms=30_000)
    burst = QUOTA * 10
    assert meters.admit(BOB, "produce", QUOTA, burst, T0) == Throttle(rate=QUOTA)
    refused = meters.admit(ALICE, "produce", QUOTA, burst + 5_000, T0)
    assert refused.refuse_ms == 500
    assert meters.check(ALICE, "produce", QUOTA, 0, T0) == Throttle()
    assert meters.admit(ALICE, "produce", QUOTA, burst + 5_000, T0 + 60_000).refused


def test_concurrent_requests_are_delayed_more_and_more_then_refused() -> None:
    meters = QuotaMeters()
    decisions = [meters.admit(ALICE, "produce", QUOTA, 20_000, T0) for _ in range(30)]
    delays = [decision.delay_ms for decision in decisions if not decision.refused]
    assert delays == sorted(delays) and delays[-1] == 30_000
    assert len(delays) == 21 and all(decision.refused for decision in decisions[21:])


@pytest.mark.parametrize("size", [1_000, 30_000, 100_000])
def test_a_sequential_client_is_slowed_to_its_quota_and_never_refused(size: int) -> None:
    meters = QuotaMeters()
    sent = run_client(meters, size=size, duration_ms=600_000)
    achieved = len(sent) * size * 1000 / (sent[-1][0] + sent[-1][1] - T0)
    assert QUOTA * 0.95 <= achieved <= QUOTA * 1.1


def test_served_bytes_are_counted_never_refused_the_delay_capped_the_rest_owed_until_they_age_out() -> None:
    meters = QuotaMeters(max_throttle_ms=30_000)
    served = meters.record(ALICE, "fetch", QUOTA, 600_000, T0)
    assert served == Throttle(delay_ms=30_000, rate=60_000)
    owed = meters.check(ALICE, "fetch", QUOTA, 0, T0)
    assert owed.refuse_ms == 60_000 - 10_000 - 30_000
    assert meters.check(ALICE, "fetch", QUOTA, 0, T0 + 11_000) == Throttle()


def test_directions_and_principals_are_metered_apart() -> None:
    meters = QuotaMeters()
    produced(meters, ALICE, 200_000)
    assert meters.check(ALICE, "fetch", QUOTA, 0, T0) == Throttle()
    assert meters.check(BOB, "produce", QUOTA, 0, T0) == Throttle()
    assert meters.check(ALICE, "produce", QUOTA, 0, T0).delay_ms == 10_000


def test_a_changed_limit_applies_to_the_bytes_already_measured() -> None:
    meters = QuotaMeters()
    meters.admit(ALICE, "produce", QUOTA, 100_000, T0)
    assert meters.check(ALICE, "produce", QUOTA, 0, T0).delay_ms == 0
    assert meters.check(ALICE, "produce", QUOTA // 2, 0, T0).delay_ms == 10_000


def test_retain_forgets_meters_of_removed_quotas_and_unlimited_directions() -> None:
    meters = QuotaMeters()
    for principal in (ALICE, BOB, "User:carol"):
        produced(meters, principal, 200_000)
        meters.record(principal, "fetch", QUOTA, 200_000, T0)
    meters.retain({ALICE: QuotaLimits(QUOTA, QUOTA), BOB: QuotaLimits(None, QUOTA)})
    assert len(meters) == 3
    assert meters.check(BOB, "produce", QUOTA, 0, T0) == Throttle()
    assert meters.check("User:carol", "fetch", QUOTA, 0, T0) == Throttle()
    assert meters.check(BOB, "fetch", QUOTA, 0, T0).delay_ms == 10_000
    assert meters.check(ALICE, "produce", QUOTA, 0, T0).delay_ms == 10_000


def test_limit_of_names_kafkas_fields() -> None:
    limits = QuotaLimits(producer_byte_rate=1, consumer_byte_rate=None)
    assert (limit_of(limits, "produce"), limit_of(limits, "fetch")) == (1, None)


@pytest.mark.parametrize(
    "arguments", [{"sample_ms": 0}, {"samples": 1}, {"max_throttle_ms": -1}], ids=["sample", "samples", "max"]
)
def test_a_window_needs_two_samples_of_positive_length(arguments: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="two samples"):
        QuotaMeters(**arguments)
