"""The exactly-once sink: each task writes in a transaction that Spark's commit of the batch commits.

Two phases, as Spark's writer API splits them:

1. ``write_in_transaction`` (a task, on an executor): initialise the task's transactional
   id (``<prefix>-<task partition>``, the same for every attempt and every batch of a
   query), which fences any earlier attempt and aborts what it left open; write the rows
   in a transaction, acknowledged by every in-sync replica; leave it **open** and return
   its producer id and epoch in the commit message.
2. ``end_transactions`` (the driver, in ``commit``/``abort``): end every task's
   transaction with those ids, COMMIT when Spark commits the batch, ABORT when it aborts
   it. EndTxn is idempotent, so a driver that retries it after a lost answer is safe.

A streaming batch that was committed here but not yet in Spark's commit log (the driver
died in between) is replayed by Spark after a restart, task by task with the same rows.
So each task's transaction also commits a marker, ``batch <id>``, as the metadata of an
offset (0, on partition 0 of the first row's topic) in the consumer group named like the
task's transactional id (a TxnOffsetCommit: it applies exactly when the rows do). A
replayed task reads the marker first and writes nothing for a batch already committed.
The read comes after the task's InitProducerId, which completes the id's previous
transaction (markers written, offsets applied) before it answers, so the marker read is
never older than the rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from broker.client.groups import GroupClient
from broker.client.http import ClusterClient
from broker.client.library_log import library_logger
from broker.client.retrying import retrying
from broker.client.transactions import TransactionClient
from broker.client.types import OffsetAndMetadata, TopicPartition
from broker.errors import HighwaterError
from producer import Producer
from spark_connector.options import SinkOptions

log = library_logger(__name__)

END_TIMEOUT_MS = 60_000
"""How long the driver retries ending a transaction on retriable answers (no coordinator yet)."""
RETRY_BACKOFF_MS = 200


@dataclass(frozen=True)
class OpenTransaction:
    """A task's transaction, written and acknowledged, left open for the driver to end."""

    transactional_id: str
    producer_id: int
    producer_epoch: int


def batch_marker(batch_id: int) -> str:
    return f"batch {batch_id}"


def committed_batch(metadata: str) -> int | None:
    """The batch id a marker names (None for anything else)."""
    kind, _, number = metadata.partition(" ")
    return int(number) if kind == "batch" and number.isdigit() else None


async def write_in_transaction(
    options: SinkOptions,
    rows: Iterator[Any],
    transactional_id: str,
    batch_id: int | None,
    send_rows: Callable[[Producer, Iterator[Any]], Awaitable[int]],
) -> tuple[int, OpenTransaction | None]:
    """Write ``rows`` in a transaction of ``transactional_id`` and leave it open: (records, the transaction).

    ``batch_id`` (streaming) marks the batch inside the transaction and skips a batch this task
    already committed; ``send_rows(producer, rows)`` sends and returns how many.
    """
    first = next(rows, None)
    if first is None:
        return 0, None
    producer = Producer(
        list(options.servers),
        transactional_id=transactional_id,
        transaction_timeout_ms=options.transaction_timeout_ms,
        linger_ms=options.linger_ms,
        batch_size=options.batch_size_bytes,
        **options.security.client_options(),
    )
    try:
        await producer.start()
        marker_key = TopicPartition(options.topic_of(first.asDict()), 0)
        if batch_id is not None and await _already_committed(producer, transactional_id, marker_key, batch_id):
            log.info("sink.batch_already_committed transactional_id=%s batch_id=%d", transactional_id, batch_id)
            return 0, None
        producer.begin_transaction()
        count = await send_rows(producer, itertools.chain([first], rows))
        if batch_id is not None:
            marker = {marker_key: OffsetAndMetadata(0, batch_marker(batch_id))}
            await producer.send_offsets_to_transaction(marker, transactional_id)
        await producer.flush()
        assert producer.producer_identity is not None
        producer_id, epoch = producer.producer_identity
        return count, OpenTransaction(transactional_id, producer_id, epoch)
    except BaseException:
        if producer.in_transaction:
            with contextlib.suppress(HighwaterError):
                await producer.abort_transaction()
        raise
    finally:
        await producer.close()


async def _already_committed(producer: Producer, group_id: str, marker_key: TopicPartition, batch_id: int) -> bool:
    committed = await GroupClient(producer.client).committed_with_metadata(group_id, marker_key.topic)
    entry = committed.get(marker_key)
    done = committed_batch(entry.metadata) if entry is not None else None
    return done is not None and done >= batch_id


def end_transactions(options: SinkOptions, transactions: list[OpenTransaction], commit: bool) -> None:
    """End every task's transaction from the driver (COMMIT or ABORT), retrying retriable answers."""
    if transactions:
        asyncio.run(_end_all(options, transactions, commit))


async def _end_all(options: SinkOptions, transactions: list[OpenTransaction], commit: bool) -> None:
    client = ClusterClient(list(options.servers), **options.security.client_options())
    try:
        await asyncio.gather(*(_end(client, transaction, commit) for transaction in transactions))
    finally:
        await client.close()


async def _end(client: ClusterClient, transaction: OpenTransaction, commit: bool) -> None:
    calls = TransactionClient(client, transaction.transactional_id)
    producer = (transaction.producer_id, transaction.producer_epoch)
    await retrying(lambda: calls.end(producer, commit), END_TIMEOUT_MS, RETRY_BACKOFF_MS)
