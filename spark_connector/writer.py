"""The ``highwater`` sink: ``df.writeStream.format("highwater")`` and ``df.write.format("highwater")``.

Each Spark task produces its rows through the idempotent producer (``acks=all``) on
an event loop of its own and returns only after every record is acknowledged, so a
task that reports success has written everything durably.

Delivery is **exactly-once** by default (``deliveryGuarantee``): each task writes in a
transaction that stays open until Spark commits the batch, and the driver commits
every task's transaction then (``spark_connector.sink_transactions``); ``read_committed``
readers see each batch once, whole, however often a task or a batch was retried.
``deliveryGuarantee=at_least_once`` is Spark's Kafka sink's contract: a retried task
or a replayed micro-batch writes its rows again.

Columns: ``value`` (binary or string, required), ``key`` (binary or string),
``topic`` (string; else the ``topic`` option), ``partition`` (int; else the key's
murmur2 partition, or sticky when there is no key), ``headers``
(``array<struct<key string, value binary>>``).
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from broker.client.library_log import library_logger
from producer import Producer
from spark_connector.options import OptionError, SinkOptions
from spark_connector.sink_transactions import OpenTransaction, end_transactions, write_in_transaction

log = library_logger(__name__)

WRITABLE_COLUMNS = frozenset({"key", "value", "topic", "partition", "headers"})
BATCH_ID_PROPERTY = "streaming.sql.batchId"
QUERY_ID_PROPERTY = "sql.streaming.queryId"
"""The query's id: kept in its checkpoint, so the same across restarts (unlike its run id)."""


@dataclass
class SinkCommit(WriterCommitMessage):
    records: int
    transaction: OpenTransaction | None = None


def check_sink_schema(schema: StructType, options: SinkOptions) -> None:
    """Fail at ``start()``/``save()`` rather than in a task: a ``value`` column and a topic are needed."""
    names = set(schema.fieldNames())
    if "value" not in names:
        raise OptionError(f"the sink needs a 'value' column; the DataFrame has {sorted(names)}")
    if options.topic is None and "topic" not in names:
        raise OptionError("option 'topic' is required when the DataFrame has no 'topic' column")


def _as_bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)


def _headers(row: dict[str, Any]) -> list[tuple[str, bytes | None]]:
    return [(str(item["key"]), _as_bytes(item["value"])) for item in row.get("headers") or ()]


async def _send_rows(options: SinkOptions, producer: Producer, rows: Iterable[Any]) -> int:
    """Send every row and wait for every acknowledgement; how many, or the first delivery error."""
    count = 0
    deliveries = []
    for row in rows:
        fields = row.asDict(recursive=True)
        deliveries.append(
            await producer.send(
                options.topic_of(fields),
                _as_bytes(fields["value"]),
                key=_as_bytes(fields.get("key")),
                headers=_headers(fields),
                partition=fields.get("partition"),
            )
        )
        count += 1
    await producer.flush()
    for delivery in deliveries:
        delivery.result()
    return count


async def _produce(options: SinkOptions, rows: Iterable[Any]) -> int:
    async with Producer(
        list(options.servers),
        acks="all",
        enable_idempotence=True,
        linger_ms=options.linger_ms,
        batch_size=options.batch_size_bytes,
        **options.security.client_options(),
    ) as producer:
        return await _send_rows(options, producer, rows)


def produce_rows(options: SinkOptions, rows: Iterator[Any]) -> int:
    """Produce every row with ``acks=all``; return how many, or raise the first delivery error."""
    return asyncio.run(_produce(options, rows))


def write_task(options: SinkOptions, rows: Iterator[Any], prefix: str, batch_id: int | None) -> SinkCommit:
    """One task's rows: in a transaction left open for the driver (exactly once), or produced outright."""
    if not options.exactly_once:
        return SinkCommit(produce_rows(options, rows))
    transactional_id = f"{prefix}-{_task().partitionId()}"

    send = functools.partial(_send_rows, options)
    records, transaction = asyncio.run(write_in_transaction(options, rows, transactional_id, batch_id, send))
    return SinkCommit(records, transaction)


def _task() -> TaskContext:
    context = TaskContext.get()
    if context is None:
        raise RuntimeError("the highwater sink writes inside a Spark task only")
    return context


def _property(context: TaskContext, name: str) -> str:
    value = context.getLocalProperty(name)
    if value is None:
        raise RuntimeError(f"Spark set no {name!r} for this streaming task")
    return str(value)


def end_batch(options: SinkOptions, messages: list[WriterCommitMessage | None], commit: bool) -> int:
    """End the tasks' transactions as Spark ends the batch; the records the tasks wrote."""
    sunk = [message for message in messages if isinstance(message, SinkCommit)]
    end_transactions(options, [m.transaction for m in sunk if m.transaction is not None], commit)
    return sum(message.records for message in sunk)


class HighwaterStreamWriter(DataSourceStreamWriter):
    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Any]) -> SinkCommit:
        context = _task()
        prefix = self.options.transactional_id_prefix or f"spark-sink-{_property(context, QUERY_ID_PROPERTY)}"
        return write_task(self.options, iterator, prefix, int(_property(context, BATCH_ID_PROPERTY)))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        records = end_batch(self.options, messages, commit=True)
        log.debug("sink.batch_committed batch_id=%d records=%d", batchId, records)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        records = end_batch(self.options, messages, commit=False)
        log.warning("sink.batch_aborted batch_id=%d records_written=%d", batchId, records)


class HighwaterBatchWriter(DataSourceWriter):
    def __init__(self, options: SinkOptions) -> None:
        self.options = options
        self.prefix = options.transactional_id_prefix or f"spark-write-{uuid.uuid4().hex}"
        """One write's own ids: every attempt of a task shares its id, two writes never do."""

    def write(self, iterator: Iterator[Any]) -> SinkCommit:
        return write_task(self.options, iterator, self.prefix, None)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        records = end_batch(self.options, messages, commit=True)
        log.debug("sink.write_committed records=%d", records)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        records = end_batch(self.options, messages, commit=False)
        log.warning("sink.write_aborted records_written=%d", records)
