"""Kafka's client byte-rate quotas: a meter per principal and direction, and the throttle it earns.

Each meter counts bytes in ``samples`` buckets of ``sample_ms`` (Kafka's ``quota.window.num``
and ``quota.window.size.seconds``), aligned to multiples of ``sample_ms``. A bucket older
than ``samples × sample_ms`` is forgotten, so the rate is measured over the last
``samples × sample_ms`` at most: ``rate = bytes in the window / window span``.

The span is from the oldest bucket's start to now, but never shorter than
``samples - 1`` buckets (as Kafka's ``Rate.windowSize``): a new meter does not see its
first request as an enormous rate, so a principal may burst up to about ``quota × span``
before it is slowed.

Over the quota, the request is throttled by Kafka's formula
``(rate - quota) / quota × span``, that is ``bytes / quota - span``: the wait that would
spread the window's bytes at exactly the quota. The window also slides during the
wait, so one delay is not exact, but a client whose answers are delayed so keeps
to its quota over time (within 10 % in the tests, the initial burst included).

The throttle is capped at ``max_throttle_ms``; what the cap leaves unpaid stays in the
window and is owed by the next request. The hard limit, where a request is refused
(429, retry after ``refuse_ms``) instead of delayed:

* the principal already owes more than ``max_throttle_ms`` before this request (it sent
  concurrently, faster than its delayed answers could slow it): retry after the excess;
* the request alone is larger than ``quota × (samples - 1) × sample_ms``, the most a
  fresh meter lets through undelayed: retry after the time it would need beyond that.
  Such a request cannot be served at the quota at all: its own delay would outlast
  the window, which would then forget it and credit the next request with a fresh
  burst (the rate achieved by a client of such requests is well above its quota).
  Retrying does not help; a smaller request does.

A refused request's bytes are not counted, so a refusal never extends the penalty.
The rule is on what is owed, not on the throttle with the request added: a client
that sends one request at a time and waits for its answers starts each request
owing little, so it is slowed to its quota but not refused, even on a fresh meter
(whose minimum span makes the first delays short).

Bytes already served cannot be refused: ``record`` counts them and returns the throttle,
capped; the remainder is owed, and the next ``check`` may refuse on it.

Pure: no clock (time enters as ``now_ms``, from a monotonic clock), no I/O. Memory is
one meter per (principal, direction) that has a quota; ``retain`` forgets the others.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from broker.security.quota_limits import QuotaLimits

Direction = Literal["produce", "fetch"]


def limit_of(limits: QuotaLimits, direction: Direction) -> int | None:
    """The bytes per second ``limits`` allow in ``direction``; None for no limit."""
    return limits.producer_byte_rate if direction == "produce" else limits.consumer_byte_rate


@dataclass(frozen=True, slots=True)
class Throttle:
    """A decision: answer after ``delay_ms``, or refuse with ``refuse_ms`` > 0 (429, retry after it).

    ``rate`` is the measured bytes per second the decision was made on, this request included.
    Invariant: ``delay_ms`` and ``refuse_ms`` are not both > 0.
    """

    delay_ms: int = 0
    refuse_ms: int = 0
    rate: float = 0.0

    @property
    def refused(self) -> bool:
        return self.refuse_ms > 0


UNTHROTTLED = Throttle()


class _Meter:
    """Bytes per aligned bucket, oldest first; at most ``samples`` buckets."""

    __slots__ = ("buckets",)

    def __init__(self, samples: int) -> None:
        self.buckets: deque[list[int]] = deque(maxlen=samples)

    def purge(self, now_ms: int, window_ms: int) -> None:
        while self.buckets and self.buckets[0][0] <= now_ms - window_ms:
            self.buckets.popleft()

    def add(self, bucket_start: int, nbytes: int) -> None:
        if self.buckets and self.buckets[-1][0] == bucket_start:
            self.buckets[-1][1] += nbytes
        else:
            self.buckets.append([bucket_start, nbytes])

    def total(self) -> int:
        return sum(nbytes for _, nbytes in self.buckets)


class QuotaMeters:
    """The byte-rate meters of every principal with a quota, and the throttle decisions on them."""

    __slots__ = ("_meters", "max_throttle_ms", "sample_ms", "samples")

    def __init__(self, sample_ms: int = 1000, samples: int = 11, max_throttle_ms: int = 30_000) -> None:
        if sample_ms < 1 or samples < 2 or max_throttle_ms < 0:
            raise ValueError("a quota window has at least two samples of at least 1 ms; max throttle >= 0")
        self.sample_ms = sample_ms
        self.samples = samples
        self.max_throttle_ms = max_throttle_ms
        self._meters: dict[tuple[str, Direction], _Meter] = {}

    def check(self, principal: str, direction: Direction, limit: int, nbytes: int, now_ms: int) -> Throttle:
        """The decision on ``nbytes`` more at ``now_ms``, counting nothing."""
        measured, span = self._measure(principal, direction, now_ms)
        owed = _throttle_ms(measured, span, limit)
        alone = _throttle_ms(nbytes, self._min_span_ms, limit)
        rate = (measured + nbytes) * 1000 / span
        if owed > self.max_throttle_ms or alone > 0:
            return Throttle(refuse_ms=max(owed - self.max_throttle_ms, alone), rate=rate)
        return Throttle(delay_ms=min(_throttle_ms(measured + nbytes, span, limit), self.max_throttle_ms), rate=rate)

    def admit(self, principal: str, direction: Direction, limit: int, nbytes: int, now_ms: int) -> Throttle:
        """``check``, then count ``nbytes`` unless refused: for a request not yet served (produce)."""
        decision = self.check(principal, direction, limit, nbytes, now_ms)
        if not decision.refused:
            self._add(principal, direction, nbytes, now_ms)
        return decision

    def record(self, principal: str, direction: Direction, limit: int, nbytes: int, now_ms: int) -> Throttle:
        """Count ``nbytes`` already served (fetch); the throttle, capped at ``max_throttle_ms``, never refused."""
        self._add(principal, direction, nbytes, now_ms)
        measured, span = self._measure(principal, direction, now_ms)
        delay_ms = min(_throttle_ms(measured, span, limit), self.max_throttle_ms)
        return Throttle(delay_ms=delay_ms, rate=measured * 1000 / span)

    def retain(self, quotas: Mapping[str, QuotaLimits]) -> None:
        """Forget the meters of principals and directions ``quotas`` no longer limit."""
        for key in list(self._meters):
            limits = quotas.get(key[0])
            if limits is None or limit_of(limits, key[1]) is None:
                del self._meters[key]

    def __len__(self) -> int:
        """The number of meters kept."""
        return len(self._meters)

    @property
    def _min_span_ms(self) -> int:
        return (self.samples - 1) * self.sample_ms

    def _measure(self, principal: str, direction: Direction, now_ms: int) -> tuple[int, int]:
        """The bytes in the window at ``now_ms`` and the span (ms) they are measured over."""
        meter = self._current(principal, direction, now_ms)
        if meter is None:
            return 0, self._min_span_ms
        return meter.total(), max(now_ms - meter.buckets[0][0], self._min_span_ms)

    def _current(self, principal: str, direction: Direction, now_ms: int) -> _Meter | None:
        meter = self._meters.get((principal, direction))
        if meter is None:
            return None
        meter.purge(now_ms, self.sample_ms * self.samples)
        if not meter.buckets:
            del self._meters[(principal, direction)]
            return None
        return meter

    def _add(self, principal: str, direction: Direction, nbytes: int, now_ms: int) -> None:
        meter = self._meters.get((principal, direction))
        if meter is None:
            meter = self._meters[(principal, direction)] = _Meter(self.samples)
        meter.add(now_ms - now_ms % self.sample_ms, nbytes)


def _throttle_ms(total: int, span_ms: int, limit: int) -> int:
    """Kafka's ``(rate - quota) / quota × span``, i.e. ``total / quota - span``, rounded up; 0 when under."""
    return max(0, -(-total * 1000 // limit) - span_ms)
