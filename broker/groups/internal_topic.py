"""An internal topic a coordinator lives on (``__consumer_offsets``, ``__transaction_state``), created on first use.

Both coordinators place their keys in the partitions of such a topic and follow its
leaders, so both need the same three things, written once here: whether the topic
and every one of its partitions are known to this broker's metadata (``ready``); to
have the controller create it when it is missing, forwarded there if this broker is
not the controller, and to wait until this broker's metadata shows it (``ensure``);
and, on the controller, the creation itself (``create_on_controller``): internal,
compacted, never deleted by age or size (``check_internal_configs``), replication factor
min(3, live brokers), the partition count the broker's settings give. A coordinator
that becomes a partition's leader rebuilds its state by replaying it (``replay``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

import structlog

from broker.errors import TopicAlreadyExists
from broker.record.codec import Record
from broker.record.decode import iter_batches_with_records
from broker.record.header import BatchHeader
from broker.topics.new_topic import NewTopic
from broker.topics.policy import check_internal_configs

if TYPE_CHECKING:
    from broker.cluster.controller import Controller
    from broker.cluster.metadata_view import MetadataView
    from broker.groups.host import ControllerCalls
    from broker.storage.log import PartitionLog
    from broker.topics.configs import TopicConfigs

log = structlog.get_logger(__name__)

READY_WAIT_S = 5.0
REPLAY_READ_BYTES = 1024 * 1024


def replay(log_: PartitionLog, start: int, apply: Callable[[BatchHeader, list[Record]], None]) -> int:
    """Every batch from ``start`` to the log end as it is now, in order, to ``apply``; returns where it stopped.

    A read starts at a batch's first record, so records below ``start`` are left out, and a
    batch that held only such records is not applied at all (a marker there was applied before).
    """
    offset = max(start, log_.log_start_offset)
    end = log_.log_end_offset
    while offset < end:
        result = log_.read(offset, REPLAY_READ_BYTES, end)
        if not result.data:
            break
        for header, records in iter_batches_with_records(result.data):
            kept = records if header.base_offset >= offset else [r for r in records if r.offset >= offset]
            if kept:
                apply(header, kept)
        offset = result.next_offset
    return offset


class InternalTopicHost(Protocol):
    """What the topic needs of the broker (``GroupHost`` and ``TransactionHost`` both have it)."""

    topic_configs: TopicConfigs
    view: MetadataView
    controller: Controller

    @property
    def controller_gateway(self) -> ControllerCalls: ...


class InternalTopic:
    """``name`` on ``host``'s cluster; ``controller_path`` is the internal route the creation is forwarded to."""

    def __init__(
        self,
        host: InternalTopicHost,
        name: str,
        configs: Mapping[str, str],
        partitions_count: Callable[[], int],
        controller_path: str,
    ) -> None:
        self.host = host
        self.name = name
        self.configs = dict(configs)
        self._partitions_count = partitions_count
        self._controller_path = controller_path
        self._create_lock = asyncio.Lock()

    def ready(self) -> bool:
        topic = self.host.view.topics.get(self.name)
        return topic is not None and all(
            (self.name, p) in self.host.view.partitions for p in range(topic.partitions_count)
        )

    async def ensure(self) -> None:
        """The topic exists and this broker's metadata shows every partition (waited for up to 5 s)."""
        if self.ready():
            return
        async with self._create_lock:
            if self.name not in self.host.view.topics:
                await self.host.controller_gateway.on_controller(
                    "POST", self._controller_path, {}, lambda controller: self.create_on_controller()
                )
        await self.host.view.wait_for(self.ready, READY_WAIT_S)

    async def create_on_controller(self) -> dict:
        """On the controller: create the topic (internal) unless it exists."""
        if self.name in self.host.view.topics:
            return {}
        replication_factor = max(1, min(3, len(self.host.view.brokers)))
        check_internal_configs(self.name, self.host.topic_configs.parse(self.configs))
        try:
            topic = NewTopic(
                name=self.name,
                partitions_count=self._partitions_count(),
                replication_factor=replication_factor,
                configs=self.configs,
            )
            await self.host.controller.create_topic(topic, internal=True)
            log.info("internal_topic.created", topic=self.name, replication_factor=replication_factor)
        except TopicAlreadyExists:
            pass
        return {}
