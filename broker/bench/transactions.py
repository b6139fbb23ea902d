"""``highwater bench transactions``: what a transaction costs, through librdkafka or highwater's producer.

Two runs on the same topic, one after the other, each sending ``count`` records of
``record_size`` bytes round-robin over the partitions with acks=all from one producer:
confluent-kafka's through the Kafka listeners (``run``), or highwater's Python producer
over HTTP (``run_http``, the same calls in aiokafka's shape):

- **idempotent**: ``enable.idempotence`` on, no transactions: the reference (timed from
  after a first record per partition, so both runs start connected, with a producer id);
- **transactional**: the same records in transactions of ``per_transaction`` records,
  each committed (``begin_transaction``, ``produce``…, ``commit_transaction``).

It prints the records/s of both, their ratio, and the commit latency (the time
``commit_transaction`` takes: the outstanding records acknowledged, EndTxn durable on
``__transaction_state``) at p50/p99. The commit returns once the outcome is decided; the
markers follow (``docs/transactions.md``), so a reader's view lags it by their write.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from broker.bench.stats import percentile

LINGER_MS = 5
FLUSH_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class TransactionFigures:
    idempotent_records_per_s: float
    transactional_records_per_s: float
    transactions: int
    commit_p50_ms: float
    commit_p99_ms: float

    @property
    def ratio(self) -> float:
        return self.transactional_records_per_s / self.idempotent_records_per_s


def _producer(bootstrap: str, extra: dict[str, Any]) -> Any:
    from confluent_kafka import Producer

    return Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": LINGER_MS, **extra})


def _send(producer: Any, topic: str, partitions: int, value: bytes, start: int, count: int) -> None:
    for i in range(start, start + count):
        while True:
            try:
                producer.produce(topic, value, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 1000 == 0:
            producer.poll(0)


def run(
    bootstrap: str, topic: str, partitions: int, count: int, record_size: int, per_transaction: int
) -> TransactionFigures:
    """Both runs; raises ``RuntimeError`` naming the first delivery error."""
    value = b"x" * record_size
    errors: list[str] = []

    def delivered(error: Any, message: Any) -> None:
        if error is not None and not errors:
            errors.append(str(error))

    idempotent = _producer(bootstrap, {"enable.idempotence": True, "on_delivery": delivered})
    _send(idempotent, topic, partitions, value, 0, partitions)  # connected, producer id held: the clock starts warm
    idempotent.flush(FLUSH_TIMEOUT_S)
    started = time.perf_counter()
    _send(idempotent, topic, partitions, value, 0, count)
    idempotent.flush(FLUSH_TIMEOUT_S)
    idempotent_s = time.perf_counter() - started

    transactional = _producer(
        bootstrap, {"transactional.id": f"bench-{topic}", "on_delivery": delivered, "transaction.timeout.ms": 60_000}
    )
    transactional.init_transactions(30)
    commits_ms = []
    started = time.perf_counter()
    for first in range(0, count, per_transaction):
        transactional.begin_transaction()
        _send(transactional, topic, partitions, value, first, min(per_transaction, count - first))
        committing = time.perf_counter()
        transactional.commit_transaction(FLUSH_TIMEOUT_S)
        commits_ms.append((time.perf_counter() - committing) * 1000)
    transactional_s = time.perf_counter() - started
    if errors:
        raise RuntimeError(f"a record was not delivered: {errors[0]}")
    return _figures(count, idempotent_s, transactional_s, commits_ms)


def _figures(count: int, idempotent_s: float, transactional_s: float, commits_ms: list[float]) -> TransactionFigures:
    ordered = sorted(commits_ms)
    return TransactionFigures(
        idempotent_records_per_s=count / idempotent_s,
        transactional_records_per_s=count / transactional_s,
        transactions=len(commits_ms),
        commit_p50_ms=percentile(ordered, 50),
        commit_p99_ms=percentile(ordered, 99),
    )


async def run_http(
    urls: list[str],
    topic: str,
    partitions: int,
    count: int,
    record_size: int,
    per_transaction: int,
    client_options: dict[str, Any],
) -> TransactionFigures:
    """``run`` with highwater's ``Producer``; raises ``RuntimeError`` when a record was not delivered."""
    from producer import Producer

    value = b"x" * record_size
    async with Producer(urls, linger_ms=LINGER_MS, **client_options) as idempotent:
        for partition in range(partitions):  # connected, metadata and producer id held: the clock starts warm
            await idempotent.send(topic, value, partition=partition, want_future=False)
        await idempotent.flush()
        started = time.perf_counter()
        for i in range(count):
            await idempotent.send(topic, value, partition=i % partitions, want_future=False)
        await idempotent.flush()
        idempotent_s = time.perf_counter() - started
        failed = idempotent.failed_records
    commits_ms = []
    transactional = Producer(urls, linger_ms=LINGER_MS, transactional_id=f"bench-{topic}-http", **client_options)
    async with transactional:
        started = time.perf_counter()
        for first in range(0, count, per_transaction):
            transactional.begin_transaction()
            for i in range(first, min(first + per_transaction, count)):
                await transactional.send(topic, value, partition=i % partitions, want_future=False)
            committing = time.perf_counter()
            await transactional.commit_transaction()
            commits_ms.append((time.perf_counter() - committing) * 1000)
        transactional_s = time.perf_counter() - started
        failed += transactional.failed_records
    if failed:
        raise RuntimeError(f"{failed} records were not delivered")
    return _figures(count, idempotent_s, transactional_s, commits_ms)


def figures_document(figures: TransactionFigures, **settings: Any) -> dict[str, Any]:
    return {
        "settings": settings,
        "idempotent_records_per_s": round(figures.idempotent_records_per_s),
        "transactional_records_per_s": round(figures.transactional_records_per_s),
        "ratio": round(figures.ratio, 3),
        "transactions": figures.transactions,
        "commit_p50_ms": round(figures.commit_p50_ms, 2),
        "commit_p99_ms": round(figures.commit_p99_ms, 2),
    }
