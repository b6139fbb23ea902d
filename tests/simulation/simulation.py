"""The seeded simulation: brokers, network, controller, clients and faults, one step at a time.

The brokers are the broker's own drivers (``replica.py``), each on its own loop whose
clock is the simulation's. Each step draws one event from ``random.Random(seed)`` —
deliver one of the messages due (any of them: the network reorders), let time pass,
produce (acks=1, acks=all, or an idempotent producer that retries a batch whose outcome
it does not know), read through ``Partition.read``, deliver metadata, or a fault: crash
(``kill -9`` or power loss), restart (sometimes with the HW checkpoint deleted),
pause/resume, cut/heal links, a clock jump past ``replica_lag_time_max_ms`` (for
everyone, or one broker's clock alone), a slow disk, a leader forgetting its fetch
sessions; the network also loses and duplicates messages — then checks every invariant
(``invariants.py``). With the ``reassign`` profile an admin also moves the partition
between brokers and cancels moves. ``heal`` ends a run: faults stop, everyone comes
back, and the partition's replicas must converge to identical logs holding every
acknowledged record.

A failure raises ``SimulationFailure`` with the seed, the step and the last events.
"""

from __future__ import annotations

import itertools
import random
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path

import structlog

from broker.acks import Acks
from broker.cluster.reassignment import is_moving
from broker.cluster.records import PartitionRecord
from broker.errors import HighwaterError, UnknownLeaderEpoch
from broker.record.codec import encode_batch
from broker.replication import NO_LEADER_EPOCH
from broker.replication.isr_change import IsrChangeRefused
from tests.simulation.invariants import (
    History,
    InvariantViolation,
    check_current_leader,
    check_records,
    check_replica,
)
from tests.simulation.replica import Hooks, ProposeIsrMessage, ReadAnswer, SimBroker
from tests.simulation.world import (
    CONTROLLER,
    AlterIsrResponse,
    Network,
    SimConfig,
    SimController,
)

log = structlog.get_logger(__name__)

TRACE_LINES = 60
STALE_RECORD_PROBABILITY = 0.2
CANCEL_PROBABILITY = 0.3
"""How often a reassignment event cancels the move under way rather than starting another."""
HEAL_ROUNDS = 4_000
IDEMPOTENT_PRODUCER_ID = 4_000


class SimulationFailure(AssertionError):
    pass


@dataclass
class _Produce:
    values: list[bytes]
    acks: Acks
    broker_id: int
    batch: bytes
    idempotent: bool = False
    resent_to_holder: bool = False
    """An idempotent retry sent to a leader whose log already holds the batch: it must be answered, not appended."""


@dataclass
class _IdempotentProducer:
    """One idempotent producer, one batch in flight: a batch whose outcome it does not know
    is sent again, as it is, until it is acknowledged; the broker must not write it twice."""

    next_sequence: int = 0
    unacknowledged: _Produce | None = None
    waiting: bool = False


@dataclass
class _Reader:
    """A consumer: its position and the newest leader epoch it has read under (KIP-320)."""

    position: int = 0
    records_read: int = 0
    leader_epoch: int = NO_LEADER_EPOCH
    reading: bool = False


@dataclass
class Stats:
    steps: int = 0
    produced_batches: int = 0
    acked_all: int = 0
    acked_one: int = 0
    produce_errors: int = 0
    records_read: int = 0
    crashes: int = 0
    power_losses: int = 0
    pauses: int = 0
    link_cuts: int = 0
    clock_jumps: int = 0
    leader_changes: int = 0
    broker_clock_jumps: int = 0
    slow_disks: int = 0
    fetch_session_resets: int = 0
    idempotent_retries: int = 0
    retries_deduplicated: int = 0
    """Idempotent retries acknowledged by a leader that already held the batch (rule 8 holding)."""
    messages_lost: int = 0
    messages_duplicated: int = 0
    moves: int = 0
    """Reassignments started, replaced or cancelled (the ``reassign`` profile)."""
    stale_fetches_refused: int = 0
    """Fetches from a dead incarnation (delayed past a restart) the leaders refused (KIP-903)."""
    streams_opened: int = 0
    """Replication streams followers opened (the ``stream`` transport): one per leader, plus one per break."""
    invariant_checks: int = 0
    """Times every invariant was checked: after each step, and after each round of healing."""

    @property
    def faults(self) -> int:
        """Faults injected: crashes (power losses among them), pauses, cut links, clock jumps,
        slow disks, fetch sessions forgotten, messages lost or duplicated."""
        return (
            self.crashes
            + self.pauses
            + self.link_cuts
            + self.clock_jumps
            + self.broker_clock_jumps
            + self.slow_disks
            + self.fetch_session_resets
            + self.messages_lost
            + self.messages_duplicated
        )


class Simulation:
    def __init__(self, seed: int, config: SimConfig, directory: Path) -> None:
        self.seed = seed
        self.config = config
        self.rng = random.Random(seed)
        self.now_ms = 0
        self.network = Network(self.rng, config)
        self.controller = SimController(config)
        self.history = History()
        self.stats = Stats()
        self.trace_lines: deque[str] = deque(maxlen=TRACE_LINES)
        self._pending: dict[Hashable, _Produce] = {}
        self._produce_ids = 0
        self._idempotent = _IdempotentProducer()
        self._request_ids = itertools.count(1)
        self._readers = [_Reader() for _ in range(2)]
        self._records_checked = 0
        self._faults_enabled = True
        self.min_insync_replicas = config.min_insync_replicas
        """The topic record's ``min.insync.replicas``; brokers apply it when their watch delivers it."""
        hooks = Hooks(
            now_ms=lambda: self.now_ms,
            send=self._send,
            produce_done=self._produce_done,
            trace=self.trace,
            registered_broker_epoch=self.controller.registered_broker_epoch,
            request_ids=lambda: next(self._request_ids),
            rng=self.rng,
        )
        self.brokers = {
            broker_id: SimBroker(broker_id, directory / f"broker-{broker_id}", config, hooks)
            for broker_id in self.controller.broker_ids
        }
        for broker in self.brokers.values():
            broker.live.apply_metadata(self.controller.record, self.min_insync_replicas)

    # ---------------------------------------------------------------- plumbing

    def trace(self, line: str) -> None:
        self.trace_lines.append(f"t={self.now_ms} {line}")

    def _send(self, source: int, destination: int, payload: object) -> None:
        self.network.send(source, destination, payload, self.now_ms)

    def _can_receive(self, node: int) -> bool:
        return node == CONTROLLER or self.brokers[node].active

    def _running(self) -> list[SimBroker]:
        return [broker for broker in self.brokers.values() if broker.running]

    # ------------------------------------------------------------------- steps

    def run(self, steps: int) -> Stats:
        try:
            for _ in range(steps):
                self.step()
            self.heal()
        finally:
            for broker in self.brokers.values():
                broker.shut_down()
        self.stats.messages_lost = self.network.lost_count
        self.stats.messages_duplicated = self.network.duplicated_count
        self.stats.stale_fetches_refused = sum(broker.stale_fetches_refused for broker in self.brokers.values())
        self.stats.streams_opened = sum(broker.streams_opened for broker in self.brokers.values())
        return self.stats

    def step(self) -> None:
        self.stats.steps += 1
        events: list[tuple[float, Callable[[], None]]] = [
            (40, self._deliver),
            (25, self._tick),
            (15, self._produce),
            (8, self._read),
            (8, self._deliver_metadata),
        ]
        if self.config.alter_min_isr:
            events.append((0.5, self._alter_min_isr))
        if self.config.reassign and self._faults_enabled:
            events.append((1.0, self._reassign))
        if self._faults_enabled:
            events += [
                (0.3, self._crash),
                (2.0, self._restart),
                (0.3, self._pause),
                (2.0, self._resume),
                (0.3, self._cut),
                (1.5, self._heal_link),
                (0.2, self._jump_clock),
                (0.2, self._jump_broker_clock),
                (0.3, self._slow_disk),
                (0.3, self._forget_fetch_sessions),
            ]
        weights = [weight for weight, _ in events]
        action = self.rng.choices([event for _, event in events], weights)[0]
        try:
            action()
            self.check()
        except AssertionError as failure:
            raise self._failure(failure) from failure

    def _failure(self, failure: AssertionError) -> SimulationFailure:
        trace = "\n  ".join(self.trace_lines)
        return SimulationFailure(
            f"seed {self.seed} failed at step {self.stats.steps}: {failure}\n"
            f"replay: pytest tests/simulation --seed {self.seed} --steps {self.stats.steps}\n"
            f"record: {self.controller.record}\nlast events:\n  {trace}"
        )

    # ------------------------------------------------------------------ events

    def _deliver(self) -> None:
        ready = self.network.deliverable(self.now_ms, self._can_receive)
        if not ready:
            return self._tick()
        message = self.network.take(self.rng.choice(ready))
        if message is not None:
            self._handle(message)
        return None

    def _handle(self, message) -> None:
        payload = message.payload
        if isinstance(payload, ProposeIsrMessage):
            answer = self.controller.alter_isr(payload.proposal)
            self.trace(
                f"controller alter isr {payload.proposal.new_isr} from b{message.source}: "
                + (f"refused ({answer.reason})" if isinstance(answer, IsrChangeRefused) else "ok")
            )
            self._send(CONTROLLER, message.source, AlterIsrResponse(payload.request_id, answer))
        else:
            self.brokers[message.destination].live.deliver(message.source, payload)

    def _tick(self, advance_ms: int | None = None) -> None:
        self.now_ms += self.rng.randint(1, 20) if advance_ms is None else advance_ms
        before = self.controller.record
        changed = False
        for broker in self.brokers.values():
            if broker.active and self.network.connected(broker.broker_id, CONTROLLER):
                changed |= self.controller.heartbeat(broker.broker_id, broker.incarnation, self.now_ms)
        changed |= self.controller.check_sessions(self.now_ms)
        if changed:
            self._note_record_change(before)
        for broker in self.brokers.values():
            if broker.active:
                broker.live.run()

    def _jump_clock(self) -> None:
        self.stats.clock_jumps += 1
        jump_ms = self.config.replica_lag_time_max_ms + self.rng.randint(1, self.config.replica_lag_time_max_ms)
        self.trace(f"clock jumps {jump_ms} ms")
        self._tick(jump_ms)

    def _jump_broker_clock(self) -> None:
        """One broker's clock jumps ahead (a host's clock stepped, a VM stalled): its timers
        fire early against everyone else's, its lag checks see followers silent for long."""
        active = [broker for broker in self.brokers.values() if broker.active]
        if not active:
            return
        broker = self.rng.choice(active)
        jump_ms = self.rng.randint(1, 2 * self.config.replica_lag_time_max_ms)
        broker.clock_skew_ms += jump_ms
        self.stats.broker_clock_jumps += 1
        self.trace(f"b{broker.broker_id}'s clock jumps {jump_ms} ms")
        broker.live.run()

    def _slow_disk(self) -> None:
        """A broker's disk turns slow for a while: each operation completes up to two long polls later."""
        broker = self.rng.choice(list(self.brokers.values()))
        broker.slow_disk_until_ms = self.now_ms + self.rng.randint(100, 3 * self.config.replica_lag_time_max_ms)
        self.stats.slow_disks += 1
        self.trace(f"b{broker.broker_id}'s disk is slow until t={broker.slow_disk_until_ms}")

    def _forget_fetch_sessions(self) -> None:
        """A leader drops its fetch-session cache (Kafka evicts sessions): the next incremental
        fetch is refused and its follower starts over with a full one."""
        running = self._running()
        if running:
            broker = self.rng.choice(running)
            broker.live.sessions = broker.live.new_sessions()
            self.stats.fetch_session_resets += 1
            self.trace(f"b{broker.broker_id} forgets its fetch sessions")

    def _note_record_change(self, before) -> None:
        record = self.controller.record
        if record.leader != before.leader:
            self.stats.leader_changes += 1
        self.trace(
            f"controller record leader={record.leader} epoch={record.leader_epoch} "
            f"isr={record.isr} live={sorted(self.controller.live)}"
        )

    def _deliver_metadata(self) -> None:
        """A watch delivers the current record or, sometimes, replays one older than a record
        the broker already applied (a re-read after a reconnect): a replica must only ever
        move forward in epoch order. A restarted broker holds no record yet, so it is never
        replayed one: the store holds only the current record."""
        broker = self.rng.choice(list(self.brokers.values()))
        if not broker.running:
            return
        held = broker.core.record
        older = [
            record
            for record in self.controller.history
            if held is not None and record.partition_epoch < held.partition_epoch
        ]
        if older and self.rng.random() < STALE_RECORD_PROBABILITY:
            self._watch(broker, self.rng.choice(older))
        else:
            self._watch(broker)

    def _watch(self, broker: SimBroker, record: PartitionRecord | None = None) -> None:
        """The broker's watch delivers the topic record and a partition record (the current
        one unless named), once its incarnation is registered."""
        if (
            broker.active
            and self.network.connected(broker.broker_id, CONTROLLER)
            and self.controller.registered(broker.broker_id, broker.incarnation)
        ):
            broker.live.apply_metadata(self.controller.record if record is None else record, self.min_insync_replicas)

    def _reassign(self) -> None:
        """An admin moves the partition to a random set of brokers, or cancels the move under way."""
        before = self.controller.record
        if is_moving(before) and self.rng.random() < CANCEL_PROBABILITY:
            target = None
        else:
            target = self.rng.sample(self.controller.broker_ids, self.controller.replication_factor)
        if self.controller.reassign(target):
            self.stats.moves += 1
            self.trace(f"controller {'cancels the move' if target is None else f'moves the partition to {target}'}")
            self._note_record_change(before)

    def _alter_min_isr(self) -> None:
        """An admin alters the topic's ``min.insync.replicas``; no broker knows yet."""
        self.min_insync_replicas = self.rng.randint(1, self.config.broker_count)
        self.trace(f"topic min.insync.replicas altered to {self.min_insync_replicas}")

    def _leaders(self) -> list[SimBroker]:
        return [b for b in self.brokers.values() if b.active and b.leader_state is not None]

    def _produce(self) -> None:
        """A client with possibly stale metadata sends one batch of 1-3 records (or the
        idempotent producer sends its next batch, or again the one it has no answer for)."""
        leaders = self._leaders()
        if not leaders:
            return
        current = self.brokers.get(self.controller.record.leader)
        broker = current if current in leaders and self.rng.random() < 0.85 else self.rng.choice(leaders)
        producer = self._idempotent
        if self.rng.random() < 0.3 and not producer.waiting:
            produce = producer.unacknowledged
            if produce is None:
                produce = producer.unacknowledged = self._new_produce(broker, Acks.ALL, producer.next_sequence)
            else:
                self.stats.idempotent_retries += 1
                produce.broker_id = broker.broker_id
                produce.resent_to_holder = any(value == produce.values[0] for value, _ in broker.disk.records)
            producer.waiting = True
        else:
            produce = self._new_produce(broker, Acks.ALL if self.rng.random() < 0.6 else Acks.ONE, None)
        self._produce_ids += 1
        self._pending[self._produce_ids] = produce
        self.stats.produced_batches += 1
        broker.live.produce(self._produce_ids, produce.batch, produce.acks)

    def _new_produce(self, broker: SimBroker, acks: Acks, sequence: int | None) -> _Produce:
        values = [f"v{self._produce_ids + 1}-{i}".encode() for i in range(self.rng.randint(1, 3))]
        records = [(None, value) for value in values]
        if sequence is None:
            batch = encode_batch(records, base_timestamp=self.now_ms)
        else:
            batch = encode_batch(
                records,
                base_timestamp=self.now_ms,
                producer_id=IDEMPOTENT_PRODUCER_ID,
                producer_epoch=0,
                base_sequence=sequence,
            )
        return _Produce(values, acks, broker.broker_id, batch, idempotent=sequence is not None)

    def _produce_done(self, request_id: Hashable, error: HighwaterError | None, base_offset: int | None) -> None:
        produce = self._pending.pop(request_id, None)
        if produce is None:
            return
        if produce.idempotent:
            self._idempotent.waiting = False
        if error is not None:
            self.stats.produce_errors += 1
            return
        if produce.acks is Acks.ONE:
            self.stats.acked_one += 1
            return
        self.stats.acked_all += 1
        if produce.idempotent:
            self._idempotent.unacknowledged = None
            self._idempotent.next_sequence += len(produce.values)
            self.stats.retries_deduplicated += produce.resent_to_holder
        self.trace(f"acks=all ok b{produce.broker_id} offsets {base_offset}..")
        assert base_offset is not None, "an acks=all produce is answered after its append"
        disk = self.brokers[produce.broker_id].disk
        for index, value in enumerate(produce.values):
            offset = base_offset + index
            held = disk.record_at(offset)
            if held is None or held[0] != value:
                raise InvariantViolation(
                    f"b{produce.broker_id} acknowledged {value!r} at {offset}, where its log holds {held!r}"
                )
            self.history.acknowledge(offset, held)

    def _read(self) -> None:
        """A reader fetches from a broker it believes leads, through ``Partition.read``.

        It names the newest leader epoch it has read under, as a Kafka consumer does: a
        deposed leader that does not know it yet answers UNKNOWN_LEADER_EPOCH; a newer
        leader answers FENCED_LEADER_EPOCH, the reader refreshes its metadata and reads.
        Every record it gets must lie below the leader's HW (the clamp is the driver's).
        """
        leaders = self._leaders()
        if not leaders:
            return
        broker = self.rng.choice(leaders)
        reader = self.rng.choice(self._readers)
        if reader.reading:
            return
        assert broker.leader_state is not None
        refusal = broker.leader_state.check_leader_epoch(reader.leader_epoch)
        if isinstance(refusal, UnknownLeaderEpoch):
            return
        reader.leader_epoch = broker.leader_state.leader_epoch
        log_ = broker.disk.opened_log
        if reader.position > log_.log_end_offset:
            raise InvariantViolation(
                f"reader at {reader.position} is beyond the LEO {log_.log_end_offset} of leader b{broker.broker_id}: "
                "offsets it was shown are gone"
            )
        reader.reading = True
        broker.live.read(reader.position, lambda answer: self._read_answered(reader, broker.broker_id, answer))

    def _read_answered(self, reader: _Reader, broker_id: int, answer: ReadAnswer | None) -> None:
        reader.reading = False
        if answer is None:
            return
        returned, high_watermark = answer
        found = [(offset, view) for offset, view in returned if offset >= reader.position]
        offsets = [offset for offset, _ in found]
        if offsets != list(range(reader.position, reader.position + len(found))):
            raise InvariantViolation(f"reader at {reader.position} got offsets {offsets} from b{broker_id}")
        for offset, view in found:
            if offset >= high_watermark:
                raise InvariantViolation(f"reader got offset {offset} at or above the HW {high_watermark}")
            self.history.expose(offset, view, f"reader via b{broker_id}")
        reader.position += len(found)
        reader.records_read += len(found)
        self.stats.records_read += len(found)

    # ------------------------------------------------------------------ faults

    def _crash(self) -> None:
        running = self._running()
        if not running:
            return
        broker = self.rng.choice(running)
        power_loss = self.config.power_loss and self.rng.random() < 0.5
        self.trace(f"b{broker.broker_id} {'loses power' if power_loss else 'killed -9'}")
        self.stats.crashes += 1
        self.stats.power_losses += power_loss
        for request_id in broker.crash(power_loss):
            self._produce_done(request_id, HighwaterError("connection lost: outcome unknown"), None)
        self.network.drop_to(broker.broker_id)

    def _restart(self) -> None:
        crashed = [broker for broker in self.brokers.values() if not broker.running]
        if not crashed:
            return
        broker = self.rng.choice(crashed)
        hw_checkpoint_lost = self.rng.random() < 0.1
        broker.restart(hw_checkpoint_lost)
        self.trace(
            f"b{broker.broker_id} restarts leo={broker.disk.opened_log.log_end_offset} hw={broker.high_watermark}"
            + (" (HW checkpoint deleted)" if hw_checkpoint_lost else "")
        )

    def _pause(self) -> None:
        running = [broker for broker in self._running() if not broker.paused]
        if running:
            broker = self.rng.choice(running)
            broker.paused = True
            self.stats.pauses += 1
            self.trace(f"b{broker.broker_id} paused")

    def _resume(self) -> None:
        paused = [broker for broker in self.brokers.values() if broker.paused]
        if paused:
            broker = self.rng.choice(paused)
            broker.paused = False
            self.trace(f"b{broker.broker_id} resumed")

    def _cut(self) -> None:
        """Cut one broker off from a random subset of the other nodes (controller included)."""
        broker_id = self.rng.choice(list(self.brokers))
        others = [node for node in [CONTROLLER, *self.brokers] if node != broker_id]
        cut = self.rng.sample(others, self.rng.randint(1, len(others)))
        self.network.cut_links.update(frozenset((broker_id, node)) for node in cut)
        self.stats.link_cuts += 1
        self.trace(f"b{broker_id} cut off from {sorted(cut)}")

    def _heal_link(self) -> None:
        if self.network.cut_links:
            link = self.rng.choice(sorted(self.network.cut_links, key=sorted))
            self.network.cut_links.discard(link)
            self.trace(f"link {sorted(link)} healed")

    # ------------------------------------------------------------------ checks

    def check(self) -> None:
        self.stats.invariant_checks += 1
        records = self.controller.history
        check_records(records[max(0, self._records_checked - 1) :])
        self._records_checked = len(records)
        for broker in self._running():
            check_replica(self.history, broker)
        leader = self.brokers.get(self.controller.record.leader)
        if (
            leader is not None
            and leader.running
            and leader.leader_state is not None
            and leader.leader_state.leader_epoch == self.controller.record.leader_epoch
        ):
            check_current_leader(self.history, leader)

    # ------------------------------------------------------------------- heal

    def heal(self) -> None:
        """No more faults: everyone back, links healed; the logs must converge."""
        self._faults_enabled = False
        self.network.loss_probability = 0.0
        self.network.duplication_probability = 0.0
        self.network.cut_links.clear()
        for broker in self.brokers.values():
            broker.slow_disk_until_ms = -1
            broker.paused = False
            if not broker.running:
                broker.restart(hw_checkpoint_lost=False)
        self.trace("heal: all brokers running, all links up")
        try:
            for _ in range(HEAL_ROUNDS):
                self._heal_round()
                self.check()
                if self._converged():
                    self._check_converged()
                    return
            raise InvariantViolation(f"replicas did not converge within {HEAL_ROUNDS} rounds after healing")
        except AssertionError as failure:
            raise self._failure(failure) from failure

    def _heal_round(self) -> None:
        """Time passes, metadata reaches everyone, every due message is delivered in order."""
        self._tick()
        for broker in self.brokers.values():
            self._watch(broker)
        for _ in range(1_000):
            ready = self.network.deliverable(self.now_ms, self._can_receive)
            if not ready:
                return
            message = self.network.take(ready[0])
            if message is not None:
                self._handle(message)

    def _replicas(self) -> list[SimBroker]:
        return [self.brokers[broker_id] for broker_id in self.controller.record.replicas]

    def _converged(self) -> bool:
        record = self.controller.record
        leader = self.brokers.get(record.leader)
        if leader is None or leader.leader_state is None or is_moving(record):
            return False
        leader_end = leader.disk.opened_log.log_end_offset
        return len(leader.leader_state.isr) == len(record.replicas) and all(
            broker.disk.opened_log.log_end_offset == leader_end and broker.high_watermark == leader_end
            for broker in self._replicas()
        )

    def _check_converged(self) -> None:
        leader = self.brokers[self.controller.record.leader]
        for broker in self._replicas():
            if broker.disk.records != leader.disk.records:
                raise InvariantViolation(
                    f"b{broker.broker_id}'s log differs from leader b{leader.broker_id}'s after healing"
                )
        for offset, view in self.history.acked_all.items():
            if leader.disk.record_at(offset) != view:
                raise InvariantViolation(f"acknowledged record {view!r} at {offset} is gone after healing")
        log.info("simulation.converged", seed=self.seed, log_end_offset=leader.disk.opened_log.log_end_offset)
