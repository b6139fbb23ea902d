"""Transactional actors of the chaos tier, on librdkafka (confluent-kafka) through the Kafka listeners.

librdkafka is the reference transactional client, and its calls block: each actor runs
in a worker thread of its own (``run(stop)``) and records into the run's ``History``
(appending to a list is atomic).

* ``TransactionalWriter`` — begins a transaction, produces 1 to 4 unique values
  (``writer-transaction-index``) to random partitions, then commits or (a share of the
  time) aborts, and records each transaction with the outcome the protocol proves
  (``history``). A producer that cannot go on (fenced, fatal, a commit whose answer is
  lost for good) is replaced by a new incarnation of the same transactional id, whose
  ``init_transactions`` finishes or aborts whatever the old one left.
* ``TransformJob`` — consume-transform-produce, exactly once: reads the writers' topic
  ``read_committed`` from its group's committed offsets, and writes ``ctp:<value>`` to
  the same partition of its sink with the input offsets in the same transaction
  (``send_offsets_to_transaction``). After any failure it aborts and starts over from
  the group's committed offsets with a new consumer and a new producer incarnation.
* ``KafkaReader`` — a ``read_committed`` librdkafka consumer over every partition from
  the beginning: Kafka's Fetch path with the aborted-transactions list.
"""

from __future__ import annotations

import contextlib
import random
import threading
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from tests.chaos.history import ABORTED, COMMITTED, READ_COMMITTED, UNKNOWN, History, ReadEvent, TxnOp
from tests.chaos.txn_checker import TRANSFORM_PREFIX

TRANSACTION_TIMEOUT_MS = 10_000
"""An abandoned transaction is aborted by its coordinator this long after it began."""
CALL_TIMEOUT_S = 10.0
CALL_ATTEMPTS = 3
"""A retriable answer to commit or abort is retried this many times, then the producer is replaced."""
ABORT_SHARE = 0.3
VALUES_PER_TRANSACTION = (1, 4)
TRANSFORM_BATCH = 20
ERROR_BACKOFF_S = 0.2


def _config(bootstrap: str, **settings: object) -> dict[str, object]:
    """librdkafka logs only critical events: a broker killed on purpose is not news (errors reach the calls)."""
    return {"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000, "log_level": 2, **settings}


def _producer(bootstrap: str, transactional_id: str) -> Producer:
    return Producer(
        _config(
            bootstrap,
            **{"transactional.id": transactional_id, "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS, "linger.ms": 1},
        )
    )


def _error(exception: KafkaException) -> KafkaError:
    return exception.args[0]


def initialized(bootstrap: str, transactional_id: str, stop: threading.Event, errors: list[str]) -> Producer | None:
    """A new incarnation of ``transactional_id`` once ``init_transactions`` succeeds (None if ``stop`` came first)."""
    while not stop.is_set():
        producer = _producer(bootstrap, transactional_id)
        try:
            producer.init_transactions(CALL_TIMEOUT_S)
        except KafkaException as exception:
            errors.append(f"{transactional_id} init: {_error(exception).name()}")
            stop.wait(ERROR_BACKOFF_S)
            continue
        return producer
    return None


def commit(producer: Producer) -> KafkaError | None:
    """Commit, retrying retriable answers (librdkafka resumes the same commit); the last error, or None."""
    return _retried(lambda: producer.commit_transaction(CALL_TIMEOUT_S))


def abort(producer: Producer) -> bool:
    """Abort, retrying retriable answers; whether the producer may begin another transaction."""
    return _retried(lambda: producer.abort_transaction(CALL_TIMEOUT_S)) is None


def _retried(call: Callable[[], None]) -> KafkaError | None:
    error: KafkaError | None = None
    for _ in range(CALL_ATTEMPTS):
        try:
            call()
        except KafkaException as exception:
            error = _error(exception)
            if not error.retriable():
                return error
            continue
        return None
    return error


class TransactionalWriter:
    def __init__(self, name: str, bootstrap: str, topic: str, partitions: int, history: History, seed: int) -> None:
        self.name, self.bootstrap, self.topic, self.partitions, self.history = (
            name,
            bootstrap,
            topic,
            partitions,
            history,
        )
        self.rng = random.Random(seed)
        self._count = 0

    def run(self, stop: threading.Event) -> None:
        producer: Producer | None = None
        while not stop.is_set():
            if producer is None:
                producer = initialized(self.bootstrap, self.name, stop, self.history.client_errors)
            elif not self._transaction(producer):
                producer = None

    def _transaction(self, producer: Producer) -> bool:
        """One transaction; whether ``producer`` may go on."""
        self._count += 1
        txn = TxnOp(self.name, self.topic)
        self.history.transactions.append(txn)
        try:
            producer.begin_transaction()
            for index in range(self.rng.randint(*VALUES_PER_TRANSACTION)):
                partition = self.rng.randrange(self.partitions)
                value = f"{self.name}-{self._count}-{index}"
                producer.produce(self.topic, value.encode(), partition=partition)
                txn.values.append((partition, value))
        except (KafkaException, BufferError) as exception:
            txn.complete(ABORTED, _describe(exception))
            return abort(producer)
        if self.rng.random() < ABORT_SHARE:
            txn.complete(ABORTED)
            return abort(producer)
        error = commit(producer)
        if error is None:
            txn.complete(COMMITTED)
            return True
        txn.complete(UNKNOWN, error.name())
        return error.txn_requires_abort() and abort(producer)


class TransformJob:
    def __init__(
        self, name: str, bootstrap: str, source: str, sink: str, partitions: int, group: str, history: History
    ) -> None:
        self.name, self.bootstrap, self.source, self.sink, self.group = name, bootstrap, source, sink, group
        self.partitions, self.history = partitions, history
        self.transformed = 0

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            producer = initialized(self.bootstrap, self.name, stop, self.history.client_errors)
            if producer is None:
                return
            consumer = self._consumer()
            try:
                while not stop.is_set() and self._step(consumer, producer):
                    pass
            finally:
                consumer.close()

    def _consumer(self) -> Consumer:
        """Assigned every partition at the group's committed offsets (``read_committed`` asks for stable ones)."""
        consumer = Consumer(
            _config(
                self.bootstrap,
                **{
                    "group.id": self.group,
                    "isolation.level": READ_COMMITTED,
                    "enable.auto.commit": False,
                    "auto.offset.reset": "earliest",
                },
            )
        )
        consumer.assign([TopicPartition(self.source, p) for p in range(self.partitions)])
        return consumer

    def _step(self, consumer: Consumer, producer: Producer) -> bool:
        """One batch in and out, in one transaction; whether to go on with this consumer and producer."""
        messages = [m for m in consumer.consume(TRANSFORM_BATCH, 0.5) if m.error() is None]
        if not messages:
            return True
        ends: dict[int, int] = {}
        try:
            producer.begin_transaction()
            for message in messages:
                partition = _partition(message)
                producer.produce(self.sink, TRANSFORM_PREFIX.encode() + (message.value() or b""), partition=partition)
                ends[partition] = _offset(message) + 1
            offsets = [TopicPartition(self.source, p, offset) for p, offset in ends.items()]
            producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), CALL_TIMEOUT_S)
        except (KafkaException, BufferError) as exception:
            self.history.client_errors.append(f"{self.name}: {_describe(exception)}")
            abort(producer)
            return False
        error = commit(producer)
        if error is not None:
            self.history.client_errors.append(f"{self.name} commit: {error.name()}")
            return False
        self.transformed += len(messages)
        return True


class KafkaReader:
    def __init__(self, name: str, bootstrap: str, topic: str, partitions: int, history: History) -> None:
        self.name, self.bootstrap, self.topic, self.partitions, self.history = (
            name,
            bootstrap,
            topic,
            partitions,
            history,
        )
        history.isolation[name] = READ_COMMITTED

    def run(self, stop: threading.Event) -> None:
        consumer = Consumer(
            _config(
                self.bootstrap,
                **{"group.id": self.name, "isolation.level": READ_COMMITTED, "enable.auto.commit": False},
            )
        )
        try:
            consumer.assign([TopicPartition(self.topic, p, 0) for p in range(self.partitions)])
            while not stop.is_set():
                for message in consumer.consume(100, 0.2):
                    error = message.error()
                    if error is not None:
                        self.history.reader_errors.append(f"{self.name}: {error.name()}")
                        continue
                    value = (message.value() or b"").decode()
                    event = ReadEvent(self.name, self.topic, _partition(message), _offset(message), value)
                    self.history.reads.append(event)
        finally:
            with contextlib.suppress(KafkaException, RuntimeError):
                consumer.close()


def _partition(message: Message) -> int:
    partition = message.partition()
    assert partition is not None
    return partition


def _offset(message: Message) -> int:
    offset = message.offset()
    assert offset is not None
    return offset


def _describe(exception: BaseException) -> str:
    return _error(exception).name() if isinstance(exception, KafkaException) else type(exception).__name__


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's stable committed offsets (partition → next offset; 0 where none)."""
    consumer = Consumer(_config(bootstrap, **{"group.id": group, "isolation.level": READ_COMMITTED}))
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], CALL_TIMEOUT_S * 3)
    finally:
        consumer.close()
    return {tp.partition: max(tp.offset, 0) for tp in found}
