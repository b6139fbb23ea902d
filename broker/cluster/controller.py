"""Controller election and the controller facade every broker runs.

Every broker runs a ``Controller``. It campaigns for ``/controller`` with a
create-only CAS bound to the broker's membership lease (value ``{"broker_id": id}``);
the winner's controller epoch is the key's ``mod_revision``. The others watch the key
and campaign again as soon as it is deleted — which happens when the controller's
lease ends: revoked at a clean shutdown, expired when its process died or paused
longer than the session timeout. Exactly one broker holds the key at a time, so
exactly one ``ControllerTerm`` acts at a time, and its writes are fenced by its
epoch (``controller_fence``), so a controller that has not yet noticed it was
deposed cannot overwrite its successor's decisions.

A term ends when any of these happens first: the watch sees ``/controller`` deleted
or replaced, the broker's lease is lost, or a fenced write finds the epoch
superseded. The broker then campaigns again (with its new lease, if it had to
re-register).

Operations (``create_topic``, ``delete_topic``, ``controlled_shutdown``,
``elect_preferred_leaders``, ``update_topic``, ``create_partitions``) run only on the
active controller; elsewhere they raise ``NotController`` naming the current controller,
so the caller can forward.

``update_topic`` and ``create_partitions`` run under the term's lock, like every
other operation of the term (Kafka's controller event queue), so a growth never
interleaves with a deletion, a reconciliation or another growth of the topic; and they
change the topic record by a fenced compare-and-set on its revision, so a write based
on a stale read is recomputed rather than applied. Growing a topic writes the topic
record (the commit point, as for a creation) before the new partition records, so a
controller that dies in between leaves a topic its successor completes
(``ControllerTerm._complete_topic_creation``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Sequence

import structlog

from broker.backoff import Backoff
from broker.cluster.controller_term import ControllerSettings, ControllerTerm
from broker.cluster.membership import BrokerMembership
from broker.cluster.placement import assign_added_partitions
from broker.cluster.prefix_view import INITIAL_BACKOFF_MS, MAX_BACKOFF_MS
from broker.cluster.reassignment import PartitionMove
from broker.cluster.records import (
    CONTROLLER_KEY,
    PARTITIONS_PREFIX,
    ClusterConfigsRecord,
    PartitionRecord,
    TopicRecord,
    validate_topic_name,
)
from broker.cluster.store import (
    CompactedError,
    KeyValue,
    Lease,
    LeaseNotFoundError,
    MetadataStore,
    StoreUnavailableError,
)
from broker.errors import InvalidReplicationFactor, LeaderNotAvailable, NotController
from broker.topics.configs import TopicConfigs
from broker.topics.new_topic import NewTopic
from broker.topics.policy import check_create_name, check_delete

log = structlog.get_logger(__name__)

UNEXPECTED_ERROR_BACKOFF_MS = 1000

__all__ = ["Controller", "ControllerSettings"]


class Controller:
    """This broker's controller elector; while it holds ``/controller``, the active
    controller too. See the module docstring. ``topic_configs`` is the broker's resolver of
    topic configs, which each term's checks use (None: the built-in topic defaults)."""

    def __init__(
        self,
        store: MetadataStore,
        membership: BrokerMembership,
        settings: ControllerSettings | None = None,
        topic_configs: TopicConfigs | None = None,
    ) -> None:
        self.store = store
        self.membership = membership
        self.broker_id = membership.broker_id
        self.settings = settings or ControllerSettings()
        self.topic_configs = topic_configs
        self.controller_id = -1
        self.controller_epoch = -1
        self.term: ControllerTerm | None = None
        self._task: asyncio.Task[None] | None = None
        self._value = json.dumps({"broker_id": self.broker_id}).encode()
        self._log = log.bind(broker_id=self.broker_id)

    async def start(self) -> None:
        """Start campaigning (in the background; the membership must be registering)."""
        self._task = asyncio.get_running_loop().create_task(
            self._campaign_forever(), name=f"controller-elector {self.broker_id}"
        )

    async def close(self) -> None:
        """Stop campaigning and acting. Does not give up ``/controller``: it goes with
        the broker's lease (``BrokerMembership.deregister`` revokes it at once)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    @property
    def is_active(self) -> bool:
        """True while this broker is the controller and has reconciled once."""
        term = self.term
        return term is not None and term.ready.is_set() and not term.fence.deposed

    def active_term(self) -> ControllerTerm:
        if not self.is_active:
            raise NotController(
                f"broker {self.broker_id} is not the controller; the controller is broker {self.controller_id}",
                controller_id=self.controller_id,
            )
        assert self.term is not None
        return self.term

    async def create_topic(self, topic: NewTopic, *, internal: bool = False) -> list[PartitionRecord]:
        """``internal``: the broker's own topic (``__consumer_offsets``), which no client may create."""
        validate_topic_name(topic.name)
        check_create_name(topic.name, internal=internal)
        return await self.active_term().create_topic(topic, internal=internal)

    async def delete_topic(self, name: str) -> None:
        check_delete(name)
        await self.active_term().delete_topic(name)

    async def controlled_shutdown(self, broker_id: int) -> list[PartitionRecord]:
        return await self.active_term().controlled_shutdown(broker_id)

    async def elect_preferred_leaders(
        self, topic: str | None = None, partitions: set[tuple[str, int]] | None = None
    ) -> list[PartitionRecord]:
        return await self.active_term().elect_preferred_leaders(topic, partitions)

    async def alter_reassignments(self, moves: Sequence[PartitionMove]) -> list[PartitionRecord]:
        return await self.active_term().alter_reassignments(moves)

    async def drain_broker(self, broker_id: int) -> tuple[list[PartitionRecord], list[str]]:
        return await self.active_term().drain_broker(broker_id)

    async def undrain_broker(self, broker_id: int) -> bool:
        return await self.active_term().undrain_broker(broker_id)

    async def balance_brokers(self, tolerance: float, max_moves: int) -> tuple[list[PartitionRecord], list[str]]:
        return await self.active_term().balance_brokers(tolerance, max_moves)

    async def update_topic(self, name: str, compute: Callable[[TopicRecord], TopicRecord]) -> tuple[TopicRecord, int]:
        """Write ``compute(current record)`` by fenced CAS; the record as it now stands and the
        store revision at which it does (a broker's view holds it once it has applied that revision).

        ``compute`` may raise to refuse the change (nothing is written). ``UnknownTopic``
        when there is no such topic.
        """
        term = self.active_term()
        async with term._lock:
            return await term.update_topic(name, compute)

    async def update_configs(
        self, key: str, compute: Callable[[dict[str, str]], dict[str, str]]
    ) -> tuple[dict[str, str], int]:
        """Write ``compute(current configs)`` to the configs record at ``key`` (cluster-wide,
        ``CLUSTER_CONFIGS_KEY``, or one broker's, ``broker_configs_key``) by fenced CAS; the
        configs as they now stand and the store revision at which they do (0 when nothing
        was ever written).

        ``compute`` may raise to refuse the change (nothing is written).
        """
        term = self.active_term()
        async with term._lock:
            while True:
                await term.fence.check()
                current = await self.store.get(key)
                configs = ClusterConfigsRecord.model_validate_json(current.value).configs if current else {}
                updated = compute(configs)
                if updated == configs:
                    return configs, current.mod_revision if current else 0
                value = ClusterConfigsRecord(configs=updated).model_dump_json().encode()
                revision = await term.fence.put_if(key, value, current.mod_revision if current else 0)
                if revision is not None:
                    self._log.info("configs_updated", key=key, configs=updated)
                    return updated, revision

    async def create_partitions(self, name: str, partitions_count: int) -> list[PartitionRecord]:
        """Grow topic ``name`` to ``partitions_count`` partitions; the new partition records.

        New replicas are placed by ``placement.assign_added_partitions`` over the live
        brokers that are not being drained; each new partition starts empty with its
        preferred replica leading and every replica in sync (epochs 0), as at creation.
        Replica lists change only under the term's lock (reassignments), which this
        holds, so the existing ones are read once, before the CAS.
        """
        term = self.active_term()
        async with term._lock:
            await term.catch_up_with_brokers()
            values, _ = await self.store.list(f"{PARTITIONS_PREFIX}{name}/")
            replicas = {record.partition: record.replicas for record in map(_partition_record, values)}
            placed: list[list[int]] = []

            def grow(topic: TopicRecord) -> TopicRecord:
                if any(p not in replicas for p in range(topic.partitions_count)):
                    raise LeaderNotAvailable(f"topic '{name}' is still being created; retry", topic_name=name)
                existing = [replicas[p] for p in range(topic.partitions_count)]
                try:
                    placed[:] = assign_added_partitions(existing, partitions_count, term.placeable())
                except InvalidReplicationFactor as error:
                    raise term.explain_unplaceable(error) from None
                return topic.model_copy(update={"partitions_count": partitions_count})

            await term.update_topic(name, grow)
            first = partitions_count - len(placed)
            return await term.create_partitions(name, [(first + i, replicas) for i, replicas in enumerate(placed)])

    # ---- election ----------------------------------------------------------------

    async def _campaign_forever(self) -> None:
        backoff = Backoff(INITIAL_BACKOFF_MS, MAX_BACKOFF_MS)
        while True:
            try:
                lease = await self.membership.wait_registered()
                holder = await self._claim_or_observe(lease)
                if holder is None:
                    continue
                self.controller_id = json.loads(holder.value)["broker_id"]
                self.controller_epoch = holder.mod_revision
                if holder.lease == lease.id:
                    await self._lead(holder, lease)
                else:
                    self._log.info(
                        "controller_observed", controller_id=self.controller_id, controller_epoch=self.controller_epoch
                    )
                    await self._wait_for_controller_change(holder.mod_revision)
                backoff.reset()
            except (StoreUnavailableError, CompactedError) as error:
                delay_ms = backoff.next_delay()
                self._log.warning("controller_election_retry", backoff_ms=delay_ms, error=str(error))
                await asyncio.sleep(delay_ms / 1000)

    async def _claim_or_observe(self, lease: Lease) -> KeyValue | None:
        """The current ``/controller``, created by us if absent; None to retry."""
        holder = await self.store.get(CONTROLLER_KEY)
        if holder is not None:
            return holder
        try:
            revision = await self.store.put_if(CONTROLLER_KEY, self._value, 0, lease=lease.id)
        except LeaseNotFoundError:
            await self.membership.wait_lease_lost(lease)
            return None
        if revision is None:
            return None
        return KeyValue(CONTROLLER_KEY, self._value, revision, revision, lease.id)

    async def _lead(self, holder: KeyValue, lease: Lease) -> None:
        """Run a term until the first sign of deposition, then stop it."""
        term = ControllerTerm(self.store, self.broker_id, holder.mod_revision, self.settings, self.topic_configs)
        self._log.info("controller_elected", controller_epoch=holder.mod_revision, lease_id=lease.id)
        self.term = term
        watchers = {
            asyncio.create_task(term.run(), name=f"controller-term {holder.mod_revision}"),
            asyncio.create_task(self._wait_for_controller_change(holder.mod_revision)),
            asyncio.create_task(self.membership.wait_lease_lost(lease)),
        }
        try:
            done, _ = await asyncio.wait(watchers, return_when=asyncio.FIRST_COMPLETED)
        finally:
            term.fence.deposed = True
            self.term = None
            for task in watchers:
                task.cancel()
            await asyncio.gather(*watchers, return_exceptions=True)
        self._log.info("controller_term_ended", controller_epoch=holder.mod_revision)
        for task in done:
            await self._report_term_end(task)

    async def _report_term_end(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        error = task.exception()
        if error is None or isinstance(error, NotController):
            return
        if isinstance(error, (StoreUnavailableError, CompactedError)):
            raise error
        self._log.error("controller_term_failed", error=repr(error), exc_info=error)
        await asyncio.sleep(UNEXPECTED_ERROR_BACKOFF_MS / 1000)

    async def _wait_for_controller_change(self, revision: int) -> None:
        """Return at the first change of ``/controller`` after ``revision``."""
        events = self.store.watch(CONTROLLER_KEY, revision + 1)
        async with contextlib.aclosing(events):  # type: ignore[type-var]
            async for event in events:
                if event.key == CONTROLLER_KEY:
                    self._log.info("controller_changed", change=event.type, revision=event.mod_revision)
                    return


def _partition_record(kv: KeyValue) -> PartitionRecord:
    return PartitionRecord.model_validate_json(kv.value)
