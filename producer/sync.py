"""``SyncProducer``: the producer for scripts that are not asyncio programs.

The async ``Producer`` runs on a private event loop in a daemon thread
(``LoopThread``); every method here blocks on it. ``send`` returns a
``concurrent.futures.Future`` of ``RecordMetadata`` so a script can send many records
and wait for them together.

    with SyncProducer("http://127.0.0.1:9092") as producer:
        producer.send("orders", b"value", key=b"k")
        producer.flush()
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any, Self

from broker.client.loop_thread import LoopThread
from producer.producer import Headers, Producer
from producer.records import RecordMetadata, SendManyResult


class SyncProducer:
    def __init__(self, servers: str | Sequence[str], **settings: Any) -> None:
        self._thread = LoopThread("highwater-producer")
        try:
            self._producer: Producer = self._thread.run(self._create(servers, settings))
        except BaseException:
            self._thread.stop()
            raise

    @staticmethod
    async def _create(servers: str | Sequence[str], settings: dict[str, Any]) -> Producer:
        producer = Producer(servers, **settings)
        await producer.start()
        return producer

    @property
    def producer(self) -> Producer:
        """The async producer underneath (use it only from this facade's loop)."""
        return self._producer

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Headers | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> Future[RecordMetadata]:
        """Queue a record (blocking only under back-pressure); a future of its metadata."""
        result: Future[RecordMetadata] = Future()

        async def queue() -> None:
            delivery = await self._producer.send(topic, value, key, headers, partition, timestamp)
            delivery.add_done_callback(lambda done: _copy_outcome(done, result))

        self._thread.run(queue())
        return result

    def send_many(
        self,
        topic: str,
        values: Sequence[bytes | None],
        *,
        keys: Sequence[bytes | None] | None = None,
        partition: int | None = None,
        headers: Sequence[Headers] | None = None,
        timestamp: int | None = None,
    ) -> Future[SendManyResult]:
        """``Producer.send_many``: queue ``values`` (blocking only under back-pressure); one future for all."""
        result: Future[SendManyResult] = Future()

        async def queue() -> None:
            delivery = await self._producer.send_many(
                topic, values, keys=keys, partition=partition, headers=headers, timestamp=timestamp
            )
            delivery.add_done_callback(lambda done: _copy_outcome(done, result))

        self._thread.run(queue())
        return result

    def send_and_wait(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Headers | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
        timeout_s: float | None = None,
    ) -> RecordMetadata:
        return self.send(topic, value, key, headers, partition, timestamp).result(timeout_s)

    def flush(self, timeout_ms: int | None = None) -> None:
        self._thread.run(self._producer.flush(timeout_ms))

    def close(self, timeout_ms: int | None = None) -> None:
        try:
            self._thread.run(self._producer.close(timeout_ms))
        finally:
            self._thread.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _copy_outcome(source: asyncio.Future[Any], target: Future[Any]) -> None:
    if source.cancelled():
        target.cancel()
    elif source.exception() is not None:
        target.set_exception(source.exception())
    else:
        target.set_result(source.result())
