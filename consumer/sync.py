"""``SyncConsumer``: the consumer for scripts that are not asyncio programs.

The async ``Consumer`` runs on a private event loop in a daemon thread
(``LoopThread``); every method blocks on it, and fetches stay pipelined in the
background while the script works on the records it got.

    with SyncConsumer("http://127.0.0.1:9092", auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("orders", 0)])
        for record in consumer:
            ...

    with SyncConsumer(servers, group_id="billing", enable_auto_commit=False) as consumer:
        consumer.subscribe(["orders"])
        for records in consumer.poll(timeout_ms=1000).values():
            ...
        consumer.commit()                       # blocks until the coordinator wrote it
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, Self

from broker.client.loop_thread import LoopThread
from broker.client.types import TopicPartition
from consumer.consumer import Consumer
from consumer.membership import Subscription
from consumer.records import ConsumerRecord


class SyncConsumer:
    def __init__(self, servers: str | Sequence[str], **settings: Any) -> None:
        self._thread = LoopThread("highwater-consumer")
        try:
            self._consumer: Consumer = self._thread.run(self._create(servers, settings))
        except BaseException:
            self._thread.stop()
            raise

    @staticmethod
    async def _create(servers: str | Sequence[str], settings: dict[str, Any]) -> Consumer:
        consumer = Consumer(servers, **settings)
        await consumer.start()
        return consumer

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        wanted = list(partitions)
        self._thread.run(self._call(lambda: self._consumer.assign(wanted)))

    def assignment(self) -> set[TopicPartition]:
        return self._consumer.assignment()

    def subscribe(self, topics: Iterable[str] = (), *, pattern: str | re.Pattern[str] | None = None) -> None:
        wanted = [topics] if isinstance(topics, str) else list(topics)
        self._thread.run(self._call(lambda: self._consumer.subscribe(wanted, pattern=pattern)))

    def subscription(self) -> Subscription | None:
        return self._consumer.subscription()

    def unsubscribe(self) -> None:
        self._thread.run(self._consumer.unsubscribe())

    def commit(self, offsets: Mapping[TopicPartition, int] | None = None) -> None:
        """Commit (default: consumed positions) and block until the coordinator wrote it."""
        self._thread.run(self._consumer.commit(offsets))

    def commit_async(self, offsets: Mapping[TopicPartition, int] | None = None) -> Future[None]:
        """Start a commit; the returned future completes (or fails) when the coordinator answers."""
        return self._thread.submit(self._commit_async(offsets))

    async def _commit_async(self, offsets: Mapping[TopicPartition, int] | None) -> None:
        await self._consumer.commit_async(offsets)

    def committed(self, tp: TopicPartition) -> int | None:
        return self._thread.run(self._consumer.committed(tp))

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._thread.run(self._call(lambda: self._consumer.seek(tp, offset)))

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        self._thread.run(self._consumer.seek_to_beginning(*partitions))

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        self._thread.run(self._consumer.seek_to_end(*partitions))

    def position(self, tp: TopicPartition) -> int:
        return self._thread.run(self._consumer.position(tp))

    def highwater(self, tp: TopicPartition) -> int | None:
        return self._consumer.highwater(tp)

    def getmany(
        self, *partitions: TopicPartition, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConsumerRecord]]:
        return self._thread.run(self._consumer.getmany(*partitions, timeout_ms=timeout_ms, max_records=max_records))

    poll = getmany

    def __iter__(self) -> Iterator[ConsumerRecord]:
        while True:
            yield self._thread.run(self._consumer.getone())

    def close(self) -> None:
        try:
            self._thread.run(self._consumer.close())
        finally:
            self._thread.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @staticmethod
    async def _call(action: Any) -> None:
        """Run a plain method on the loop thread, where the consumer's state lives."""
        action()
