"""The groups of one ``__consumer_offsets`` partition, as its leader (their coordinator) holds them.

A shard is rebuilt by replaying its partition from the log start (``apply_record`` for
every record, in offset order) and then kept current by the coordinator, which applies
each commit after it is written with acks=all. Membership is held in memory only: after
a coordinator change members get ``UNKNOWN_MEMBER_ID`` and rejoin (KIP-848's recovery),
while committed offsets survive in the log. Classic-protocol groups (Kafka clients'
JoinGroup/SyncGroup, ``broker.groups.classic``) live in the same ``GroupState``, next
to the same committed offsets, so every view of offsets and lag serves both.

Invariant: a commit is applied only if its record offset in ``__consumer_offsets`` is
above the one already applied for that partition, so concurrent commits end in log
order whatever order their acknowledgements arrive in.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from broker.errors.groups import GroupIdNotFound
from broker.groups.assignors import TopicPartition
from broker.groups.classic import ClassicGroup
from broker.groups.lag_status import CommitSample, new_window
from broker.groups.membership import ConsumerGroup
from broker.groups.offsets_records import OffsetKey, OffsetValue
from broker.groups.rest_instances import InstanceKey, RestInstance


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    metadata: str
    commit_timestamp_ms: int
    record_offset: int
    """Where the commit sits in ``__consumer_offsets``."""


@dataclass(slots=True)
class GroupState:
    membership: ConsumerGroup
    offsets: dict[TopicPartition, CommittedOffset] = field(default_factory=dict)
    windows: dict[TopicPartition, deque[CommitSample]] = field(default_factory=dict)
    deleted_at_record_offset: dict[TopicPartition, int] = field(default_factory=dict)
    classic: ClassicGroup | None = None
    rest_instances: dict[str, RestInstance] = field(default_factory=dict)
    """REST Proxy v2 consumer instances (``broker.groups.rest_instances``); a subscribed one is
    also in ``membership.members`` under its name once the coordinator has joined it."""
    """Members of Kafka's classic protocol (JoinGroup/SyncGroup), if a Kafka client joined; a group
    has members of one protocol at a time, so ``classic.members`` and ``membership.members`` are
    never both non-empty."""
    pending: dict[int, dict[TopicPartition, CommittedOffset]] = field(default_factory=dict)
    """Offsets committed inside a transaction (TxnOffsetCommit), by producer id, until its marker:
    a COMMIT applies them, an ABORT drops them (``OffsetsShard.apply_marker``)."""

    @property
    def is_empty(self) -> bool:
        return (
            not self.membership.members
            and not self.classic_members
            and not self.offsets
            and not self.rest_instances
            and not self.pending
        )

    @property
    def classic_members(self) -> int:
        return len(self.classic.members) if self.classic is not None else 0

    def subscribes_to(self, topic: str) -> bool:
        """Whether a member of the group subscribes to ``topic`` (OffsetDelete keeps such a topic's offsets).

        HTTP and REST v2 members say their topics; a classic member's are read from its
        JoinGroup metadata, and one that cannot be read counts as subscribed to every topic,
        as in Kafka. A group without members subscribes to nothing.
        """
        if topic in self.membership.subscribed_topics():
            return True
        if not self.classic_members or self.classic is None:
            return False
        topics = self.classic.subscribed_topics()
        return topics is None or topic in topics

    def position(self, tp: TopicPartition) -> CommittedOffset | None:
        """The commit a consumer of ``tp`` resumes from: None when there is none, or when it is negative.

        Kafka stores any offset a client commits, and kafkajs's ``resetOffsets`` commits its
        ``-2`` (earliest) or ``-1`` (latest) literally; Kafka's consumers and tools then read a
        negative one as no committed offset (the consumer follows its reset policy,
        ``kafka-consumer-groups`` prints ``-``). So does every view here but OffsetFetch,
        which answers what was stored, as Kafka does.
        """
        committed = self.offsets.get(tp)
        return committed if committed is not None and committed.offset >= 0 else None

    def positions(self) -> dict[TopicPartition, CommittedOffset]:
        """Every partition's ``position`` that is one."""
        return {tp: committed for tp, committed in self.offsets.items() if committed.offset >= 0}

    def apply_commit(self, tp: TopicPartition, committed: CommittedOffset) -> CommitSample | None:
        """Apply a commit unless a newer commit or delete is applied already; the lag sample it makes, if any.

        A negative offset (``position``) is stored but makes no sample: it is no position.
        """
        current = self.offsets.get(tp)
        newest = max(current.record_offset if current else -1, self.deleted_at_record_offset.get(tp, -1))
        if committed.record_offset <= newest:
            return None
        self.offsets[tp] = committed
        if committed.offset < 0:
            self.windows.pop(tp, None)
            return None
        sample = CommitSample(committed.offset, committed.commit_timestamp_ms, None)
        self.windows.setdefault(tp, new_window()).append(sample)
        return sample

    def apply_delete(self, tp: TopicPartition, record_offset: int) -> None:
        current = self.offsets.get(tp)
        if current is not None and current.record_offset < record_offset:
            del self.offsets[tp]
            self.windows.pop(tp, None)
        self.deleted_at_record_offset[tp] = record_offset


class OffsetsShard:
    """Groups coordinated through one ``__consumer_offsets`` partition during one leader epoch."""

    def __init__(self, partition: int, leader_epoch: int) -> None:
        self.partition = partition
        self.leader_epoch = leader_epoch
        self.groups: dict[str, GroupState] = {}
        self.loaded = False
        self.records_replayed = 0

    def group(self, group_id: str, assignor: str = "uniform") -> GroupState:
        state = self.groups.get(group_id)
        if state is None:
            state = self.groups[group_id] = GroupState(ConsumerGroup(group_id, assignor))
        return state

    def existing_group(self, group_id: str) -> GroupState | None:
        state = self.groups.get(group_id)
        return None if state is None or state.is_empty else state

    def required_group(self, group_id: str) -> GroupState:
        """``existing_group``, or ``GroupIdNotFound`` (both doors answer an unknown group so)."""
        state = self.existing_group(group_id)
        if state is None:
            raise GroupIdNotFound(f"consumer group {group_id!r} does not exist (no members, no committed offsets)")
        return state

    def apply_record(
        self, record_offset: int, key: bytes | None, value: bytes | None, producer_id: int | None = None
    ) -> None:
        """Replay one ``__consumer_offsets`` record (unknown keys are skipped).

        An instance record replays with ``last_used_ms`` 0; the coordinator starts the idle
        clocks when the load completes (``touch_instances``). ``producer_id``: the record
        is a transaction's (TxnOffsetCommit), pending until that producer's marker.
        """
        parsed = OffsetKey.decode(key) if key is not None else None
        if parsed is None:
            instance_key = InstanceKey.decode(key) if key is not None else None
            if instance_key is not None:
                self.apply_instance(instance_key, value, 0)
                self.records_replayed += 1
            return
        state = self.group(parsed.group_id)
        tp = (parsed.topic, parsed.partition)
        if value is None:
            state.apply_delete(tp, record_offset)
        else:
            decoded = OffsetValue.decode(value)
            committed = CommittedOffset(decoded.offset, decoded.metadata, decoded.commit_timestamp_ms, record_offset)
            if producer_id is None:
                state.apply_commit(tp, committed)
            else:
                state.pending.setdefault(producer_id, {})[tp] = committed
        self.records_replayed += 1

    def apply_marker(self, producer_id: int, committed: bool) -> list[tuple[str, TopicPartition, CommitSample]]:
        """A transaction of ``producer_id`` ended in this partition: its pending offsets apply or go.

        Returns the commits it applied that the lag windows sampled, as (group id, partition, sample).
        """
        applied = []
        for group_id, state in self.groups.items():
            offsets = state.pending.pop(producer_id, None)
            if not offsets or not committed:
                continue
            for tp, offset in offsets.items():
                sample = state.apply_commit(tp, offset)
                if sample is not None:
                    applied.append((group_id, tp, sample))
        return applied

    def apply_instance(self, key: InstanceKey, value: bytes | None, now_ms: int) -> None:
        """An instance record: its latest value is the instance, a tombstone removes it."""
        state = self.group(key.group_id)
        if value is None:
            state.rest_instances.pop(key.name, None)
        else:
            state.rest_instances[key.name] = RestInstance.from_record(key, value, now_ms)

    def touch_instances(self, now_ms: int) -> None:
        for state in self.groups.values():
            for instance in state.rest_instances.values():
                instance.touch(now_ms)
