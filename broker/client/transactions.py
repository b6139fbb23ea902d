"""``TransactionClient``: one transactional id's calls to its coordinator (``routes_transactional_producers``).

Each is answered by the id's coordinator, reached through ``CoordinatedCalls``; a
``producer`` is the (producer id, epoch) ``init_producer`` handed out, which every
later call names so the coordinator can fence a zombie (``PRODUCER_FENCED``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

import broker.errors.transactions  # noqa: F401 - registers the coordinator's errors for decoding by name
from broker.client.coordinated import CoordinatedCalls
from broker.client.http import ClusterClient
from broker.client.types import TopicPartition

ProducerIdentity = tuple[int, int]


class TransactionClient:
    def __init__(self, client: ClusterClient, transactional_id: str) -> None:
        self._calls = CoordinatedCalls(client)
        self.transactional_id = transactional_id

    async def _path(self, suffix: str) -> str:
        return await self._calls.cluster_path(f"/transactions/{quote(self.transactional_id, safe='')}{suffix}")

    @staticmethod
    def _body(producer: ProducerIdentity, **fields: Any) -> dict[str, Any]:
        return {"producer_id": producer[0], "producer_epoch": producer[1], **fields}

    async def init_producer(self, transaction_timeout_ms: int) -> ProducerIdentity:
        """The id's new incarnation: a newer epoch, which fences every earlier one."""
        body = {"transaction_timeout_ms": transaction_timeout_ms}
        answer = await self._calls.call("POST", await self._path("/producer-id"), body)
        return int(answer["producer_id"]), int(answer["producer_epoch"])

    async def add_partitions(self, producer: ProducerIdentity, partitions: Iterable[TopicPartition]) -> None:
        added = [{"topic_name": tp.topic, "partition_id": tp.partition} for tp in sorted(partitions)]
        await self._calls.call("POST", await self._path("/partitions"), self._body(producer, partitions=added))

    async def add_group(self, producer: ProducerIdentity, group_id: str) -> None:
        await self._calls.call("POST", await self._path("/consumer-groups"), self._body(producer, group_id=group_id))

    async def end(self, producer: ProducerIdentity, commit: bool) -> None:
        await self._calls.call("POST", await self._path(":commit" if commit else ":abort"), self._body(producer))

    async def describe(self) -> dict[str, Any]:
        return await self._calls.call("GET", await self._path(""))

    def offsets_fields(self, producer: ProducerIdentity) -> dict[str, Any]:
        """What a group commit adds to be this producer's TxnOffsetCommit."""
        return self._body(producer, transactional_id=self.transactional_id)
