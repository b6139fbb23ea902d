"""The ``highwater`` sink: ``df.writeStream.format("highwater")`` and ``df.write.format("highwater")``.

Each Spark task produces its rows through the idempotent producer (``acks=all``) on
an event loop of its own and returns only after every record is acknowledged, so a
task that reports success has written everything durably.

Delivery is **at-least-once**, as with Spark's Kafka sink: the producer's idempotence
removes duplicates of a retried *request*, but a retried *task* (or a micro-batch
replayed after a driver crash) starts a new producer and writes its rows again.
Readers that need exactly-once deduplicate on a key.

Columns: ``value`` (binary or string, required), ``key`` (binary or string),
``topic`` (string; else the ``topic`` option), ``partition`` (int; else the key's
murmur2 partition, or sticky when there is no key), ``headers``
(``array<struct<key string, value binary>>``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from broker.client.library_log import library_logger
from producer import Producer
from spark_connector.options import OptionError, SinkOptions

log = library_logger(__name__)

WRITABLE_COLUMNS = frozenset({"key", "value", "topic", "partition", "headers"})


@dataclass
class SinkCommit(WriterCommitMessage):
    records: int


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


async def _produce(options: SinkOptions, rows: Iterable[Any]) -> int:
    count = 0
    async with Producer(
        list(options.servers),
        acks="all",
        enable_idempotence=True,
        linger_ms=options.linger_ms,
        batch_size=options.batch_size_bytes,
        **options.security.client_options(),
    ) as producer:
        deliveries = []
        for row in rows:
            fields = row.asDict(recursive=True)
            topic = fields.get("topic") or options.topic
            if topic is None:
                raise OptionError("a row has a null 'topic' and option 'topic' is not set")
            deliveries.append(
                await producer.send(
                    topic,
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


def produce_rows(options: SinkOptions, rows: Iterator[Any]) -> int:
    """Produce every row with ``acks=all``; return how many, or raise the first delivery error."""
    return asyncio.run(_produce(options, rows))


class HighwaterStreamWriter(DataSourceStreamWriter):
    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Any]) -> SinkCommit:
        return SinkCommit(produce_rows(self.options, iterator))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        records = sum(message.records for message in messages if isinstance(message, SinkCommit))
        log.debug("sink.batch_committed batch_id=%d records=%d", batchId, records)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        records = sum(message.records for message in messages if isinstance(message, SinkCommit))
        log.warning("sink.batch_aborted batch_id=%d records_already_written=%d", batchId, records)


class HighwaterBatchWriter(DataSourceWriter):
    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Any]) -> SinkCommit:
        return SinkCommit(produce_rows(self.options, iterator))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        records = sum(message.records for message in messages if isinstance(message, SinkCommit))
        log.debug("sink.write_committed records=%d", records)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        records = sum(message.records for message in messages if isinstance(message, SinkCommit))
        log.warning("sink.write_aborted records_already_written=%d", records)
