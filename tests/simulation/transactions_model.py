"""A seeded model of the transaction protocol, run on the broker's own pure decisions.

The coordinator is ``broker.transactions.transitions``; each partition leader is a real
``PartitionTransactions`` (the open transactions) with the aborted ones searched as a
segment's index searches them (``collect_aborted``), ``TransactionGuard``
(KIP-890) and ``ProducerStateManager`` (sequences), over a log of real batches. What is
modelled is the network between them: every message (a producer's write, a
coordinator's marker) is delivered in a random order, and a random share of them is
delivered again later, arbitrarily late (a retried request whose first copy was slow:
Jepsen's delayed write and delayed marker). Leaders fail over (a new leader knows the
log, not what its predecessor verified).

The producer behaves as Kafka's clients do: it commits only when every write of the
transaction was acknowledged, else aborts, and after an abort with a write unanswered
it starts again at a new epoch (KIP-360).

``check`` reads every partition as a ``read_committed`` consumer does (up to the last
stable offset, the aborted transactions dropped, through ``kept_batches``) and reports
Jepsen's anomalies: aborted reads, lost or torn committed transactions, duplicates, and
transactions left open for ever. ``defended=False`` turns off the marker serial check,
to show the check finds what the defense prevents.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from broker.errors import HighwaterError
from broker.errors.transactions import ConcurrentTransactions
from broker.record.codec import RecordInput, encode_batch
from broker.record.committed import kept_batches
from broker.record.control import TransactionMarker, encode_marker_batch
from broker.record.decode import decode_batch
from broker.record.header import BatchHeader, read_header, stamp
from broker.replication.txn_guard import Admission, MarkerCheck, TransactionGuard
from broker.storage.producer_state import ProducerStateManager
from broker.storage.transaction_index import collect_aborted
from broker.storage.transactions import AbortedTransaction, PartitionTransactions
from broker.transactions import transitions
from broker.transactions.metadata import TransactionMetadata, TxnState

TXN = "model-writer"
TOPIC = "model"
NOW = 1_000
LEADER_EPOCH = 0


@dataclass
class Write:
    partition: int
    producer_id: int
    producer_epoch: int
    sequence: int
    value: str
    transaction: int


@dataclass
class MarkerMessage:
    partition: int
    marker: TransactionMarker
    serial: int


class ModelPartition:
    """One partition as its leader holds it: the log (real batches) and the leader's transactional state."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.data = bytearray()
        self.end = 0
        self.transactions = PartitionTransactions()
        self.aborted: list[AbortedTransaction] = []
        self.producers = ProducerStateManager(TOPIC, number)
        self.guard = TransactionGuard(TOPIC, number)

    def fail_over(self) -> None:
        """A new leader: the log and everything derived from it stay, what was verified is gone."""
        self.guard = TransactionGuard(TOPIC, self.number)

    def append(self, batch: bytes, marker: TransactionMarker | None) -> BatchHeader:
        position = len(self.data)
        self.data += batch
        stamp(self.data, position, self.end, LEADER_EPOCH)
        header = read_header(self.data, position)
        closed = self.transactions.apply(header, marker)
        if closed is not None:
            self.aborted.append(closed)
        self.end = header.next_offset
        self.transactions.on_high_watermark(self.end)
        return header

    def read_committed(self) -> list[str]:
        stable = self.transactions.last_stable_offset(self.end)
        found: list[AbortedTransaction] = []
        collect_aborted(self.aborted, 0, stable, found)
        aborted = [(txn.producer_id, txn.first_offset) for txn in found]
        values = []
        for header in kept_batches(bytes(self.data), aborted):
            if header.next_offset > stable:
                break
            _, records = decode_batch(self.data, header.position)
            values += [record.value.decode() for record in records if record.value is not None]
        return values


@dataclass
class Outcome:
    acked: dict[int, list[str]] = field(default_factory=dict)
    """Transaction number -> the values its writes were acknowledged for."""
    committed: set[int] = field(default_factory=set)
    aborted: set[int] = field(default_factory=set)
    attempted: dict[int, list[str]] = field(default_factory=dict)


class TransactionModel:
    def __init__(self, seed: int, *, partitions: int = 3, defended: bool = True) -> None:
        self.rng = random.Random(seed)
        self.partitions = [ModelPartition(p) for p in range(partitions)]
        self.defended = defended
        self.state: TransactionMetadata | None = None
        self.in_flight: list[Write | MarkerMessage] = []
        self.outcome = Outcome()
        self.transaction = 0
        self.pending_writes: dict[tuple[int, int], Write] = {}
        self.sequences: dict[int, int] = {}
        self.needs_new_epoch = False
        self.markers_left: set[int] = set()
        self.phase = "init"
        self.faults = 0

    # -- the coordinator (pure transitions; every decision applied at once, as if durable) --

    def _apply(self, step: transitions.Step) -> None:
        if step.write is not None:
            self.state = step.write
            if step.write.state.preparing:
                self._send_markers(step.write)
        if step.error is not None:
            raise step.error

    def _send_markers(self, state: TransactionMetadata) -> None:
        marker = TransactionMarker(
            state.producer_id, state.producer_epoch, state.state is TxnState.PREPARE_COMMIT, coordinator_epoch=0
        )
        self.markers_left = {partition for _, partition in state.partitions}
        for _, partition in sorted(state.partitions):
            self.in_flight.append(MarkerMessage(partition, marker, state.serial))

    def _marker_acked(self, partition: int) -> None:
        self.markers_left.discard(partition)
        if not self.markers_left and self.state is not None and self.state.state.preparing:
            self.state = transitions.complete(self.state, NOW)

    # -- the producer ------------------------------------------------------------------

    def producer_step(self) -> None:
        try:
            if self.phase == "init":
                self._init()
            elif self.phase == "begin":
                self._begin()
            elif self.phase == "sending" and not self._unanswered():
                self._end(commit=True)
            elif self.phase == "sending" and self.rng.random() < 0.1:
                self._end(commit=False)  # the client's request timeout: abort what is unanswered
        except ConcurrentTransactions:
            return

    def _init(self) -> None:
        current = self.state
        new_id = 7000 + self.transaction if transitions.needs_producer_id(current) else None
        self._apply(
            transitions.init_producer_id(
                current, TXN, 60_000, max_timeout_ms=900_000, now_ms=NOW, new_producer_id=new_id
            )
        )
        self.sequences.clear()
        self.needs_new_epoch = False
        self.phase = "begin"

    def _begin(self) -> None:
        assert self.state is not None
        chosen = self.rng.sample(range(len(self.partitions)), self.rng.randint(1, len(self.partitions)))
        self._apply(
            transitions.add_partitions(
                self.state, TXN, self.state.producer_id, self.state.producer_epoch, [(TOPIC, p) for p in chosen], NOW
            )
        )
        self.transaction += 1
        number = self.transaction
        self.outcome.acked[number] = []
        self.outcome.attempted[number] = []
        for partition in chosen:
            for i in range(self.rng.randint(1, 3)):
                sequence = self.sequences.get(partition, 0)
                self.sequences[partition] = sequence + 1
                value = f"t{number}-p{partition}-{i}"
                write = Write(partition, self.state.producer_id, self.state.producer_epoch, sequence, value, number)
                self.outcome.attempted[number].append(value)
                self.pending_writes[(partition, sequence)] = write
                self.in_flight.append(write)
        self.phase = "sending"

    def _unanswered(self) -> bool:
        return any(w.transaction == self.transaction for w in self.pending_writes.values())

    def _end(self, *, commit: bool) -> None:
        assert self.state is not None
        self._apply(
            transitions.end_transaction(self.state, TXN, self.state.producer_id, self.state.producer_epoch, commit, NOW)
        )
        (self.outcome.committed if commit else self.outcome.aborted).add(self.transaction)
        if not commit and self._unanswered():
            self.needs_new_epoch = True
        self.pending_writes = {key: w for key, w in self.pending_writes.items() if w.transaction != self.transaction}
        self.phase = "ending"

    def await_completion(self) -> None:
        if self.phase == "ending" and self.state is not None and self.state.state.complete:
            self.phase = "init" if self.needs_new_epoch else "begin"

    # -- the network -------------------------------------------------------------------

    def deliver(self) -> None:
        index = self.rng.randrange(len(self.in_flight))
        message = self.in_flight[index]
        if self.rng.random() < 0.15:
            self.faults += 1  # a copy stays in flight: delivered again, later
        else:
            self.in_flight.pop(index)
        if isinstance(message, Write):
            self._deliver_write(message)
        else:
            self._deliver_marker(message)

    def _deliver_write(self, write: Write) -> None:
        partition = self.partitions[write.partition]
        batch = encode_batch(
            [RecordInput(None, write.value.encode(), (), NOW)],
            producer_id=write.producer_id,
            producer_epoch=write.producer_epoch,
            base_sequence=write.sequence,
            is_transactional=True,
        )
        header = read_header(batch)
        opened = partition.transactions.open_transaction(write.producer_id)
        try:
            if partition.guard.admit(header, None if opened is None else opened.producer_epoch) is Admission.VERIFY:
                serial = transitions.verify_partition(
                    self.state, TXN, write.producer_id, write.producer_epoch, (TOPIC, write.partition)
                )
                partition.guard.on_verified(write.producer_id, write.producer_epoch, serial)
            if partition.producers.find_duplicate(header) is None:
                appended = partition.append(batch, None)
                partition.producers.record(appended)
        except HighwaterError:
            return
        acked = self.pending_writes.pop((write.partition, write.sequence), None)
        if acked is not None and acked.transaction == write.transaction:
            self.outcome.acked[write.transaction].append(write.value)

    def _deliver_marker(self, message: MarkerMessage) -> None:
        partition = self.partitions[message.partition]
        marker = message.marker
        opened = partition.transactions.open_transaction(marker.producer_id)
        try:
            serial = (
                message.serial if self.defended else _verified_serial(partition, marker.producer_id, message.serial)
            )
            check = partition.guard.check_marker(
                marker.producer_id, marker.producer_epoch, serial, None if opened is None else opened.producer_epoch
            )
            if check is MarkerCheck.CONFIRM and self.defended:
                state = self.state
                if state is None or not (state.serial == message.serial and state.state.preparing):
                    return
        except HighwaterError:
            return
        partition.append(encode_marker_batch(marker, NOW), marker)
        partition.guard.on_marker_written(marker.producer_id)
        self._marker_acked(message.partition)

    # -- running and checking ------------------------------------------------------------

    def run(self, steps: int) -> None:
        for _ in range(steps):
            roll = self.rng.random()
            if roll < 0.05:
                self.rng.choice(self.partitions).fail_over()
                self.faults += 1
            elif self.in_flight and roll < 0.75:
                self.deliver()
            else:
                self.producer_step()
            self.await_completion()
        self.settle()

    def settle(self) -> None:
        """End the last transaction and deliver everything still in flight, late copies included."""
        for _ in range(10_000):
            if self.phase == "sending":
                self._end(commit=not self._unanswered())
            self.await_completion()
            if not self.in_flight and self.phase in ("begin", "init"):
                return
            if self.in_flight:
                message = self.in_flight.pop(self.rng.randrange(len(self.in_flight)))
                if isinstance(message, Write):
                    self._deliver_write(message)
                else:
                    self._deliver_marker(message)
        raise AssertionError("the model did not settle")

    def check(self) -> list[str]:
        anomalies = []
        visible = [value for partition in self.partitions for value in partition.read_committed()]
        seen = set(visible)
        aborted_values = {v for n in self.outcome.aborted for v in self.outcome.attempted[n]}
        for value in sorted(seen & aborted_values):
            anomalies.append(f"aborted read: {value}")
        for number in sorted(self.outcome.committed):
            missing = [v for v in self.outcome.acked[number] if v not in seen]
            if missing:
                anomalies.append(f"committed transaction {number} lost or torn: {missing} not visible")
        for value in sorted({v for v in visible if visible.count(v) > 1}):
            anomalies.append(f"duplicate: {value}")
        for partition in self.partitions:
            if partition.transactions.open_transactions:
                anomalies.append(f"partition {partition.number} holds a transaction open for ever")
        return anomalies


def _verified_serial(partition: ModelPartition, producer_id: int, sent: int) -> int:
    """Without the defense a leader takes any marker as ending the transaction open there."""
    verified = partition.guard.verified(producer_id)
    return sent if verified is None else verified.serial
