"""What the active controller does during one term (one controller epoch).

One ``ControllerTerm`` exists per won election and ends when the controller is
deposed. It keeps its own view of ``/brokers/`` and, whenever the live broker set
changes (and once at the start of the term, since brokers may have come and gone
while nobody ruled), reconciles every partition record with it (``election.reconcile``):
dead brokers leave ISRs, partitions they led get the next live ISR member, leaderless
partitions get a returning ISR member, or, where the topic allows unclean election,
any live replica. It also moves partitions (reassignments, completed as their new replicas
come in sync), and drains and balances brokers by planning moves (``move_plans``); a broker
being drained (``/draining/<id>``) gets no new replica.

A reassignment may change a partition's replica count. The topic record's
``replication_factor`` then follows the rule ``TopicRecord`` states: once every partition
of the topic has settled on one count, the controller writes that count, right after the
write that settled the last partition (a started move that completes at once, a
completion, a cancel), and, should it die in between, at its successor's first
reconciliation.

Like Kafka's controller event queue, every operation runs under one lock, so
decisions never interleave; every operation first checks the fence, so a deposed
term answers ``NotController`` at once; every write is a fenced compare-and-set
(``ControllerFence``), so a decision based on a stale read is retried on a fresh one
and a deposed controller's writes fail with ``NotController``.

Topic records are the commit point of topic creation and deletion: a topic is
created topic record first, then its partitions; deleted topic record first, then
its partitions. A new controller therefore completes a half-done creation (creates
the missing partitions of an existing topic) and a half-done deletion (deletes
partition records whose topic record is gone).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

import structlog

from broker.backoff import Backoff
from broker.clock import wall_clock_ms
from broker.cluster.controller_fence import ControllerFence
from broker.cluster.election import (
    PartitionChange,
    controlled_shutdown_move,
    preferred_leader_election,
    reconcile,
)
from broker.cluster.leader_balance import partitions_to_rebalance
from broker.cluster.membership import registration_from
from broker.cluster.move_plans import MovePlan, balance, drain, even_leaders
from broker.cluster.placement import assign_replicas
from broker.cluster.prefix_view import INITIAL_BACKOFF_MS, MAX_BACKOFF_MS, ParsedValues, PrefixView, retry_unavailable
from broker.cluster.reassignment import (
    PartitionMove,
    check_target,
    complete,
    is_moving,
    moves_to_check,
    original_replicas,
    reassign,
    settled_replica_count,
    target_replicas,
)
from broker.cluster.records import (
    BROKERS_PREFIX,
    CLUSTER_CONFIGS_KEY,
    DRAINING_PREFIX,
    PARTITIONS_PREFIX,
    TOPICS_PREFIX,
    BrokerRegistration,
    ClusterConfigsRecord,
    DrainingRecord,
    PartitionRecord,
    TopicRecord,
    draining_key,
    new_topic_id,
    parse_partition_key,
    partition_key,
    topic_key,
)
from broker.cluster.replica_assignment import check_brokers, initial_isr, ordered_assignment
from broker.cluster.store import MAX_PUT_BATCH, KeyValue, MetadataStore, StoreUnavailableError
from broker.errors import InvalidReplicationFactor, NotFound, TopicAlreadyExists, UnknownPartition, UnknownTopic
from broker.topics.configs import TopicConfigs
from broker.topics.new_topic import NewTopic
from broker.topics.policy import min_reassigned_replicas
from broker.waiting import wait_event
from config.topic import TopicDefaults

log = structlog.get_logger(__name__)

T = TypeVar("T")

UNCLEAN_LEADER_ELECTION_CONFIG = "unclean.leader.election.enable"

ComputeChange = Callable[[PartitionRecord], PartitionChange | None]

BROKERS_CATCH_UP_TIMEOUT_S = 2.0
"""How long a placement waits for the term's view to hold the registrations the store holds."""


@dataclass(frozen=True)
class ControllerSettings:
    """Kafka's controller settings (``config.broker.BrokerSettings`` documents each);
    ``unclean_leader_election_enable`` is the default for topics whose configs do not
    set ``unclean.leader.election.enable``, unless the cluster-wide dynamic broker
    config sets one."""

    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_ms: int = 5_000
    leader_imbalance_per_broker_percentage: int = 10
    unclean_leader_election_enable: bool = False


class ControllerTerm:
    """The active controller's work for epoch ``controller_epoch``; see the module docstring.

    ``topic_configs`` resolves a topic's configs as this broker does (its topic defaults
    overlaid with the cluster-wide ones its view holds), for the checks that need a topic's
    effective configs, as topic creation and config alters use the same on the controller.
    """

    def __init__(
        self,
        store: MetadataStore,
        broker_id: int,
        controller_epoch: int,
        settings: ControllerSettings,
        topic_configs: TopicConfigs | None = None,
    ):
        self.store = store
        self.broker_id = broker_id
        self.controller_epoch = controller_epoch
        self.settings = settings
        self.topic_configs = topic_configs or TopicConfigs(TopicDefaults())
        self.fence = ControllerFence(store, broker_id, controller_epoch)
        self.ready = asyncio.Event()
        self._brokers_changed = asyncio.Event()
        self._brokers = PrefixView(store, BROKERS_PREFIX, on_change=self._brokers_changed.set)
        self._registrations = ParsedValues(self._brokers, registration_from)
        self._partitions_changed = asyncio.Event()
        self._partitions = PrefixView(store, PARTITIONS_PREFIX, on_change=self._partitions_changed.set)
        self._records = ParsedValues(self._partitions, _record)
        self._draining = PrefixView(store, DRAINING_PREFIX)
        self._moving: dict[str, int] = {}
        """Key -> partition epoch of the partitions being reassigned, as written: the only records the
        completion loop reads, and it judges none on an older record (its view may lag its own writes)."""
        self._lock = asyncio.Lock()
        self._shutting_down: dict[int, int] = {}
        self._balanced: tuple[int, frozenset[int]] | None = None
        """The partitions view's revision and the live brokers when a leader balance check last
        found nothing to move: the same inputs pick the same nothing (``_rebalance_imbalanced_brokers``)."""
        self._broker_epochs: dict[int, int] = {}
        self._log = log.bind(controller_id=broker_id, controller_epoch=controller_epoch)

    async def run(self) -> None:
        """Reconcile on every broker change (and once at the start) and rebalance periodically,
        until deposed (``NotController``) or cancelled. A rebalance is not followed by a
        reconciliation: with nothing changed it would find nothing to do, after walking
        every partition (with 10 000, a fifth of the controller's idle profile)."""
        loop = asyncio.get_running_loop()
        interval_s = self.settings.leader_imbalance_check_interval_ms / 1000
        moves: asyncio.Task[None] | None = None
        try:
            await self._brokers.start()
            await self._partitions.start()
            await self._draining.start()
            self._moving = {
                kv.key: record.partition_epoch
                for kv in self._partitions.snapshot().values()
                if is_moving(record := self._records.of(kv))
            }
            moves = loop.create_task(self._complete_moves(), name=f"controller-moves {self.controller_epoch}")
            next_rebalance = loop.time() + interval_s
            brokers_changed = True
            while True:
                if brokers_changed:
                    self._brokers_changed.clear()
                    async with self._lock:
                        await self._reconcile_all()
                if not self.ready.is_set():
                    self._log.info("controller_term_ready", live_brokers=sorted(self.live_broker_ids()))
                    self.ready.set()
                timeout_s = max(next_rebalance - loop.time(), 0) if self.settings.auto_leader_rebalance_enable else None
                brokers_changed = await wait_event(self._brokers_changed, timeout_s)
                if not brokers_changed:
                    async with self._lock:
                        await self._rebalance_imbalanced_brokers()
                    next_rebalance = loop.time() + interval_s
        finally:
            if moves is not None:
                moves.cancel()
                await asyncio.gather(moves, return_exceptions=True)
            await self._draining.close()
            await self._partitions.close()
            await self._brokers.close()

    # ---- live brokers ----------------------------------------------------------

    def live_registrations(self) -> dict[int, BrokerRegistration]:
        """Registered brokers that are not in controlled shutdown (a broker leaves that
        state by re-registering, i.e. with a new broker epoch)."""
        registrations = {r.broker_id: r for r in self._registrations.values()}
        for broker_id, broker_epoch in list(self._shutting_down.items()):
            registration = registrations.get(broker_id)
            if registration is None or registration.broker_epoch != broker_epoch:
                del self._shutting_down[broker_id]
            else:
                del registrations[broker_id]
        return registrations

    def live_broker_ids(self) -> set[int]:
        return set(self.live_registrations())

    def draining_broker_ids(self) -> set[int]:
        return {int(key[len(DRAINING_PREFIX) :]) for key in self._draining.snapshot()}

    def placeable_registrations(self) -> dict[int, BrokerRegistration]:
        """The live brokers that take new replicas: all but those being drained."""
        draining = self.draining_broker_ids()
        return {broker_id: r for broker_id, r in self.live_registrations().items() if broker_id not in draining}

    def placeable(self) -> list[tuple[int, str | None]]:
        """``placeable_registrations`` as placement takes them: (broker id, rack), by id."""
        return [
            (broker_id, registration.rack) for broker_id, registration in sorted(self.placeable_registrations().items())
        ]

    def explain_unplaceable(self, error: InvalidReplicationFactor) -> InvalidReplicationFactor:
        """A placement's refusal, saying which brokers took no new replica because they are being drained."""
        draining = sorted(self.draining_broker_ids() & self.live_broker_ids())
        if not draining:
            return error
        return InvalidReplicationFactor(
            f"{error.message}; brokers {draining} are being drained and take no new replica"
        )

    async def catch_up_with_brokers(self) -> None:
        """Wait (a moment at most) until this term's view holds every registration the store holds.

        Kafka's controller places replicas over the registrations it keeps itself. Here
        brokers register in the store and the term hears of it through its watch, so a
        topic created just after the brokers registered (every broker already listing all
        of them) was refused for too few live brokers (a host-tier run: "replication
        factor 3 is larger than the 1 live broker", 30 ms after the third registration).
        One read of the registrations before placing closes that window.
        """
        if not await self._brokers.catch_up(BROKERS_CATCH_UP_TIMEOUT_S):
            self._log.warning("controller_brokers_view_behind_store", timeout_s=BROKERS_CATCH_UP_TIMEOUT_S)

    def registered_broker_ids(self) -> set[int]:
        """Every broker holding a registration, those in controlled shutdown included (Kafka's
        ``brokerRegistrations``: a manual assignment may name them, they just lead nothing yet)."""
        return {r.broker_id for r in map(registration_from, self._brokers.snapshot().values())}

    # ---- operations ------------------------------------------------------------

    async def create_topic(self, new: NewTopic, *, internal: bool = False) -> list[PartitionRecord]:
        """Write the topic, then its partitions (epochs 0; leader = first live replica, ISR = live replicas).

        Replicas are ``assignment`` when given (the creator's, checked here against the
        registered and live brokers, as Kafka's controller does; the counts are then its
        own), else placed over the live brokers, where every replica is live.
        """
        async with self._lock:
            await self.fence.check()
            await self.catch_up_with_brokers()
            live = self.live_registrations()
            name, partitions_count, replication_factor = new.name, new.partitions_count, new.replication_factor
            assignment = new.assignment
            if assignment is not None:
                assignment = ordered_assignment(enumerate(assignment))
                check_brokers(assignment, self.registered_broker_ids(), live)
                partitions_count, replication_factor = len(assignment), len(assignment[0])
                placed = assignment
            else:
                leader_counts = Counter(self._records.of(kv).leader for kv in await self._list(PARTITIONS_PREFIX))
                try:
                    placed = assign_replicas(
                        partitions_count, replication_factor, self.placeable(), existing_leader_counts=leader_counts
                    )
                except InvalidReplicationFactor as error:
                    raise self.explain_unplaceable(error) from None
            topic = TopicRecord(
                name=name,
                topic_id=new_topic_id(),
                partitions_count=partitions_count,
                replication_factor=replication_factor,
                configs=dict(new.configs),
                internal=internal,
                replica_assignment=assignment,
            )
            if await self.fence.put_if(topic_key(name), topic.model_dump_json().encode(), 0) is None:
                raise TopicAlreadyExists(f"topic '{name}' already exists")
            self._log.info(
                "topic_created",
                topic=name,
                partitions_count=partitions_count,
                replication_factor=replication_factor,
                configs=topic.configs,
                manual_assignment=assignment is not None,
            )
            return await self.create_partitions(name, list(enumerate(placed)))

    async def delete_topic(self, name: str) -> None:
        """Delete the topic record, then its partition records (brokers delete their
        local logs when they see the partition records go)."""
        async with self._lock:
            await self.fence.check()
            key = topic_key(name)
            while True:
                current = await self._get(key)
                if current is None:
                    raise UnknownTopic(f"topic '{name}' does not exist")
                if await self.fence.delete_if(key, current.mod_revision):
                    break
            for kv in await self._list(f"{PARTITIONS_PREFIX}{name}/"):
                await self._delete_partition(kv)
            self._log.info("topic_deleted", topic=name)

    async def controlled_shutdown(self, broker_id: int) -> list[PartitionRecord]:
        """Keep ``broker_id`` out of elections until it re-registers, move its
        leaderships to live ISR members and drop it from ISRs; return the changed
        records once all are written."""
        async with self._lock:
            await self.fence.check()
            registration = self.live_registrations().get(broker_id)
            if registration is not None:
                self._shutting_down[broker_id] = registration.broker_epoch
            live = self.live_broker_ids()
            self._log.info("controlled_shutdown_started", broker_id=broker_id, live_brokers=sorted(live))
            changed = await self._update_all(
                PARTITIONS_PREFIX, lambda r: controlled_shutdown_move(r, broker_id, live), "controlled_shutdown"
            )
            still_leading = [(r.topic, r.partition) for r in changed if r.leader == broker_id]
            self._log.info(
                "controlled_shutdown_done", broker_id=broker_id, changed=len(changed), still_leading=still_leading
            )
            return changed

    async def alter_reassignments(self, moves: Sequence[PartitionMove]) -> list[PartitionRecord]:
        """Start, replace or cancel (``replicas`` None) each move, all or nothing: every move is checked
        before the first is written; the records as they stand after (``broker.cluster.reassignment``)."""
        async with self._lock:
            await self.fence.check()
            return await self._alter_reassignments(moves)

    async def drain_broker(self, broker_id: int) -> tuple[list[PartitionRecord], list[str]]:
        """Mark ``broker_id`` drained (no new replica is placed on it) and move every replica off it
        (``move_plans.drain``) in one reassignment; the moved records and the plan's rack warnings.

        A broker that is not registered may be drained as long as a partition names it (a
        dead machine's replicas are moved off it as well as a live one's). The plan reads the
        records from the store, as ``balance_brokers`` does: the term's watched view may not
        hold a topic created a moment before, whose replicas would stay on the broker.
        """
        async with self._lock:
            await self.fence.check()
            assignment = {
                parse_partition_key(kv.key): target_replicas(self._records.of(kv))
                for kv in await self._list(PARTITIONS_PREFIX)
            }
            named = any(broker_id in replicas for replicas in assignment.values())
            if broker_id not in self.registered_broker_ids() and not named:
                raise NotFound(f"broker {broker_id} is neither registered nor holds a replica", broker_id=broker_id)
            racks = {b: r.rack for b, r in self.placeable_registrations().items() if b != broker_id}
            plan = drain(assignment, broker_id, racks)
            key = draining_key(broker_id)
            if await self._get(key) is None:
                record = DrainingRecord(broker_id=broker_id, since_ms=wall_clock_ms())
                await self.fence.put_if(key, record.model_dump_json().encode(), 0)
                self._log.info("broker_drain_started", broker_id=broker_id)
            return await self._start_plan(plan, "drain"), plan.rack_warnings

    async def undrain_broker(self, broker_id: int) -> bool:
        """Let ``broker_id`` take new replicas again; whether it was being drained. Moves under way go on."""
        async with self._lock:
            await self.fence.check()
            current = await self._get(draining_key(broker_id))
            if current is None:
                return False
            await self.fence.delete_if(current.key, current.mod_revision)
            self._log.info("broker_drain_ended", broker_id=broker_id)
            return True

    async def balance_brokers(self, tolerance: float, max_moves: int) -> tuple[list[PartitionRecord], list[str]]:
        """One bounded step over the brokers that take new replicas: replica moves (``move_plans.balance``,
        planned on where every partition is headed, the targets of moves under way) while replica
        counts are uneven, then reorders of in-sync partitions that spread preferred leaders
        (``move_plans.even_leaders``), each followed by a preferred election; nothing when balanced.

        The plan reads the records from the store, not the term's watched view: an operator
        who creates a topic and then balances must have the new partitions counted, and the
        view may not hold them yet (a balance right after a create planned nothing)."""
        async with self._lock:
            await self.fence.check()
            records = [self._records.of(kv) for kv in await self._list(PARTITIONS_PREFIX)]
            racks = {b: r.rack for b, r in self.placeable_registrations().items()}
            assignment = {(r.topic, r.partition): target_replicas(r) for r in records}
            plan = balance(assignment, racks, tolerance, max_moves)
            if plan.moves:
                return await self._start_plan(plan, "balance"), plan.rack_warnings
            in_sync = {
                (r.topic, r.partition): r.replicas
                for r in records
                if not is_moving(r) and set(r.isr) == set(r.replicas)
            }
            plan = even_leaders(in_sync, racks, tolerance, max_moves)
            reordered = {(r.topic, r.partition): r for r in await self._start_plan(plan, "even_leaders")}
            if reordered:
                elected = await self._elect_preferred(PARTITIONS_PREFIX, set(reordered), "even_leaders")
                reordered.update({(r.topic, r.partition): r for r in elected})
            return [reordered[key] for key in sorted(reordered)], plan.rack_warnings

    async def _start_plan(self, plan: MovePlan, reason: str) -> list[PartitionRecord]:
        moves = [
            PartitionMove(topic=topic, partition=partition, replicas=target)
            for (topic, partition), target in sorted(plan.moves.items())
        ]
        self._log.info("move_plan_started", reason=reason, moves=len(moves), rack_warnings=len(plan.rack_warnings))
        return await self._alter_reassignments(moves) if moves else []

    async def _alter_reassignments(self, moves: Sequence[PartitionMove]) -> list[PartitionRecord]:
        """``alter_reassignments`` for a caller that holds the lock and checked the fence."""
        live = self.live_broker_ids()
        planned = []
        for move in moves:
            topic = await self._get(topic_key(move.topic))
            if topic is None:
                raise UnknownTopic(f"topic '{move.topic}' does not exist", topic_name=move.topic)
            kv = await self._get(partition_key(move.topic, move.partition))
            if kv is None:
                raise UnknownPartition(
                    f"topic '{move.topic}' has no partition {move.partition}",
                    topic_name=move.topic,
                    partition_id=move.partition,
                )
            record = self._records.of(kv)
            target = original_replicas(record) if move.replicas is None else move.replicas
            if move.replicas is not None:
                min_replicas = self._min_replicas(TopicRecord.model_validate_json(topic.value), record)
                check_target(record, target, min_replicas, live)
            reassign(record, target, live)
            planned.append((kv, target))
        written = []
        for kv, target in planned:
            changed = await self._update(kv, partial(reassign, target=target, live=live), "reassignment")
            current = changed if changed is not None else self._records.of(await self._get(kv.key) or kv)
            if is_moving(current):
                self._moving[kv.key] = current.partition_epoch
            written.append(current)
        for name in sorted({record.topic for record in written}):
            await self._settle_replication_factor(name)
        return written

    def _min_replicas(self, topic: TopicRecord, record: PartitionRecord) -> int:
        """The fewest replicas ``record``'s partition may move to (``policy.min_reassigned_replicas``),
        measured from its replicas before any move under way."""
        config = self.topic_configs.parse(topic.configs)
        return min_reassigned_replicas(topic.configs, config, len(original_replicas(record)))

    async def _settle_replication_factor(self, name: str) -> None:
        """Write the replica count every partition of topic ``name`` has settled on as its record's
        ``replication_factor`` (``reassignment.settled_replica_count``); nothing while they differ or a
        partition moves. Replica lists change only under the lock this caller holds, so one read does."""
        records = [self._records.of(kv) for kv in await self._list(f"{PARTITIONS_PREFIX}{name}/")]

        def settle(topic: TopicRecord) -> TopicRecord:
            count = settled_replica_count(topic.partitions_count, records)
            return topic if count is None else topic.model_copy(update={"replication_factor": count})

        with contextlib.suppress(UnknownTopic):
            await self.update_topic(name, settle)

    async def update_topic(self, name: str, compute: Callable[[TopicRecord], TopicRecord]) -> tuple[TopicRecord, int]:
        """``Controller.update_topic`` for a caller that holds the lock: ``compute(current record)`` written
        by fenced CAS (recomputed on a fresh read when the CAS loses); the record and its revision."""
        key = topic_key(name)
        while True:
            await self.fence.check()
            current = await self.store.get(key)
            if current is None:
                raise UnknownTopic(f"topic '{name}' does not exist", topic_name=name)
            record = TopicRecord.model_validate_json(current.value)
            updated = compute(record)
            if updated == record:
                return record, current.mod_revision
            revision = await self.fence.put_if(key, updated.model_dump_json().encode(), current.mod_revision)
            if revision is not None:
                self._log.info(
                    "topic_updated",
                    topic=name,
                    partitions_count=updated.partitions_count,
                    replication_factor=updated.replication_factor,
                    configs=updated.configs,
                )
                return updated, revision

    async def _complete_moves(self) -> None:
        """Finish each move once its target is in sync: woken by every partition record change, it
        reads only the moving partitions' records (``reassignment.complete``)."""
        backoff = Backoff(INITIAL_BACKOFF_MS, MAX_BACKOFF_MS)
        while True:
            await self._partitions_changed.wait()
            self._partitions_changed.clear()
            if not self._moving:
                continue
            try:
                async with self._lock:
                    await self._complete_caught_up_moves()
                backoff.reset()
            except StoreUnavailableError as error:
                delay_ms = backoff.next_delay()
                self._log.warning("reassignment_completion_retrying", backoff_ms=delay_ms, error=str(error))
                await asyncio.sleep(delay_ms / 1000)
                self._partitions_changed.set()

    async def _complete_caught_up_moves(self) -> None:
        live = self.live_broker_ids()
        held = {key: self._partitions.get(key) for key in self._moving}
        seen = {key: self._records.of(kv) if kv is not None else None for key, kv in held.items()}
        check, forget = moves_to_check(self._moving, seen)
        settled: set[str] = set()
        for key in forget:
            del self._moving[key]
        for key in check:
            kv = held[key]
            if kv is not None and await self._update(kv, partial(complete, live=live), "reassignment_completed"):
                del self._moving[key]
                settled.add(parse_partition_key(key)[0])
        for name in sorted(settled):
            await self._settle_replication_factor(name)

    async def elect_preferred_leaders(
        self, topic: str | None = None, partitions: set[tuple[str, int]] | None = None
    ) -> list[PartitionRecord]:
        """Move leadership back to ``replicas[0]`` wherever it is alive and in the ISR: of every partition,
        of ``topic``'s, or of ``partitions`` only (Kafka's ElectLeaders names them)."""
        prefix = PARTITIONS_PREFIX if topic is None else f"{PARTITIONS_PREFIX}{topic}/"
        async with self._lock:
            await self.fence.check()
            return await self._elect_preferred(prefix, partitions, "preferred_election")

    async def _elect_preferred(
        self, prefix: str, chosen: set[tuple[str, int]] | None, reason: str
    ) -> list[PartitionRecord]:
        """The one preferred election path (the route's and the periodic rebalance's):
        ``preferred_leader_election`` on the partitions under ``prefix`` (only those in
        ``chosen`` when given), recomputed on a fresh read whenever a CAS loses. The
        caller holds the lock."""
        live = self.live_broker_ids()

        def compute(record: PartitionRecord) -> PartitionChange | None:
            if chosen is not None and (record.topic, record.partition) not in chosen:
                return None
            return preferred_leader_election(record, live)

        return await self._update_all(prefix, compute, reason)

    # ---- reconciliation --------------------------------------------------------

    async def _reconcile_all(self) -> None:
        """Bring every partition in line with the live brokers.

        A broker whose broker epoch changed since the last pass restarted in between
        (its old registration's delete and its new one may fall between two looks at
        the broker set). It is first handled as failed — out of every ISR, leadership
        moved — and only then as live again, as Kafka fences a re-registering broker:
        a restarted leader must never keep leading the same epoch with a log that may
        have lost its unflushed tail.
        """
        registrations = self.live_registrations()
        restarted = {
            broker_id
            for broker_id, registration in registrations.items()
            if self._broker_epochs.get(broker_id, registration.broker_epoch) != registration.broker_epoch
        }
        listed = await self._list(PARTITIONS_PREFIX)
        restarted |= {
            record.leader
            for record in map(self._records.of, listed)
            if record.leader in registrations
            and record.leader_broker_epoch != registrations[record.leader].broker_epoch
        }
        if restarted:
            self._log.info("brokers_restarted", brokers=sorted(restarted))
            await self._reconcile_with(set(registrations) - restarted, listed)
        self._broker_epochs = {broker_id: r.broker_epoch for broker_id, r in registrations.items()}
        await self._reconcile_with(set(registrations), None if restarted else listed)

    async def _reconcile_with(self, live: set[int], partitions: list[KeyValue] | None = None) -> None:
        """Reconcile every partition record with ``live``: those of ``partitions`` when given (a
        listing just read; listing 10 000 records twice was a tenth of a failover), else a new listing."""
        topics = {
            kv.key[len(TOPICS_PREFIX) :]: TopicRecord.model_validate_json(kv.value)
            for kv in await self._list(TOPICS_PREFIX)
        }
        if partitions is None:
            partitions = await self._list(PARTITIONS_PREFIX)
        unclean_default = await self._unclean_default()
        present: dict[str, list[PartitionRecord]] = {}
        updates: list[tuple[KeyValue, ComputeChange]] = []
        for kv in partitions:
            topic_name, _ = parse_partition_key(kv.key)
            topic = topics.get(topic_name)
            if topic is None:
                await self._delete_partition(kv)
                continue
            present.setdefault(topic_name, []).append(self._records.of(kv))
            unclean = _unclean_enabled(topic, unclean_default)
            updates.append((kv, partial(reconcile, live_broker_ids=live, unclean_leader_election_enable=unclean)))
        await self._update_batched(updates, "broker_change")
        for topic in topics.values():
            records = present.get(topic.name, [])
            held = {record.partition for record in records}
            missing = [p for p in range(topic.partitions_count) if p not in held]
            if missing:
                await self._complete_topic_creation(topic, missing)
            elif settled_replica_count(topic.partitions_count, records) not in (None, topic.replication_factor):
                await self._settle_replication_factor(topic.name)

    async def _complete_topic_creation(self, topic: TopicRecord, missing: list[int]) -> None:
        """Create the partitions a crashed predecessor did not write: where the creator
        assigned the replicas, as assigned. With fewer live brokers than the replication
        factor it waits for the next broker change rather than create under-replicated
        partitions; brokers being drained count only when the others are too few."""
        live = self.placeable_registrations()
        if len(live) < topic.replication_factor:
            live = self.live_registrations()
        if len(live) < topic.replication_factor:
            self._log.warning(
                "topic_creation_waiting_for_brokers",
                topic=topic.name,
                missing_partitions=missing,
                replication_factor=topic.replication_factor,
                live_brokers=sorted(live),
            )
            return
        placed = assign_replicas(
            topic.partitions_count,
            topic.replication_factor,
            [(broker_id, registration.rack) for broker_id, registration in sorted(live.items())],
        )
        manual = topic.replica_assignment or []
        self._log.warning("topic_creation_completed", topic=topic.name, missing_partitions=missing)
        await self.create_partitions(topic.name, [(p, manual[p] if p < len(manual) else placed[p]) for p in missing])

    async def _rebalance_imbalanced_brokers(self) -> None:
        """Kafka's ``checkAndTriggerAutoLeaderRebalance``: hand back the partitions
        ``leader_balance.partitions_to_rebalance`` picks (see there for the rule).

        The pick reads the term's watched view of the partitions, not the store: it runs
        every few seconds, and listing 10 000 records from the store each time was a tenth
        of the controller's idle profile. Each election is a compare-and-set on the record as
        stored, so a pick from a view a moment old changes nothing it should not. The pick is a
        function of the records and the live brokers, so a check with neither changed since one
        that found nothing is skipped (the scan of 10 000 records every 5 s was 6 to 10 % of an
        idle controller's profile)."""
        live = self.live_broker_ids()
        inputs = (self._partitions.revision, frozenset(live))
        if inputs == self._balanced:
            return
        records = self._records.values()
        chosen = set(partitions_to_rebalance(records, live, self.settings.leader_imbalance_per_broker_percentage))
        if not chosen:
            self._balanced = inputs
            return
        preferred = sorted({r.replicas[0] for r in records if (r.topic, r.partition) in chosen})
        self._log.info("leader_rebalance", partitions=len(chosen), preferred_leaders=preferred)
        await self._elect_preferred(PARTITIONS_PREFIX, chosen, "auto_leader_rebalance")

    # ---- fenced record writes ----------------------------------------------------

    async def _update_all(self, prefix: str, compute: ComputeChange, reason: str) -> list[PartitionRecord]:
        """Apply ``compute`` to every partition under ``prefix``; the records written."""
        written = [await self._update(kv, compute, reason) for kv in await self._list(prefix)]
        return [record for record in written if record is not None]

    async def _update_batched(self, updates: Sequence[tuple[KeyValue, ComputeChange]], reason: str) -> None:
        """``_update`` of each record, the changes written ``MAX_PUT_BATCH`` per store transaction.

        A broker's death changes every partition it held, each a metadata write: one write
        per record took 27 s to lead 10 000 partitions again after a controller failover. A
        batch is one compare-and-set of all its records at once; a batch one of whose records
        changed meanwhile (a leader's ISR change, say) is written one record at a time, each
        recomputed on what is stored.
        """
        changes = []
        live = self.live_registrations()
        for kv, compute in updates:
            change = compute(self._records.of(kv))
            if change is not None:
                changes.append((kv, compute, _with_leader_broker_epoch(change, live)))
        for batch in _in_batches(changes):
            items = [(kv.key, change.record.model_dump_json().encode(), kv.mod_revision) for kv, _, change in batch]
            if await self.fence.put_all(items) is None:
                for kv, compute, _ in batch:
                    await self._update(kv, compute, reason)
                continue
            for _, _, change in batch:
                self._log_change(change, reason)

    async def _update(self, kv: KeyValue, compute: ComputeChange, reason: str) -> PartitionRecord | None:
        """Apply ``compute`` to the record by fenced CAS, re-reading and recomputing
        whenever somebody else changed it first. The record written, or None when
        nothing needed to change (or the record is gone)."""
        current: KeyValue | None = kv
        while current is not None:
            change = compute(self._records.of(current))
            if change is None:
                return None
            change = _with_leader_broker_epoch(change, self.live_registrations())
            if await self.fence.put_if(current.key, change.record.model_dump_json().encode(), current.mod_revision):
                self._log_change(change, reason)
                return change.record
            current = await self._get(current.key)
        return None

    async def create_partitions(self, topic: str, placed: Sequence[tuple[int, list[int]]]) -> list[PartitionRecord]:
        """Write new partitions' records (``new_partition_record``), ``MAX_PUT_BATCH`` per store transaction.

        One commit per partition made creation cost a metadata write per partition (a
        1 000-partition topic took 8 s); a batch is one. A batch some record of which
        exists already (a creation a crashed predecessor left half done) is written one
        record at a time instead, keeping each record that exists.
        """
        records: list[PartitionRecord] = []
        for chunk in _in_batches(placed):
            batch = [self.new_partition_record(topic, p, replicas) for p, replicas in chunk]
            items = [(partition_key(topic, r.partition), r.model_dump_json().encode(), 0) for r in batch]
            if await self.fence.put_all(items) is None:
                batch = [await self._create_partition(record) for record in batch]
            else:
                self._log.info(
                    "partitions_created",
                    topic=topic,
                    partitions=[r.partition for r in batch],
                    leaders=[r.leader for r in batch],
                    replicas=[r.replicas for r in batch],
                )
            records.extend(batch)
        return records

    def new_partition_record(self, topic: str, partition: int, replicas: list[int]) -> PartitionRecord:
        """A new partition's record: ISR = its live replicas (``initial_isr``), led by the first, epochs 0."""
        live = self.live_registrations()
        isr = initial_isr(replicas, live)
        registration = live.get(isr[0])
        return PartitionRecord(
            topic=topic,
            partition=partition,
            leader=isr[0],
            leader_epoch=0,
            partition_epoch=0,
            replicas=replicas,
            isr=isr,
            leader_broker_epoch=registration.broker_epoch if registration is not None else -1,
        )

    async def _create_partition(self, record: PartitionRecord) -> PartitionRecord:
        """Write one new partition's record, unless the partition exists: then the record it has."""
        key = partition_key(record.topic, record.partition)
        if await self.fence.put_if(key, record.model_dump_json().encode(), 0) is None:
            existing = await self._get(key)
            return self._records.of(existing) if existing is not None else record
        self._log.info(
            "partition_created",
            topic=record.topic,
            partition=record.partition,
            leader=record.leader,
            leader_epoch=0,
            replicas=record.replicas,
            isr=record.isr,
        )
        return record

    async def _delete_partition(self, kv: KeyValue) -> None:
        current: KeyValue | None = kv
        while current is not None and not await self.fence.delete_if(current.key, current.mod_revision):
            current = await self._get(current.key)
        topic, partition = parse_partition_key(kv.key)
        self._log.info("partition_deleted", topic=topic, partition=partition)

    async def _get(self, key: str) -> KeyValue | None:
        return await retry_unavailable(partial(self.store.get, key), f"read {key}")

    async def _list(self, prefix: str) -> list[KeyValue]:
        items, _ = await retry_unavailable(lambda: self.store.list(prefix), f"list {prefix}")
        return items

    async def _unclean_default(self) -> bool:
        """``unclean.leader.election.enable`` for topics that do not set it: the cluster-wide
        dynamic broker config when one is set, else this broker's setting."""
        current = await self._get(CLUSTER_CONFIGS_KEY)
        configured = ClusterConfigsRecord.model_validate_json(current.value).configs if current else {}
        if UNCLEAN_LEADER_ELECTION_CONFIG in configured:
            return configured[UNCLEAN_LEADER_ELECTION_CONFIG] == "true"
        return self.settings.unclean_leader_election_enable

    def _log_change(self, change: PartitionChange, reason: str) -> None:
        record = change.record
        fields = {
            "topic": record.topic,
            "partition": record.partition,
            "leader": record.leader,
            "previous_leader": change.previous.leader,
            "leader_epoch": record.leader_epoch,
            "partition_epoch": record.partition_epoch,
            "isr": record.isr,
            "reason": reason,
        }
        if record.replicas != change.previous.replicas or is_moving(record):
            fields |= {
                "replicas": record.replicas,
                "adding_replicas": record.adding_replicas,
                "removing_replicas": record.removing_replicas,
            }
        if change.unclean:
            self._log.warning("unclean_leader_election", possible_data_loss=True, **fields)
        elif change.leader_changed:
            self._log.info("partition_leader_changed", **fields)
        else:
            self._log.info("partition_isr_changed", **fields)


def _in_batches(items: Sequence[T]) -> list[Sequence[T]]:
    """``items`` cut into runs of at most ``MAX_PUT_BATCH``: what one ``put_all`` writes."""
    return [items[start : start + MAX_PUT_BATCH] for start in range(0, len(items), MAX_PUT_BATCH)]


def _with_leader_broker_epoch(change: PartitionChange, live: Mapping[int, BrokerRegistration]) -> PartitionChange:
    """Every written record names the broker epoch of its leader (see ``PartitionRecord``).

    ``live`` is read once per batch of changes: reading the registrations for each of a
    failover's 10 000 records was a tenth of the new controller's profile."""
    registration = live.get(change.record.leader)
    broker_epoch = registration.broker_epoch if registration is not None else -1
    if change.record.leader_broker_epoch == broker_epoch:
        return change
    return dataclasses.replace(change, record=change.record.model_copy(update={"leader_broker_epoch": broker_epoch}))


def _record(kv: KeyValue) -> PartitionRecord:
    return PartitionRecord.model_validate_json(kv.value)


def _unclean_enabled(topic: TopicRecord, default: bool) -> bool:
    configured = topic.configs.get(UNCLEAN_LEADER_ELECTION_CONFIG)
    if configured is None:
        return default
    return configured.strip().lower() == "true"
