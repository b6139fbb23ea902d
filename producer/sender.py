"""``Sender``: the one task that moves ready batches from the accumulator to partition leaders.

It runs on the producer's event loop and owns all send state (pipelines, sequence
numbers, the producer identity), so nothing needs a lock. Each loop turn it

1. fails batches whose ``delivery_timeout_ms`` passed (unsent or waiting for a retry),
2. for each partition with a ready batch or a queued retry whose leader is known,
   sends what its ``PartitionPipeline`` allows, each batch in its own request task,
   straight to the leader's binary endpoint,
3. sleeps until a request answers, a record makes a batch ready, or the next linger,
   backoff or metadata retry is due.

Errors: ``NOT_LEADER_OR_FOLLOWER`` (421) re-routes to the leader it names and refreshes
the topic's metadata; an unreachable broker refreshes metadata too; retriable errors
retry with ``retry_backoff_ms`` until the batch's delivery deadline; anything else
fails the batch's records. An ``OUT_OF_ORDER_SEQUENCE_NUMBER`` refusal of a batch that
overtook an unanswered or failed older one is retried without backoff: it only lost a
race. Without idempotence one request per partition is in flight (see
``_max_in_flight``). Under idempotence a batch that fails for good leaves a gap
in its partition's sequence, so (as Kafka's idempotent producer does, KIP-360) sending
pauses until nothing is in flight, a new producer id is obtained, every sequence
restarts at 0, and queued retries are stamped again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from broker.acks import Acks
from broker.client.errors import BrokerUnreachable, DeliveryTimedOut
from broker.client.http import ClusterClient
from broker.client.library_log import library_logger
from broker.client.types import ProduceAck, TopicPartition
from broker.clock import monotonic_ms
from broker.errors import (
    OUTCOME_UNKNOWN,
    HighwaterError,
    NotLeaderOrFollower,
    OutOfOrderSequence,
    ServiceUnavailable,
)
from broker.record.header import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE
from broker.waiting import wait_event
from producer.accumulator import RecordAccumulator
from producer.batch import ProducerBatch
from producer.partitioner import StickyPartitioner
from producer.pipeline import PartitionPipeline, SequenceNumbers
from producer.transactions import TransactionManager

log = library_logger(__name__)

Completion = Callable[[ProducerBatch, ProduceAck | None, HighwaterError | None], None]
IDENTITY_VALID = "valid"
IDENTITY_RENEWAL_NEEDED = "renewal_needed"
"""A batch failed for good: its partition's sequence has a gap; renew once nothing is in flight."""
IDENTITY_RENEWING = "renewing"
IDLE_WAIT_S = 1.0
"""Longest sleep with nothing scheduled; a wake-up event normally ends it sooner."""


@dataclass(frozen=True, slots=True)
class SendOptions:
    acks: Acks
    compression: int
    max_in_flight: int
    request_timeout_ms: int
    retry_backoff_ms: int
    idempotent: bool
    transactional_id: str | None = None


class Sender:
    def __init__(
        self,
        client: ClusterClient,
        accumulator: RecordAccumulator,
        partitioner: StickyPartitioner,
        options: SendOptions,
        complete: Completion,
        transaction: TransactionManager | None = None,
    ) -> None:
        self._client = client
        self._accumulator = accumulator
        self._partitioner = partitioner
        self._options = options
        self._complete = complete
        self._transaction = transaction
        self.idempotent = options.idempotent
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = NO_PRODUCER_EPOCH
        self._sequences = SequenceNumbers()
        self._identity = IDENTITY_VALID
        self._pipelines: dict[TopicPartition, PartitionPipeline] = {}
        self._requests: set[asyncio.Task[None]] = set()
        self._refreshing: set[str] = set()
        self._wakeup = asyncio.Event()
        self._stopping = False
        self.requests_sent = 0

    # ------------------------------------------------------------------ identity

    async def init_identity(self) -> None:
        """Get a producer id for idempotence (from the transaction coordinator for a transactional
        producer); without one (older broker) send without sequences."""
        if not self.idempotent:
            return
        if self._transaction is not None:
            identity: tuple[int, int] | None = await self._transaction.initialize()
        else:
            identity = await self._client.init_producer_id()
        if identity is None:
            log.warning("idempotence_unavailable reason=the cluster does not hand out producer ids")
            self.idempotent = False
            return
        self.producer_id, self.producer_epoch = identity
        self._sequences.reset()
        for pipeline in self._pipelines.values():
            pipeline.forget_sequence_leader()
        self._identity = IDENTITY_VALID
        log.debug("producer_id_assigned producer_id=%d producer_epoch=%d", self.producer_id, self.producer_epoch)

    @property
    def identity_renewal_needed(self) -> bool:
        """A batch failed for good: its partition's sequence has a gap until a new identity is obtained
        (a transactional producer gets it when its transaction is aborted)."""
        return self._identity != IDENTITY_VALID

    # ------------------------------------------------------------------ loop

    def wakeup(self) -> None:
        self._wakeup.set()

    def busy(self) -> bool:
        return bool(self._requests) or any(not pipeline.idle for pipeline in self._pipelines.values())

    async def run(self) -> None:
        while not (self._stopping and not self._accumulator.has_unsent() and not self.busy()):
            self._wakeup.clear()
            current_ms = monotonic_ms()
            self._expire(current_ms)
            wait_ms = self._send_ready(current_ms)
            await wait_event(self._wakeup, IDLE_WAIT_S if wait_ms is None else wait_ms / 1000)

    def stop(self) -> None:
        """Finish what is queued and in flight, then leave ``run``."""
        self._stopping = True
        self.wakeup()

    async def abort(self) -> None:
        """Cancel requests in flight; their records fail (the outcome of each is unknown)."""
        for task in list(self._requests):
            task.cancel()
        await asyncio.gather(*self._requests, return_exceptions=True)

    def send_partition_now(self, tp: TopicPartition) -> None:
        """Send what ``tp`` may send, right from ``send`` (safe: the sender's state is only ever touched
        on the loop, between awaits). What cannot go yet (no leader, a backoff, the in-flight limit,
        an identity renewal, stopping) is left to the sender task."""
        if not self._stopping and self._identity == IDENTITY_VALID:
            self._send_partition(tp, monotonic_ms(), True)

    def _send_ready(self, current_ms: int) -> int | None:
        """Send what may go now; how long until something else may (ms), or ``None``."""
        check = self._accumulator.ready(current_ms)
        ready = set(check.partitions)
        retrying = {tp for tp, pipeline in self._pipelines.items() if pipeline.retry_queue}
        wait_ms = check.next_check_ms - current_ms if check.next_check_ms is not None else None
        blocked = False
        for tp in sorted(ready | retrying):
            blocked |= not self._send_partition(tp, current_ms, tp in ready)
        if (
            self._identity == IDENTITY_RENEWAL_NEEDED
            and self._transaction is None
            and not any(p.in_flight for p in self._pipelines.values())
        ):
            self._renew_identity()
        if blocked or retrying:
            backoff_ms = max(1, self._options.retry_backoff_ms)
            wait_ms = backoff_ms if wait_ms is None else min(wait_ms, backoff_ms)
        return wait_ms

    def _send_partition(self, tp: TopicPartition, current_ms: int, has_ready: bool) -> bool:
        """Send the partition's sendable batches; False when it has to wait for metadata or a backoff."""
        leader_url = self._client.metadata.leader_url(tp)
        if leader_url is None:
            self._refresh(tp.topic)
            return False
        if self._identity != IDENTITY_VALID:
            return False
        pipeline = self._pipelines.get(tp)
        if pipeline is None:
            pipeline = self._pipelines[tp] = PartitionPipeline(self._max_in_flight())
        while True:
            batch = pipeline.next_retry(current_ms)
            if batch is None and has_ready and pipeline.can_send_new(current_ms, leader_url):
                if not self._in_transaction(tp):
                    return True
                batch = self._accumulator.drain(tp)
                if batch is not None:
                    available = self._client.metadata.available_partitions(tp.topic)
                    self._partitioner.on_batch_sent(tp.topic, tp.partition, available)
            if batch is None:
                return current_ms >= pipeline.backoff_until_ms
            self._stamp(batch)
            pipeline.on_sent(batch)
            task = asyncio.get_running_loop().create_task(self._send(batch, leader_url, pipeline))
            self._requests.add(task)
            task.add_done_callback(self._requests.discard)

    def _in_transaction(self, tp: TopicPartition) -> bool:
        """Whether ``tp``'s new batches may go: always outside transactions; inside one, once the coordinator
        added ``tp`` to it (the sender is woken then). A transaction that failed fails what it still holds."""
        transaction = self._transaction
        if transaction is None or transaction.may_send(tp):
            return True
        if transaction.error is not None:
            while (batch := self._accumulator.drain(tp)) is not None:
                self._finish(batch, None, transaction.error)
        return False

    def _max_in_flight(self) -> int:
        """Requests in flight per partition: HTTP requests on separate connections may reach the
        leader in any order (unlike Kafka's one ordered TCP connection), and only sequence numbers
        let the broker refuse a batch that overtook another; without idempotence, one at a time."""
        return self._options.max_in_flight if self.idempotent else 1

    def _stamp(self, batch: ProducerBatch) -> None:
        """Encode the batch on its first send, and again only if the producer identity changed since."""
        if self.idempotent:
            if (
                batch.encoded is not None
                and batch.producer_id == self.producer_id
                and (batch.producer_epoch == self.producer_epoch)
            ):
                return
            base_sequence = self._sequences.next_base_sequence(batch.tp, batch.record_count)
            transactional = self._transaction is not None
            batch.stamp(self.producer_id, self.producer_epoch, base_sequence, self._options.compression, transactional)
        elif batch.encoded is None:
            batch.stamp(NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE, self._options.compression)

    # ------------------------------------------------------------------ requests

    async def _send(self, batch: ProducerBatch, leader_url: str, pipeline: PartitionPipeline) -> None:
        assert batch.encoded is not None
        self.requests_sent += 1
        try:
            ack = await self._client.produce(
                leader_url,
                batch.tp,
                batch.encoded,
                self._options.acks,
                self._options.request_timeout_ms,
                self._options.transactional_id,
            )
        except HighwaterError as error:
            self._on_error(batch, pipeline, error)
        except (ValueError, KeyError, TypeError) as error:
            log.warning(
                "produce_answer_unreadable topic=%s partition=%d",
                batch.tp.topic,
                batch.tp.partition,
                exc_info=True,
            )
            self._on_error(batch, pipeline, ServiceUnavailable(f"unreadable produce answer: {error!r}"))
        except asyncio.CancelledError:
            pipeline.on_terminal_failure(batch)
            self._finish(
                batch, None, ServiceUnavailable(f"the producer closed with the batch in flight. {OUTCOME_UNKNOWN}")
            )
            raise
        else:
            pipeline.on_acknowledged(batch, leader_url)
            self._finish(batch, ack, None)
        finally:
            self.wakeup()

    def _on_error(self, batch: ProducerBatch, pipeline: PartitionPipeline, error: HighwaterError) -> None:
        tp = batch.tp
        if isinstance(error, NotLeaderOrFollower):
            self._client.metadata.apply_leader_hint(tp, error.details.get("leader_id"), error.details.get("leader_url"))
            self._refresh(tp.topic)
        elif isinstance(error, (BrokerUnreachable, ServiceUnavailable)):
            self._client.metadata.mark_stale(tp.topic)
            self._refresh(tp.topic)
        current_ms = monotonic_ms()
        retriable = error.retriable or (isinstance(error, OutOfOrderSequence) and pipeline.follows_a_failure(batch))
        if retriable and current_ms < batch.deadline_ms:
            log.debug(
                "produce_retry topic=%s partition=%d error=%s attempt=%d base_sequence=%d",
                tp.topic,
                tp.partition,
                error.name,
                batch.attempts,
                batch.base_sequence,
            )
            echo = isinstance(error, OutOfOrderSequence)
            pipeline.on_retriable_failure(batch, current_ms, 0 if echo else self._options.retry_backoff_ms)
            return
        pipeline.on_terminal_failure(batch)
        if retriable:
            error = DeliveryTimedOut(
                f"{tp.topic}-{tp.partition}: gave up after {batch.attempts} attempts "
                f"(last error {error.name}: {error.message}). {OUTCOME_UNKNOWN}"
            )
        log.warning(
            "produce_failed topic=%s partition=%d error=%s attempts=%d",
            tp.topic,
            tp.partition,
            error.name,
            batch.attempts,
        )
        self._finish(batch, None, error)
        if self.idempotent:
            self._identity = IDENTITY_RENEWAL_NEEDED

    def _finish(self, batch: ProducerBatch, ack: ProduceAck | None, error: HighwaterError | None) -> None:
        self._accumulator.deallocate(batch)
        self._complete(batch, ack, error)

    def _expire(self, current_ms: int) -> None:
        expired = self._accumulator.expire(current_ms)
        for pipeline in self._pipelines.values():
            expired.extend(pipeline.expire_retries(current_ms))
        for batch in expired:
            sent = f" after {batch.attempts} attempts. {OUTCOME_UNKNOWN}" if batch.attempts else " (never sent)"
            tp = batch.tp
            self._finish(batch, None, DeliveryTimedOut(f"{tp.topic}-{tp.partition}: delivery timeout expired{sent}"))
            if self.idempotent and batch.attempts:
                self._identity = IDENTITY_RENEWAL_NEEDED

    # ------------------------------------------------------------------ background work

    def _refresh(self, topic: str) -> None:
        if topic in self._refreshing:
            return
        self._refreshing.add(topic)
        task = asyncio.get_running_loop().create_task(self._refresh_topic(topic))
        self._requests.add(task)
        task.add_done_callback(self._requests.discard)

    async def _refresh_topic(self, topic: str) -> None:
        try:
            await self._client.refresh_topic(topic)
        except HighwaterError as error:
            log.debug("metadata_refresh_failed topic=%s error=%s message=%s", topic, error.name, error.message)
            await asyncio.sleep(self._options.retry_backoff_ms / 1000)
        finally:
            self._refreshing.discard(topic)
            self.wakeup()

    def _renew_identity(self) -> None:
        self._identity = IDENTITY_RENEWING
        task = asyncio.get_running_loop().create_task(self._renew())
        self._requests.add(task)
        task.add_done_callback(self._requests.discard)

    async def _renew(self) -> None:
        try:
            await self.init_identity()
        except HighwaterError as error:
            log.warning("producer_id_renewal_failed error=%s message=%s", error.name, error.message)
            await asyncio.sleep(self._options.retry_backoff_ms / 1000)
            self._identity = IDENTITY_RENEWAL_NEEDED
        finally:
            self.wakeup()
