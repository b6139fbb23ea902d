"""The simulated world around the brokers: a fake clock, an in-memory network, a controller.

Nothing here is asynchronous or reads a real clock. Time is ``World.now_ms`` and moves
only when the simulation advances it. Every random choice comes from the one
``random.Random(seed)`` the simulation owns, so a seed replays a run exactly.

Network model (what a TCP connection between two brokers can do to a request):

- a message is delivered after a random delay, in any order relative to others
  (the simulation picks *which* deliverable message goes next);
- it may be lost on send (``message_loss_probability``) or because the link between
  sender and receiver is cut when it is sent or when it would arrive;
- a paused or crashed receiver gets nothing; messages to a paused broker wait.

The controller is the node ``CONTROLLER``. It holds the one partition record and
treats a broker as alive while its session lease is kept: the broker runs, is not
paused and can reach the controller. A broker silent for ``session_timeout_ms`` is
dead, and the record is reconciled with the live set by the real election rules
(``broker.cluster.election.reconcile``, clean elections only). A restarted broker
registers a new broker epoch (``incarnation``); if the controller still counted its
previous incarnation live, that one is handled as failed first (Kafka's bounced
broker). A broker acts on metadata only once its current incarnation is registered.
ISR proposals are compare-and-set on ``(leader, leader_epoch, partition_epoch)``
(KIP-497) and refused when they name a broker the controller holds dead (KIP-841).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from broker.cluster.election import reconcile
from broker.cluster.reassignment import (
    check_target,
    complete,
    is_moving,
    original_replicas,
    reassign,
    target_replicas,
)
from broker.cluster.records import PartitionRecord
from broker.errors import InvalidReplicaAssignment
from broker.replication import ProposeIsr
from broker.replication.broker_epoch import UNKNOWN_BROKER_EPOCH
from broker.replication.isr_change import IsrChangeAnswer, IsrChangeRefused, decide_isr_change
from broker.storage.log_config import FLUSH_FSYNC

CONTROLLER = 0
"""Node id of the controller; brokers are 1..broker_count."""

TOPIC = "sim"
PARTITION = 0


@dataclass(frozen=True)
class SimConfig:
    """One simulated cluster: sizes, timings (fake milliseconds) and fault rates."""

    broker_count: int = 3
    min_insync_replicas: int = 2
    flush_policy: str = FLUSH_FSYNC
    flush_interval_ms: int = 200
    power_loss: bool = True
    """Crashes may drop bytes not yet fsynced (segment files cut to their fsynced size)."""
    follower_fsync: bool = True
    """Under the ``fsync`` policy a follower fsyncs what it appended before its next fetch."""
    replica_lag_time_max_ms: int = 1_000
    session_timeout_ms: int = 600
    fetch_max_wait_ms: int = 100
    fetch_timeout_ms: int = 400
    fetch_backoff_ms: int = 50
    fetch_max_bytes: int = 2_048
    produce_timeout_ms: int = 1_500
    hw_checkpoint_interval_ms: int = 150
    segment_bytes: int = 2_048
    message_loss_probability: float = 0.02
    message_duplication_probability: float = 0.01
    """A message delivered twice (a retransmission): the second copy must change nothing."""
    max_message_delay_ms: int = 40
    alter_min_isr: bool = False
    """The topic's ``min.insync.replicas`` is altered during the run (1..broker_count), and each
    broker applies the new value when its watch delivers the topic record, at its own moment."""
    fetch_transport: str = "messages"
    """How followers fetch: "messages" (each fetch and answer a message of its own) or "stream"
    (the broker's replication stream, ``broker.replica_io.replication_stream``, on simulated
    connections: ``tests.simulation.streams``)."""
    inline_follower_flush: bool = False
    """A follower fsyncs a small lone answer on its loop, as the broker does
    (``partition.INLINE_FLUSH_MAX_BYTES``); off, every follower fsync goes through the
    (possibly slow) simulated disk's executor."""
    replication_factor: int = 0
    """Replicas of the partition, the first brokers; 0: every broker."""
    reassign: bool = False
    """The partition is moved during the run (KIP-455, ``broker.cluster.reassignment``): to a
    random set of ``replication_factor`` live brokers, or a move under way is cancelled; the
    controller completes a move once its target is in the ISR. A broker that is no longer a
    replica stops fetching and keeps its log, so one added back later starts from a stale log."""
    move_waits_for_sync: bool = True
    """The controller completes a move only once its target is in the ISR. Off (a negative
    control): it takes the target as in sync at once, as a controller that skipped the catch-up would."""
    fence_restarted_brokers: bool = True
    """Kafka's rule (ZK controller's bounced brokers, KRaft's new incarnation): a broker that
    re-registers with a new broker epoch is first handled as failed — removed from the ISR,
    its leadership moved — so it can never resume leading an epoch it led before a crash."""


@dataclass
class Message:
    source: int
    destination: int
    deliver_at_ms: int
    payload: Any


@dataclass
class Network:
    """Messages in flight between nodes, with per-link cuts."""

    rng: random.Random
    config: SimConfig
    in_flight: list[Message] = field(default_factory=list)
    cut_links: set[frozenset[int]] = field(default_factory=set)
    lost_count: int = 0
    duplicated_count: int = 0
    loss_probability: float = -1.0
    """Chance a send is lost; starts at ``config.message_loss_probability``."""
    duplication_probability: float = -1.0
    """Chance a send arrives twice; starts at ``config.message_duplication_probability``."""

    def __post_init__(self) -> None:
        if self.loss_probability < 0:
            self.loss_probability = self.config.message_loss_probability
        if self.duplication_probability < 0:
            self.duplication_probability = self.config.message_duplication_probability

    def connected(self, a: int, b: int) -> bool:
        return a == b or frozenset((a, b)) not in self.cut_links

    def send(self, source: int, destination: int, payload: Any, now_ms: int) -> None:
        if not self.connected(source, destination) or self.rng.random() < self.loss_probability:
            self.lost_count += 1
            return
        copies = 2 if self.rng.random() < self.duplication_probability else 1
        self.duplicated_count += copies - 1
        for _ in range(copies):
            delay_ms = self.rng.randint(0, self.config.max_message_delay_ms)
            if self.rng.random() < 0.03:
                delay_ms += self.rng.randint(100, 3 * self.config.fetch_timeout_ms)
            self.in_flight.append(Message(source, destination, now_ms + delay_ms, payload))

    def deliverable(self, now_ms: int, can_receive) -> list[int]:
        """Indexes of messages due now whose receiver can take them."""
        return [
            index
            for index, message in enumerate(self.in_flight)
            if message.deliver_at_ms <= now_ms and can_receive(message.destination)
        ]

    def take(self, index: int) -> Message | None:
        """Remove a message; ``None`` when its link was cut while it travelled (lost)."""
        message = self.in_flight.pop(index)
        if not self.connected(message.source, message.destination):
            self.lost_count += 1
            return None
        return message

    def drop_to(self, node: int) -> None:
        """A crashed node's socket buffers are gone."""
        self.in_flight = [m for m in self.in_flight if m.destination != node]


@dataclass(frozen=True)
class AlterIsrResponse:
    request_id: int
    answer: IsrChangeAnswer


class SimController:
    """The partition record, broker sessions, and the election and ISR-change rules."""

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self.broker_ids = list(range(1, config.broker_count + 1))
        self.replication_factor = config.replication_factor or config.broker_count
        replicas = self.broker_ids[: self.replication_factor]
        self.record = PartitionRecord(
            topic=TOPIC,
            partition=PARTITION,
            leader=replicas[0],
            leader_epoch=0,
            partition_epoch=0,
            replicas=replicas,
            isr=replicas,
        )
        self.last_heartbeat_ms: dict[int, int] = {broker_id: 0 for broker_id in self.broker_ids}
        self.incarnations: dict[int, int] = {broker_id: 0 for broker_id in self.broker_ids}
        self.live: set[int] = set(self.broker_ids)
        self.history: list[PartitionRecord] = [self.record]

    def heartbeat(self, broker_id: int, incarnation: int, now_ms: int) -> bool:
        """Keep the session alive; a new incarnation fences the previous one first."""
        self.last_heartbeat_ms[broker_id] = now_ms
        if self.incarnations[broker_id] == incarnation:
            return False
        self.incarnations[broker_id] = incarnation
        if not self.config.fence_restarted_brokers or broker_id not in self.live:
            return False
        self.live = self.live - {broker_id}
        return self._reconcile()

    def registered(self, broker_id: int, incarnation: int) -> bool:
        return self.incarnations[broker_id] == incarnation

    def registered_broker_epoch(self, broker_id: int) -> int:
        """The broker epoch of a live broker's registration; a dead one has none."""
        return self.incarnations[broker_id] if broker_id in self.live else UNKNOWN_BROKER_EPOCH

    def check_sessions(self, now_ms: int) -> bool:
        """Expire silent brokers' sessions, admit heartbeating ones; reconcile on change."""
        live = {
            broker_id
            for broker_id, beat_ms in self.last_heartbeat_ms.items()
            if now_ms - beat_ms <= self.config.session_timeout_ms
        }
        if live == self.live:
            return False
        self.live = live
        return self._reconcile()

    def _reconcile(self) -> bool:
        change = reconcile(self.record, self.live, False)
        if change is None:
            return False
        self._set(change.record)
        return True

    def alter_isr(self, proposal: ProposeIsr) -> IsrChangeAnswer:
        """Compare-and-set an ISR change; refuse stale epochs, dead members (KIP-497/841) and
        joining replicas whose incarnation is no longer the registered one (KIP-903)."""
        registered = {broker_id: self.incarnations[broker_id] for broker_id in self.live}
        answer = decide_isr_change(self.record, proposal, registered)
        if not isinstance(answer, IsrChangeRefused):
            self._set(answer)
        return answer

    def reassign(self, target: list[int] | None) -> bool:
        """Start, replace or cancel (``None``) a move, checked as the controller checks it; whether
        the record changed. A move whose target is already in sync completes at once."""
        record = self.record
        try:
            if target is not None:
                check_target(record, target, self.replication_factor, self.live)
            change = reassign(record, original_replicas(record) if target is None else target, self.live)
        except InvalidReplicaAssignment:
            return False
        if change is None:
            return False
        self._set(change.record)
        return True

    def _set(self, record: PartitionRecord) -> None:
        """Write ``record``; a move whose target it brings in sync completes in a second write,
        as the controller's completion loop does on the change."""
        self.record = record
        self.history.append(record)
        if not self.config.move_waits_for_sync and is_moving(record):
            record = record.model_copy(update={"isr": target_replicas(record)})
        completed = complete(record, self.live)
        if completed is not None:
            self.record = completed.record
            self.history.append(completed.record)
