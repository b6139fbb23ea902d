"""The leader's view of one partition: follower LEOs, the ISR, the high watermark.

Kafka's leader half of ``Partition`` (core/src/main/scala/kafka/cluster/Partition.scala):
``makeLeader``, ``updateFollowerFetchState``, ``maybeExpandIsr``, ``maybeShrinkIsr`` /
``getOutOfSyncReplicas``, ``maybeIncrementLeaderHW``, ``handleAlterPartitionUpdate``,
``appendRecordsToLeader`` (min ISR admission) and ``fetchRecords`` (follower fetch
validation, KIP-320).

One instance lives for one leader epoch: becoming leader in a new epoch builds a new
one, which forgets every follower's LEO. It is owned by the single task that owns
the partition; nothing here is thread-safe, awaits, reads a clock (time enters as
``now_ms``) or does I/O. Methods return what should happen (``HwUpdate``,
``ProposeIsr``, ``FetchOutcome``) and the driver does it.

Invariants, kept by every method and asserted by the property tests:

- ``log_start_offset <= high_watermark <= log_end_offset``;
- the high watermark never decreases;
- ``high_watermark <=`` the LEO of every member of the maximal ISR whose LEO is known
  (an unknown one blocks any rise until it fetches);
- the high watermark does not rise while the committed ISR is smaller than
  ``effective_min_isr = min(min_insync_replicas, len(replicas))`` (KIP-966);
- under the ``fsync`` flush policy the high watermark does not rise past the leader's
  own flushed offset: followers already report only what they fsynced, and a leader
  that counted its unflushed tail could expose records that a power loss then takes
  from the only replica left in the ISR (found by tests/simulation, seed 404);
- the leader is in the ISR; the ISR is a non-empty subset of the replicas;
- a follower's recorded LEO comes from fetches of one incarnation of its broker, never
  an older one than the leader has seen, and a follower joins the ISR only while that
  incarnation is the one registered (KIP-903, ``broker_epoch``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import structlog

from broker.errors import (
    HighwaterError,
    NotEnoughReplicas,
    NotLeaderOrFollower,
    OffsetOutOfRange,
)
from broker.replication.actions import (
    DivergingEpoch,
    FetchOutcome,
    HwUpdate,
    ProposeIsr,
)
from broker.replication.broker_epoch import UNKNOWN_BROKER_EPOCH, check_fetch_broker_epoch, is_isr_eligible
from broker.replication.fencing import check_leader_epoch
from broker.replication.fetch_validation import check_fetch_position
from broker.replication.isr import IsrState, PendingIsrChange
from broker.replication.replica_state import UNKNOWN_OFFSET, FetchRounds, ReplicaState
from broker.storage.epoch_cache import LeaderEpochCache

log = structlog.get_logger(__name__)


class PartitionLeaderState:
    """Replication state of a partition this broker leads, for one leader epoch."""

    def __init__(
        self,
        *,
        topic: str,
        partition: int,
        local_broker_id: int,
        leader_epoch: int,
        partition_epoch: int,
        replicas: Sequence[int],
        isr: Sequence[int],
        min_insync_replicas: int,
        log_start_offset: int,
        log_end_offset: int,
        high_watermark: int,
        leader_epoch_start_offset: int,
        replica_lag_time_max_ms: int,
        now_ms: int,
        flush_bounds_high_watermark: bool = False,
        flushed_offset: int = 0,
    ) -> None:
        """Become leader (Kafka ``makeLeader``); validates the partition record.

        ``leader_epoch_start_offset`` is the LEO at which this epoch began (the entry
        the new leader wrote to its epoch cache before its first append). The HW is
        recomputed at once: with the leader alone in the ISR it may rise here.

        ``flush_bounds_high_watermark`` is the ``fsync`` flush policy: the HW then also
        waits for ``flushed_offset`` (everything below it is fsynced), which rises with
        ``on_leader_flushed``. Under the other policies nothing is fsynced on the way to
        an acknowledgement, so the leader's LEO counts as it is.
        """
        _validate_membership(local_broker_id, replicas, isr)
        if not log_start_offset <= high_watermark <= log_end_offset:
            raise ValueError(
                f"need log_start_offset {log_start_offset} <= high_watermark "
                f"{high_watermark} <= log_end_offset {log_end_offset}"
            )
        if not leader_epoch_start_offset <= log_end_offset:
            raise ValueError("the leader epoch cannot start after the log end offset")
        self.topic = topic
        self.partition = partition
        self.local_broker_id = local_broker_id
        self.leader_epoch = leader_epoch
        self.replicas: tuple[int, ...] = tuple(replicas)
        self.min_insync_replicas = min_insync_replicas
        self.leader_epoch_start_offset = leader_epoch_start_offset
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self._isr = IsrState(frozenset(isr), partition_epoch)
        self._log_start_offset = log_start_offset
        self._log_end_offset = log_end_offset
        self._high_watermark = high_watermark
        self._flush_bounds_high_watermark = flush_bounds_high_watermark
        self._flushed_offset = min(flushed_offset, log_end_offset)
        self._followers = {
            broker_id: ReplicaState.reset_for_new_leader(broker_id, broker_id in isr, now_ms)
            for broker_id in self.replicas
            if broker_id != local_broker_id
        }
        self.maybe_increment_high_watermark(now_ms)

    # ----------------------------------------------------------------- views

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._log_end_offset

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @property
    def flushed_offset(self) -> int:
        """Everything below it is fsynced on this broker, as far as the driver has reported."""
        return self._flushed_offset

    @property
    def durable_log_end_offset(self) -> int:
        """What the leader's own log counts for in the HW: its flushed offset under the
        ``fsync`` policy, its LEO otherwise."""
        if self._flush_bounds_high_watermark:
            return self._flushed_offset
        return self._log_end_offset

    @property
    def partition_epoch(self) -> int:
        return self._isr.partition_epoch

    @property
    def isr(self) -> tuple[int, ...]:
        """The committed ISR, in assignment order."""
        return self._in_assignment_order(self._isr.committed)

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """Committed ISR ∪ pending change: what the HW waits for (KIP-497)."""
        return self._in_assignment_order(self._isr.maximal)

    @property
    def pending_isr_change(self) -> PendingIsrChange | None:
        return self._isr.pending

    @property
    def effective_min_isr(self) -> int:
        """min(min.insync.replicas, replication factor), Kafka's ``effectiveMinIsr``."""
        return min(self.min_insync_replicas, len(self.replicas))

    @property
    def high_watermark_reached_epoch_start(self) -> bool:
        """Whether "latest" may be served: until the HW reaches the start of this epoch,
        a new leader's HW can lag what the old leader exposed (Kafka answers
        OFFSET_NOT_AVAILABLE rather than letting "latest" move backwards)."""
        return self._high_watermark >= self.leader_epoch_start_offset

    def follower(self, broker_id: int) -> ReplicaState:
        return self._followers[broker_id]

    def replicas_state(self, now_ms: int) -> list[dict[str, int | bool | None]]:
        """Per replica, for the API: LEO, committed-ISR membership, time since caught up,
        and the broker epoch of the follower incarnation whose fetches were recorded."""
        rows: list[dict[str, int | bool | None]] = []
        for broker_id in self.replicas:
            ago: int | None
            if broker_id == self.local_broker_id:
                leo, ago, broker_epoch = self._log_end_offset, 0, None
            else:
                state = self._followers[broker_id]
                leo, ago = state.log_end_offset, state.caught_up_ms_ago(now_ms)
                broker_epoch = state.broker_epoch
            rows.append(
                {
                    "broker_id": broker_id,
                    "log_end_offset": leo,
                    "in_sync": broker_id in self._isr.committed,
                    "caught_up_ms_ago": ago,
                    "broker_epoch": broker_epoch,
                }
            )
        return rows

    # ------------------------------------------------------- leader's own log

    def on_leader_append(self, new_log_end_offset: int, now_ms: int) -> HwUpdate | None:
        """The leader appended up to ``new_log_end_offset``; the HW may rise (RF 1, ISR 1)."""
        if new_log_end_offset < self._log_end_offset:
            raise ValueError("a leader's log end offset never moves back")
        self._log_end_offset = new_log_end_offset
        return self.maybe_increment_high_watermark(now_ms)

    def on_leader_flushed(self, flushed_offset: int, now_ms: int) -> HwUpdate | None:
        """An fsync made everything below ``flushed_offset`` durable; the HW may rise to it.

        The driver reports the log's recovery point, which may include appends not yet
        reported with ``on_leader_append``: only offsets this state knows are counted.
        """
        self._flushed_offset = max(self._flushed_offset, min(flushed_offset, self._log_end_offset))
        return self.maybe_increment_high_watermark(now_ms)

    def on_topic_config(
        self, min_insync_replicas: int, flush_bounds_high_watermark: bool, flushed_offset: int, now_ms: int
    ) -> HwUpdate | None:
        """An altered ``min.insync.replicas`` or flush policy applies to this epoch at once.

        Lowering min ISR may let the HW rise now (it was held by KIP-966's rule); raising
        it holds every later rise, and acks=all waits complete with
        ``NOT_ENOUGH_REPLICAS_AFTER_APPEND`` while the ISR stays below it, as in Kafka.
        Switching to the ``fsync`` policy takes ``flushed_offset`` (the log's recovery
        point: under the other policies nothing reported it here) as the durable end, so
        the HW waits for the next fsync; it never moves back, as everywhere.
        """
        self.min_insync_replicas = min_insync_replicas
        if flush_bounds_high_watermark and not self._flush_bounds_high_watermark:
            self._flushed_offset = min(flushed_offset, self._log_end_offset)
        self._flush_bounds_high_watermark = flush_bounds_high_watermark
        return self.maybe_increment_high_watermark(now_ms)

    def flush_would_raise_high_watermark(self, now_ms: int) -> bool:
        """Whether the HW is held back by nothing but the leader's own unflushed tail.

        True when, were the whole log fsynced, the HW would rise above the flushed
        offset: every replica the HW waits for already holds more than the leader has
        made durable. The leader then asks for a group-committed fsync.
        """
        if not self._flush_bounds_high_watermark or self._flushed_offset >= self._log_end_offset:
            return False
        candidate = self._high_watermark_candidate(self._log_end_offset, now_ms)
        return candidate is not None and candidate > max(self._high_watermark, self._flushed_offset)

    def advance_log_start_offset(self, new_log_start_offset: int) -> None:
        """Retention or delete-records moved the low watermark; it never passes the HW."""
        if new_log_start_offset > self._high_watermark:
            raise OffsetOutOfRange(
                f"log start offset {new_log_start_offset} would pass the high watermark "
                f"{self._high_watermark} of {self.topic}-{self.partition}",
                log_start_offset=self._log_start_offset,
                high_watermark=self._high_watermark,
            )
        self._log_start_offset = max(self._log_start_offset, new_log_start_offset)

    def low_watermark(self) -> int:
        """Kafka's low watermark: the smallest log start offset among the leader and the in-sync followers.

        What DeleteRecords answers: below it no in-sync replica holds a record any more.
        A follower whose log start is not known yet in this epoch (it has not fetched)
        makes it unknown, ``UNKNOWN_OFFSET`` (-1), as Kafka's is.
        """
        starts = [self._log_start_offset]
        starts += [self._followers[b].log_start_offset for b in self._isr.committed if b != self.local_broker_id]
        return UNKNOWN_OFFSET if UNKNOWN_OFFSET in starts else min(starts)

    def check_produce_admission(self) -> HighwaterError | None:
        """acks=all is refused *before* the append when the committed ISR is below min ISR.

        Nothing is written in that case, so the client may safely retry (Kafka
        ``appendRecordsToLeader``: NOT_ENOUGH_REPLICAS).
        """
        if len(self._isr.committed) >= self.effective_min_isr:
            return None
        return NotEnoughReplicas(
            f"{self.topic}-{self.partition} has {len(self._isr.committed)} in-sync "
            f"replicas, fewer than min.insync.replicas {self.effective_min_isr}; "
            "nothing was written",
            topic=self.topic,
            partition=self.partition,
            isr=list(self.isr),
        )

    def check_leader_epoch(self, request_leader_epoch: int) -> HighwaterError | None:
        """FENCED_LEADER_EPOCH (older), UNKNOWN_LEADER_EPOCH (newer) or ``None`` (KIP-320)."""
        return check_leader_epoch(self.topic, self.partition, self.leader_epoch, request_leader_epoch)

    # ------------------------------------------------------------ high watermark

    def maybe_increment_high_watermark(self, now_ms: int) -> HwUpdate | None:
        """Kafka ``maybeIncrementLeaderHW``: raise the HW to what every in-sync replica holds.

        1. Under min ISR (committed ISR < ``effective_min_isr``): do nothing, so no
           record becomes visible that fewer than min ISR replicas hold.
        2. Candidate = leader LEO (its flushed offset under the ``fsync`` policy,
           ``durable_log_end_offset``), lowered to the LEO of every *maximal*-ISR member,
           and of a caught-up replica about to join the ISR (Kafka's
           ``shouldWaitForReplicaToJoinIsr``: waiting for more replicas is always safe).
           An unknown LEO (-1) lowers it below any HW, blocking the rise.
        3. Apply only if larger: the HW never decreases on a leader.
        """
        candidate = self._high_watermark_candidate(self.durable_log_end_offset, now_ms)
        if candidate is None or candidate <= self._high_watermark:
            return None
        update = HwUpdate(self._high_watermark, candidate)
        self._high_watermark = candidate
        return update

    def _high_watermark_candidate(self, local_end_offset: int, now_ms: int) -> int | None:
        """Steps 1 and 2 of ``maybe_increment_high_watermark``, the leader's own log
        counting up to ``local_end_offset``; None under min ISR."""
        if len(self._isr.committed) < self.effective_min_isr:
            return None
        maximal = self._isr.maximal
        candidate = local_end_offset
        for broker_id, state in self._followers.items():
            if state.log_end_offset >= candidate:
                continue
            if broker_id in maximal or state.is_caught_up(self._log_end_offset, now_ms, self.replica_lag_time_max_ms):
                candidate = state.log_end_offset
        return candidate

    # ----------------------------------------------------------- follower fetch

    def on_follower_fetch(
        self,
        replica_id: int,
        fetch_offset: int,
        now_ms: int,
        *,
        last_fetched_epoch: int,
        current_leader_epoch: int,
        epoch_cache: LeaderEpochCache,
        broker_epoch: int,
        registered_broker_epoch: int,
        log_start_offset: int | None = None,
    ) -> FetchOutcome:
        """Validate and record one follower fetch (Kafka ``fetchRecords`` for a follower).

        ``broker_epoch`` is the one the fetch carries; ``registered_broker_epoch`` the
        one the leader's metadata holds for ``replica_id`` (``UNKNOWN_BROKER_EPOCH`` if
        it is not registered); ``log_start_offset`` the follower's, as its fetch says it.
        A refused or diverging fetch does not touch the follower's state. The response
        carries the HW as it was before this fetch was processed.
        """
        high_watermark_before = self._high_watermark
        rejection = self.validate_follower_fetch(
            replica_id,
            fetch_offset,
            last_fetched_epoch=last_fetched_epoch,
            current_leader_epoch=current_leader_epoch,
            epoch_cache=epoch_cache,
            broker_epoch=broker_epoch,
            registered_broker_epoch=registered_broker_epoch,
        )
        if isinstance(rejection, HighwaterError):
            return self._fetch_outcome(high_watermark_before, error=rejection)
        if isinstance(rejection, DivergingEpoch):
            return self._fetch_outcome(high_watermark_before, diverging_epoch=rejection)
        hw_update, propose_isr = self.record_follower_fetch(
            replica_id, fetch_offset, now_ms, broker_epoch, registered_broker_epoch, log_start_offset
        )
        return self._fetch_outcome(
            high_watermark_before,
            read_from_offset=fetch_offset,
            hw_update=hw_update,
            propose_isr=propose_isr,
        )

    def on_repeated_follower_fetch(
        self,
        replica_id: int,
        fetch_offset: int,
        now_ms: int,
        *,
        current_leader_epoch: int,
        broker_epoch: int,
        registered_broker_epoch: int,
    ) -> bool:
        """Record, in O(1), a fetch that repeats this follower's previous one; False: take ``on_follower_fetch``.

        In an incremental fetch session (``fetch_session``) a partition whose fields did
        not change is not named again, yet the follower fetched it: as Kafka does, the
        leader records it every round (that is what keeps an idle follower caught up).
        When every follower is in the committed ISR, no ISR change is in flight, and the
        fetch names the current leader epoch, the follower's recorded and registered
        incarnation and its recorded LEO (so not below the log start: log start <= HW <=
        every ISR member's LEO), the full path would find nothing to refuse, expand or
        raise: the HW and the ISR depend only on the followers' LEOs then, and this one
        did not move. All that is left
        is the follower's fetch times, which this records exactly as the full path
        would (``ReplicaState.on_fetch``). Otherwise it records nothing.
        """
        state = self._followers.get(replica_id)
        if (
            state is None
            or current_leader_epoch != self.leader_epoch
            or self._isr.pending is not None
            or len(self._isr.committed) != len(self.replicas)
            or not broker_epoch == state.broker_epoch == registered_broker_epoch
            or fetch_offset != state.log_end_offset
        ):
            return False
        state.on_fetch(fetch_offset, self._log_end_offset, now_ms, broker_epoch)
        return True

    def follow_rounds(self, replica_id: int, rounds: FetchRounds) -> None:
        """``replica_id``'s partition is quiet in its fetch session: its rounds count as its fetches.

        Called only right after ``on_repeated_follower_fetch`` recorded it at this leader's
        LEO, with nothing changed since; the driver calls ``stop_following_rounds`` at the
        next change of this replica (``replica_state``'s module docstring).
        """
        state = self._followers.get(replica_id)
        if state is not None:
            state.follow(rounds)

    def stop_following_rounds(self, replica_id: int | None = None) -> None:
        """``replica_id``'s (every follower's, with None) fetch session rounds count no more."""
        states = self._followers.values() if replica_id is None else [self._followers.get(replica_id)]
        for state in states:
            if state is not None:
                state.stop_following()

    def validate_follower_fetch(
        self,
        replica_id: int,
        fetch_offset: int,
        *,
        last_fetched_epoch: int,
        current_leader_epoch: int,
        epoch_cache: LeaderEpochCache,
        broker_epoch: int,
        registered_broker_epoch: int,
    ) -> HighwaterError | DivergingEpoch | None:
        """Fencing, replica membership, the follower's broker epoch (``broker_epoch``),
        then epoch and range (``fetch_validation``), in Kafka's order."""
        fenced = self.check_leader_epoch(current_leader_epoch)
        if fenced is not None:
            return fenced
        if replica_id not in self._followers:
            return NotLeaderOrFollower(
                f"broker {replica_id} is not a follower replica of "
                f"{self.topic}-{self.partition} (replicas {list(self.replicas)})",
                topic=self.topic,
                partition=self.partition,
                leader_id=self.local_broker_id,
            )
        stale = check_fetch_broker_epoch(
            self.topic,
            self.partition,
            replica_id,
            broker_epoch,
            recorded_broker_epoch=self._followers[replica_id].broker_epoch,
            registered_broker_epoch=registered_broker_epoch,
        )
        if stale is not None:
            log.info(
                "follower_fetch_stale_broker_epoch",
                topic=self.topic,
                partition=self.partition,
                replica_id=replica_id,
                broker_epoch=broker_epoch,
                expected_broker_epoch=stale.details["expected_broker_epoch"],
                fetch_offset=fetch_offset,
                leader_epoch=self.leader_epoch,
            )
            return stale
        return check_fetch_position(
            self.topic,
            self.partition,
            fetch_offset,
            last_fetched_epoch,
            log_start_offset=self._log_start_offset,
            log_end_offset=self._log_end_offset,
            epoch_cache=epoch_cache,
        )

    def record_follower_fetch(
        self,
        replica_id: int,
        fetch_offset: int,
        now_ms: int,
        broker_epoch: int,
        registered_broker_epoch: int,
        log_start_offset: int | None = None,
    ) -> tuple[HwUpdate | None, ProposeIsr | None]:
        """Kafka ``updateFollowerFetchState``: record the LEO, maybe expand, recompute HW.

        A fetch from a new incarnation of the follower's broker starts its state
        afresh (``ReplicaState.on_fetch``), logged when it replaces a known one (not at a
        follower's first fetch, which every new partition sees). Expansion comes first so that the joining
        replica already counts in the maximal ISR when the HW is recomputed.
        """
        state = self._followers[replica_id]
        previous_broker_epoch = state.broker_epoch
        state.on_fetch(fetch_offset, self._log_end_offset, now_ms, broker_epoch, log_start_offset)
        if previous_broker_epoch != UNKNOWN_BROKER_EPOCH and state.broker_epoch != previous_broker_epoch:
            log.info(
                "follower_incarnation_recorded",
                topic=self.topic,
                partition=self.partition,
                replica_id=replica_id,
                broker_epoch=broker_epoch,
                previous_broker_epoch=previous_broker_epoch,
                fetch_offset=fetch_offset,
                leader_epoch=self.leader_epoch,
                in_isr=replica_id in self._isr.committed,
            )
        propose_isr = self._maybe_expand_isr(state, registered_broker_epoch)
        return self.maybe_increment_high_watermark(now_ms), propose_isr

    # ------------------------------------------------------------------- ISR

    def _maybe_expand_isr(self, state: ReplicaState, registered_broker_epoch: int) -> ProposeIsr | None:
        """Kafka ``maybeExpandIsr``: add a follower that holds everything the HW exposes.

        Conditions: no change in flight; not already in the committed ISR; its LEO
        >= HW (it will not hold the HW back) and >= the start offset of this leader
        epoch (it has replicated past the leader change, so its log agrees with ours);
        its state comes from the incarnation registered now (KIP-903), not one that
        restarted since, maybe with an empty disk.
        """
        if self._isr.pending is not None or state.broker_id in self._isr.committed:
            return None
        if state.log_end_offset < max(self._high_watermark, self.leader_epoch_start_offset):
            return None
        if not is_isr_eligible(state.broker_epoch, registered_broker_epoch):
            log.info(
                "isr_expand_refused_broker_epoch",
                topic=self.topic,
                partition=self.partition,
                replica_id=state.broker_id,
                broker_epoch=state.broker_epoch,
                registered_broker_epoch=registered_broker_epoch,
                log_end_offset=state.log_end_offset,
                high_watermark=self._high_watermark,
            )
            return None
        return self._propose(self._isr.committed | {state.broker_id}, "expand")

    def check_isr_shrink(self, now_ms: int) -> ProposeIsr | None:
        """Kafka ``maybeShrinkIsr``: remove followers not caught up for ``replica_lag_time_max_ms``.

        Run periodically (every lag time / 2). Only followers are candidates, so the
        leader stays and the ISR is never empty. Nothing is proposed while another
        change is in flight. The removal counts only once committed.
        """
        if self._isr.pending is not None:
            return None
        lagging = {
            broker_id
            for broker_id in self._isr.committed - {self.local_broker_id}
            if not self._followers[broker_id].is_caught_up(self._log_end_offset, now_ms, self.replica_lag_time_max_ms)
        }
        if not lagging:
            return None
        return self._propose(self._isr.committed - lagging, "shrink")

    def on_replicas_changed(self, replicas: Sequence[int]) -> None:
        """A record of this leader epoch moved the partition's replicas (a reassignment: ``broker.cluster.reassignment``).

        A replica the move adds is tracked from now on, as one that has never fetched
        (unknown LEO, not caught up), so it joins the ISR only once it has caught up like
        any follower; a replica the move removes is forgotten. The caller commits the
        record's ISR next (``on_isr_change_committed``), which must be within these replicas.
        """
        if self.local_broker_id not in replicas:
            raise ValueError(f"leader {self.local_broker_id} is not a replica ({list(replicas)})")
        for broker_id in replicas:
            if broker_id != self.local_broker_id and broker_id not in self._followers:
                self._followers[broker_id] = ReplicaState(broker_id)
        for broker_id in [b for b in self._followers if b not in replicas]:
            del self._followers[broker_id]
        self.replicas = tuple(replicas)
        log.info(
            "replicas_changed",
            topic=self.topic,
            partition=self.partition,
            leader_epoch=self.leader_epoch,
            replicas=list(self.replicas),
        )

    def on_isr_change_committed(self, new_isr: Sequence[int], new_partition_epoch: int, now_ms: int) -> HwUpdate | None:
        """A partition record with the same leader epoch and a newer partition epoch arrived.

        Either our proposal committed or the controller changed the ISR itself; in
        both cases it becomes the committed ISR and any pending change is dropped.
        A record whose partition epoch is not newer is stale and ignored. After a
        shrink the HW may rise (Kafka ``handleAlterPartitionUpdate``).

        A replica this record leaves out of the ISR is forgotten (unknown LEO, never
        caught up) until it fetches again. The controller removes brokers that died or
        are shutting down, and the HW must stop waiting for them at once; without the
        reset the "caught-up replica about to join" rule kept every acks=all produce
        waiting for a departed broker for up to ``replica_lag_time_max_ms`` (Kafka
        excludes such replicas with ``isReplicaIsrEligible``).
        """
        if new_partition_epoch <= self._isr.partition_epoch:
            log.info(
                "isr_change_stale_ignored",
                topic=self.topic,
                partition=self.partition,
                partition_epoch=self._isr.partition_epoch,
                stale_partition_epoch=new_partition_epoch,
            )
            return None
        _validate_membership(self.local_broker_id, self.replicas, new_isr)
        for broker_id in self._isr.maximal - frozenset(new_isr):
            if broker_id in self._followers:
                self._followers[broker_id] = ReplicaState(broker_id)
        self._isr.commit(frozenset(new_isr), new_partition_epoch)
        log.info(
            "isr_change_committed",
            topic=self.topic,
            partition=self.partition,
            leader_epoch=self.leader_epoch,
            partition_epoch=new_partition_epoch,
            isr=list(self.isr),
        )
        return self.maybe_increment_high_watermark(now_ms)

    def on_isr_change_rejected(self, proposal: ProposeIsr, now_ms: int) -> HwUpdate | None:
        """The controller refused the change itself (on the record it was based on): drop it.

        Dropping a pending expansion
        shrinks the maximal ISR, so the HW may rise. A rejection for a proposal that is
        no longer the pending one has no effect.
        """
        if not self._isr.reject(proposal.partition_epoch):
            return None
        log.info(
            "isr_change_rejected",
            topic=self.topic,
            partition=self.partition,
            partition_epoch=proposal.partition_epoch,
            proposed_isr=list(proposal.new_isr),
        )
        return self.maybe_increment_high_watermark(now_ms)

    # --------------------------------------------------------------- helpers

    def _propose(self, new_isr: frozenset[int], change: Literal["expand", "shrink"]) -> ProposeIsr:
        pending = self._isr.propose(new_isr)
        joining = self._in_assignment_order(new_isr - self._isr.committed)
        proposal = ProposeIsr(
            topic=self.topic,
            partition=self.partition,
            leader_id=self.local_broker_id,
            leader_epoch=self.leader_epoch,
            partition_epoch=pending.based_on_partition_epoch,
            new_isr=self._in_assignment_order(new_isr),
            change=change,
            joining_broker_epochs=tuple((b, self._followers[b].broker_epoch) for b in joining),
        )
        log.info(
            "isr_change_proposed",
            topic=self.topic,
            partition=self.partition,
            change=change,
            leader_epoch=self.leader_epoch,
            partition_epoch=proposal.partition_epoch,
            isr=list(self.isr),
            new_isr=list(proposal.new_isr),
            joining_broker_epochs=dict(proposal.joining_broker_epochs),
            high_watermark=self._high_watermark,
            log_end_offset=self._log_end_offset,
        )
        return proposal

    def _in_assignment_order(self, broker_ids: frozenset[int]) -> tuple[int, ...]:
        return tuple(broker_id for broker_id in self.replicas if broker_id in broker_ids)

    def _fetch_outcome(
        self,
        high_watermark_before: int,
        *,
        error: HighwaterError | None = None,
        diverging_epoch: DivergingEpoch | None = None,
        read_from_offset: int | None = None,
        hw_update: HwUpdate | None = None,
        propose_isr: ProposeIsr | None = None,
    ) -> FetchOutcome:
        return FetchOutcome(
            high_watermark=high_watermark_before,
            log_start_offset=self._log_start_offset,
            log_end_offset=self._log_end_offset,
            error=error,
            diverging_epoch=diverging_epoch,
            read_from_offset=read_from_offset,
            hw_update=hw_update,
            propose_isr=propose_isr,
        )


def _validate_membership(local_broker_id: int, replicas: Sequence[int], isr: Sequence[int]) -> None:
    """The leader is a replica and in the ISR; the ISR is a subset of the replicas."""
    if local_broker_id not in replicas:
        raise ValueError(f"leader {local_broker_id} is not a replica ({list(replicas)})")
    if local_broker_id not in isr:
        raise ValueError(f"leader {local_broker_id} is not in the ISR ({list(isr)})")
    if not set(isr) <= set(replicas):
        raise ValueError(f"ISR {list(isr)} is not a subset of the replicas {list(replicas)}")
