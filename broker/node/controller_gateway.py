"""What a broker asks of the controller and the metadata store.

Topic administration and controlled shutdown are the controller's: ``on_controller``
runs the call on the local controller when this broker holds the role, else forwards
it to the active one, retrying while there is none (an election is under way) for
up to ``METADATA_PROPAGATION_TIMEOUT_S``. The ``*_on_controller`` methods are what the
controller's internal routes run. An admin call returns only once this broker's own
view shows its effect, so a client's next request to the same broker sees it.

Altering a topic's configs and growing its partitions are decided on the controller
from the topic record as it stands there (``Controller.update_topic``), so two alters
sent to two brokers at once are applied one after the other, neither lost. A
``validate_only`` alter is checked here against this broker's view and goes nowhere.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from broker.cluster.controller import Controller
from broker.cluster.metadata_view import MetadataView
from broker.cluster.placement import assign_replicas
from broker.cluster.reassignment import PartitionMove, StartedMoves
from broker.cluster.records import (
    CLUSTER_CONFIGS_KEY,
    PRODUCER_ID_KEY,
    PartitionRecord,
    TopicRecord,
    broker_configs_key,
    validate_topic_name,
)
from broker.cluster.replica_assignment import check_brokers
from broker.cluster.store import MetadataStore
from broker.errors import (
    InvalidPartitions,
    InvalidTopic,
    NotController,
    NotFound,
    ServiceUnavailable,
    TopicAlreadyExists,
)
from broker.node.catalog import Catalog
from broker.node.forwarding import Forwarder
from broker.topics import cluster_defaults
from broker.topics.new_topic import NewTopic
from broker.topics.policy import check_create_name, check_min_insync_replicas
from broker.topics.throttle_rates import per_broker_altered
from broker.waiting import RetryDeadline

METADATA_PROPAGATION_TIMEOUT_S = 10.0
CONTROLLER_RETRY_INITIAL_S = 0.05
CONTROLLER_RETRY_MAX_S = 0.5

LocalCall = Callable[[Controller], Awaitable[Any]]
"""A call to run on this broker's controller, when it is the active one; a dict it returns is the answer."""


class ControllerGateway:
    """See the module docstring."""

    def __init__(
        self,
        node_id: int,
        store: MetadataStore,
        controller: Controller,
        view: MetadataView,
        catalog: Catalog,
        forwarder: Forwarder,
    ) -> None:
        self.node_id = node_id
        self.store = store
        self.controller = controller
        self.view = view
        self.catalog = catalog
        self.forwarder = forwarder

    async def on_controller(self, method: str, path: str, body: dict | None, local_call: LocalCall) -> dict:
        """Run ``local_call`` if this broker is the controller, else forward to the controller."""
        retry = RetryDeadline(METADATA_PROPAGATION_TIMEOUT_S, CONTROLLER_RETRY_INITIAL_S, CONTROLLER_RETRY_MAX_S)
        unanswered: str | None = None
        while True:
            if self.controller.is_active:
                return await local_call(self.controller) or {}
            controller_id = self.view.controller_id
            url = self.view.inter_broker_url(controller_id)
            if url is not None and controller_id != self.node_id:
                try:
                    return await self.forwarder.json_call(method, f"{url}/internal/controller/{path}", body)
                except NotController:
                    unanswered = None
                except ServiceUnavailable as error:
                    unanswered = f"the controller (broker {controller_id}) did not answer: {error.message}"
            if not await retry.pause():
                if unanswered is not None:
                    raise ServiceUnavailable(f"{unanswered}; retry shortly (the request may have been applied)")
                raise ServiceUnavailable("no controller is available right now; retry shortly")

    # ------------------------------------------------------------ on the controller

    async def create_topic_on_controller(self, topic: NewTopic) -> None:
        await self.controller.create_topic(topic)

    async def delete_topic_on_controller(self, name: str) -> None:
        await self.controller.delete_topic(name)

    async def controlled_shutdown_on_controller(self, broker_id: int) -> dict:
        moved = await self.controller.controlled_shutdown(broker_id)
        return {"moved": [record.model_dump() for record in moved]}

    async def alter_reassignments_on_controller(self, moves: Sequence[PartitionMove]) -> dict:
        records = await self.controller.alter_reassignments(moves)
        return {"records": [record.model_dump() for record in records]}

    async def drain_broker_on_controller(self, broker_id: int) -> dict:
        records, warnings = await self.controller.drain_broker(broker_id)
        return StartedMoves(records=records, rack_warnings=warnings).model_dump()

    async def undrain_broker_on_controller(self, broker_id: int) -> dict:
        return {"was_draining": await self.controller.undrain_broker(broker_id)}

    async def balance_brokers_on_controller(self, tolerance: float, max_moves: int) -> dict:
        records, warnings = await self.controller.balance_brokers(tolerance, max_moves)
        return StartedMoves(records=records, rack_warnings=warnings).model_dump()

    async def elect_preferred_on_controller(
        self, topic: str | None, partitions: list[tuple[str, int]] | None = None
    ) -> dict:
        chosen = None if partitions is None else {(name, number) for name, number in partitions}
        elected = await self.controller.elect_preferred_leaders(topic, chosen)
        return {"elected": [record.model_dump() for record in elected]}

    async def alter_topic_configs_on_controller(self, name: str, changes: dict[str, str | None]) -> dict:
        configs = self.catalog.topic_configs

        def alter(topic: TopicRecord) -> TopicRecord:
            return topic.model_copy(update={"configs": configs.altered(topic, changes)})

        updated, revision = await self.controller.update_topic(name, alter)
        return {"configs": updated.configs, "revision": revision}

    async def alter_cluster_configs_on_controller(self, changes: dict[str, str | None]) -> dict:
        static = self.catalog.topic_configs.static_defaults
        configs, revision = await self.controller.update_configs(
            CLUSTER_CONFIGS_KEY, lambda current: cluster_defaults.altered(static, current, changes)
        )
        return {"configs": configs, "revision": revision}

    async def alter_broker_configs_on_controller(self, broker_id: int, changes: dict[str, str | None]) -> dict:
        configs, revision = await self.controller.update_configs(
            broker_configs_key(broker_id), lambda current: per_broker_altered(current, changes)
        )
        return {"configs": configs, "revision": revision}

    async def create_partitions_on_controller(self, name: str, partitions_count: int) -> dict:
        created = await self.controller.create_partitions(name, partitions_count)
        return {"created": [record.model_dump() for record in created]}

    # ------------------------------------------------------------ from any broker

    def check_new_topic(self, topic: NewTopic) -> None:
        """Every check ``create_topic`` makes, in its order, and nothing created (Kafka's ``validate_only``).

        This broker's view knows the live brokers, not which of them are in controlled
        shutdown: an assignment is checked against the live ones both ways.
        """
        check_min_insync_replicas(
            topic.configs, self.catalog.topic_configs.parse(topic.configs), topic.replication_factor
        )
        validate_topic_name(topic.name)
        check_create_name(topic.name, internal=False)
        live = self.catalog.brokers()
        if topic.assignment is not None:
            live_ids = {b.broker_id for b in live}
            check_brokers(topic.assignment, live_ids, live_ids)
        else:
            placeable = [(b.broker_id, b.rack) for b in live if not b.draining]
            assign_replicas(topic.partitions_count, topic.replication_factor, placeable)
        if topic.name in self.view.topics:
            raise TopicAlreadyExists(f"topic '{topic.name}' already exists")

    async def create_topic(self, topic: NewTopic) -> None:
        """Create on the controller; the answer comes once this broker's view holds the topic and its partitions."""
        check_min_insync_replicas(
            topic.configs, self.catalog.topic_configs.parse(topic.configs), topic.replication_factor
        )
        await self.on_controller(
            "POST", "topics", topic.model_dump(mode="json"), lambda c: self.create_topic_on_controller(topic)
        )
        await self.view.wait_for(
            lambda: (
                topic.name in self.view.topics
                and all((topic.name, p) in self.view.partitions for p in range(topic.partitions_count))
            ),
            METADATA_PROPAGATION_TIMEOUT_S,
        )

    async def delete_topic(self, name: str) -> None:
        self.catalog.topic(name)
        await self.on_controller("DELETE", f"topics/{name}", None, lambda c: c.delete_topic(name))
        await self.view.wait_for(lambda: name not in self.view.topics, METADATA_PROPAGATION_TIMEOUT_S)

    async def alter_topic_configs(
        self, name: str, changes: dict[str, str | None], *, validate_only: bool = False
    ) -> dict[str, str]:
        """Set (a value) or reset (None) topic configs, all or nothing; the topic record's configs after it.

        ``InvalidConfig`` names the first bad or read-only config and nothing is written.
        """
        expected = self.catalog.topic_configs.altered(self.catalog.topic(name), changes)
        if validate_only:
            return expected
        return await self._alter_configs(
            f"topics/{name}/configs", changes, lambda: self.alter_topic_configs_on_controller(name, changes)
        )

    async def alter_cluster_configs(
        self, changes: dict[str, str | None], *, validate_only: bool = False
    ) -> dict[str, str]:
        """Set (a value) or reset (None) cluster-wide dynamic broker configs, all or nothing; those in force after it.

        ``InvalidConfig`` names the first bad or unknown config and nothing is written.
        The answer comes once this broker's view holds the new record, so its replicas
        and its topic creation already use the new defaults.
        """
        topic_configs = self.catalog.topic_configs
        expected = cluster_defaults.altered(topic_configs.static_defaults, topic_configs.dynamic_defaults, changes)
        if validate_only:
            return expected
        return await self._alter_configs(
            "broker-configs", changes, lambda: self.alter_cluster_configs_on_controller(changes)
        )

    async def alter_broker_configs(
        self, broker_id: int, changes: dict[str, str | None], *, validate_only: bool = False
    ) -> dict[str, str]:
        """Set (a value) or remove (None) broker ``broker_id``'s own dynamic configs, all or nothing; its configs after.

        Only the replication throttle rates may be set for one broker (``throttle_rates``):
        ``InvalidConfig`` names the first other config, or bad value, and nothing is
        written; ``NotFound`` for a broker that is not registered. The answer comes once
        this broker's view holds the new record.
        """
        if broker_id not in self.view.brokers:
            raise NotFound(f"broker {broker_id} is not registered", broker_id=broker_id)
        expected = per_broker_altered(self.view.broker_configs.get(broker_id, {}), changes)
        if validate_only:
            return expected
        return await self._alter_configs(
            f"brokers/{broker_id}/configs", changes, lambda: self.alter_broker_configs_on_controller(broker_id, changes)
        )

    async def _alter_configs(
        self, path: str, changes: dict[str, str | None], on_controller: Callable[[], Awaitable[dict]]
    ) -> dict[str, str]:
        """A configs alter on the controller (``path`` under ``/internal/controller``); the configs it
        wrote, answered once this broker's view holds the record."""
        answer = await self.on_controller("POST", path, {"changes": changes}, lambda c: on_controller())
        revision: int = answer["revision"]
        await self.view.wait_for(lambda: self.view.revision >= revision, METADATA_PROPAGATION_TIMEOUT_S)
        configs: dict[str, str] = answer["configs"]
        return configs

    async def create_partitions(self, name: str, partitions_count: int) -> None:
        """Kafka's CreatePartitions: grow a topic (``InvalidPartitions`` unless it grows)."""
        self.check_new_partitions(name, partitions_count)
        await self.on_controller(
            "POST",
            f"topics/{name}/partitions",
            {"partitions_count": partitions_count},
            lambda c: self.create_partitions_on_controller(name, partitions_count),
        )
        await self.view.wait_for(
            lambda: all((name, p) in self.view.partitions for p in range(partitions_count)),
            METADATA_PROPAGATION_TIMEOUT_S,
        )

    def check_new_partitions(self, name: str, partitions_count: int) -> None:
        """Every check ``create_partitions`` makes before it asks the controller, and nothing created
        (Kafka's ``validate_only``): the topic exists, is no internal one, and grows."""
        topic = self.catalog.topic(name)
        if topic.internal:
            raise InvalidTopic(
                f"topic '{name}' is internal: its partition count maps every group to its coordinator, so it "
                "cannot grow",
                topic_name=name,
            )
        current = topic.partitions_count
        if partitions_count <= current:
            raise InvalidPartitions(
                f"topic '{name}' already has {current} partitions; partitions_count must be larger, got "
                f"{partitions_count}",
                topic_name=name,
                partitions_count=current,
            )

    async def elect_preferred_leaders(self, topic: str | None = None) -> dict:
        """Kafka's ``kafka-leader-election --election-type PREFERRED``, run on the controller:
        ``{"elected": [partition records whose leader moved back to replicas[0]]}``, once this
        broker's view holds them (a next call here sees the new leaders)."""
        if topic is not None:
            self.catalog.topic(topic)
        answer = await self.on_controller(
            "POST", "elect-preferred", {"topic": topic}, lambda c: self.elect_preferred_on_controller(topic)
        )
        await self._wait_for_leaders(answer["elected"])
        return answer

    async def elect_preferred_partitions(self, partitions: list[tuple[str, int]]) -> dict:
        """``elect_preferred_leaders`` of the ``partitions`` named only (Kafka's ElectLeaders, PREFERRED)."""
        body = {"partitions": [list(tp) for tp in partitions]}
        answer = await self.on_controller(
            "POST", "elect-preferred", body, lambda c: self.elect_preferred_on_controller(None, partitions)
        )
        await self._wait_for_leaders(answer["elected"])
        return answer

    async def _wait_for_leaders(self, elected: list[dict]) -> None:
        """Until this broker's view holds each elected record's leader epoch (or the propagation wait ends)."""

        def known() -> bool:
            for record in elected:
                found = self.view.partitions.get((record["topic"], record["partition"]))
                if found is None or found.leader_epoch < record["leader_epoch"]:
                    return False
            return True

        await self.view.wait_for(known, METADATA_PROPAGATION_TIMEOUT_S)

    async def alter_reassignments(self, moves: Sequence[PartitionMove]) -> list[PartitionRecord]:
        """Start, replace or cancel partition moves on the controller, all or nothing; the records as they
        stand after, once this broker's view holds them (so a listing sent here next shows them)."""
        for move in moves:
            self.catalog.partition_record(move.topic, move.partition)
        answer = await self.on_controller(
            "POST",
            "reassignments",
            {"moves": [move.model_dump(mode="json") for move in moves]},
            lambda c: self.alter_reassignments_on_controller(moves),
        )
        records = [PartitionRecord.model_validate(record) for record in answer["records"]]
        await self._until_held(records)
        return records

    async def drain_broker(self, broker_id: int) -> StartedMoves:
        """Mark ``broker_id`` drained and move every replica off it, on the controller; once this
        broker's view holds the mark and the moves."""
        answer = await self.on_controller(
            "POST", f"drain/{broker_id}", None, lambda c: self.drain_broker_on_controller(broker_id)
        )
        started = StartedMoves.model_validate(answer)
        await self._until_held(started.records)
        await self.view.wait_for(lambda: broker_id in self.view.draining, METADATA_PROPAGATION_TIMEOUT_S)
        return started

    async def undrain_broker(self, broker_id: int) -> bool:
        """Let ``broker_id`` take new replicas again; whether it was being drained."""
        answer = await self.on_controller(
            "POST", f"undrain/{broker_id}", None, lambda c: self.undrain_broker_on_controller(broker_id)
        )
        await self.view.wait_for(lambda: broker_id not in self.view.draining, METADATA_PROPAGATION_TIMEOUT_S)
        return bool(answer["was_draining"])

    async def balance_brokers(self, tolerance: float, max_moves: int) -> StartedMoves:
        """One bounded balancing step on the controller (``move_plans.balance``); no records when balanced."""
        answer = await self.on_controller(
            "POST",
            "balance",
            {"tolerance": tolerance, "max_moves": max_moves},
            lambda c: self.balance_brokers_on_controller(tolerance, max_moves),
        )
        started = StartedMoves.model_validate(answer)
        await self._until_held(started.records)
        return started

    async def _until_held(self, records: Sequence[PartitionRecord]) -> None:
        """Wait until this broker's view holds ``records`` (so a listing sent here next shows them)."""

        def held() -> bool:
            return all(
                (seen := self.view.partitions.get((r.topic, r.partition))) is not None
                and seen.partition_epoch >= r.partition_epoch
                for r in records
            )

        await self.view.wait_for(held, METADATA_PROPAGATION_TIMEOUT_S)

    async def controlled_shutdown(self, broker_id: int) -> dict:
        """Ask the controller to move ``broker_id``'s leaderships away: ``{"moved": [partition records]}``."""
        return await self.on_controller(
            "POST",
            f"controlled-shutdown/{broker_id}",
            None,
            lambda c: self.controlled_shutdown_on_controller(broker_id),
        )

    async def allocate_producer_id(self) -> int:
        """A cluster-unique producer id: compare-and-set increment of ``/producer-ids/next``."""
        while True:
            current = await self.store.get(PRODUCER_ID_KEY)
            next_id = int(current.value) if current else 1000
            expected = current.mod_revision if current else 0
            if await self.store.put_if(PRODUCER_ID_KEY, str(next_id + 1).encode(), expected) is not None:
                return next_id
