"""The leader's view of one follower replica: its LEO and when it was last caught up.

Kafka's ``Replica.updateFetchStateOrThrow`` / ``ReplicaState.isCaughtUp`` /
``Replica.resetReplicaState`` (core/src/main/scala/kafka/cluster/Replica.scala).

The leader learns a follower's log end offset only from that follower's fetches: the
fetch offset *is* the follower's LEO (it asks for the first offset it lacks).

``last_caught_up_time_ms`` is the latest time t at which the follower's LEO had
reached the leader's LEO as of t. A fetch at offset f, arriving at ``now_ms`` when
the leader's LEO is L:

- f >= L: caught up now;
- f >= the leader's LEO at the previous fetch: caught up at the previous fetch's time
  (everything the leader had then, the follower has now);
- otherwise unchanged.

The second branch is what keeps a follower in the ISR under a steady stream of small
writes: its fetch offset is always a little below the leader's current LEO, yet it
keeps reaching what the leader had one fetch earlier.

Time never goes backwards: the caught-up time only increases (Kafka takes the max).

Each fetch carries the follower's broker epoch (KIP-903, ``broker_epoch``). A fetch
from a later incarnation than the one recorded starts the state afresh before it is
recorded: what the previous incarnation held says nothing about a broker that may
have restarted with an empty disk. (Stale incarnations are refused before they get
here.)
Owned by the single task that owns the partition; not thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.replication.broker_epoch import UNKNOWN_BROKER_EPOCH, is_new_incarnation

UNKNOWN_OFFSET = -1
"""A follower LEO the leader has not learned yet in this leader epoch."""


@dataclass(slots=True)
class FetchRounds:
    """The rounds of one follower's fetch session: when its latest request arrived.

    Stamped by the session once per request (``LeaderSession.begin_round``), read by every
    ``ReplicaState`` following it; never stamped again once the session ended.
    """

    last_ms: int | None = None


@dataclass(slots=True)
class ReplicaState:
    """Fetch state of one follower, as the leader sees it.

    ``last_fetch_time_ms`` and ``last_caught_up_time_ms`` are ``None`` when there is
    no such moment in this leader epoch (Kafka uses 0, which only works with a wall
    clock; our clocks may start at 0).
    """

    broker_id: int
    log_end_offset: int = UNKNOWN_OFFSET
    log_start_offset: int = UNKNOWN_OFFSET
    """The follower's log start offset as its latest fetch said (DeleteRecords' low watermark waits for it)."""
    last_fetch_time_ms: int | None = None
    last_fetch_leader_log_end_offset: int = UNKNOWN_OFFSET
    last_caught_up_time_ms: int | None = None
    broker_epoch: int = UNKNOWN_BROKER_EPOCH
    """The incarnation whose fetches this state records (unknown before the first fetch)."""
    rounds: FetchRounds | None = None
    """The session rounds this state follows while its partition is quiet (module docstring)."""

    @classmethod
    def reset_for_new_leader(cls, broker_id: int, in_isr: bool, now_ms: int) -> ReplicaState:
        """State of a follower when this broker becomes leader in a new epoch.

        Its LEO is forgotten (unknown until it fetches), so the HW cannot move until
        every in-sync follower has fetched again. An ISR member counts as caught up
        now, so it gets a full ``replica_lag_time_max_ms`` to fetch before it is
        removed; a non-member has never been caught up (Kafka ``resetReplicaState``).
        """
        return cls(
            broker_id=broker_id,
            last_caught_up_time_ms=now_ms if in_isr else None,
        )

    def on_fetch(
        self,
        fetch_offset: int,
        leader_log_end_offset: int,
        now_ms: int,
        broker_epoch: int,
        log_start_offset: int | None = None,
    ) -> None:
        """Record a fetch at ``fetch_offset`` by incarnation ``broker_epoch`` while the leader's
        LEO is ``leader_log_end_offset``; ``log_start_offset`` is the follower's, when the fetch said it."""
        self.stop_following()
        if is_new_incarnation(self.broker_epoch, broker_epoch):
            self.log_end_offset = UNKNOWN_OFFSET
            self.log_start_offset = UNKNOWN_OFFSET
            self.last_fetch_time_ms = None
            self.last_fetch_leader_log_end_offset = UNKNOWN_OFFSET
            self.last_caught_up_time_ms = None
        self.broker_epoch = broker_epoch
        caught_up_at: int | None = None
        if fetch_offset >= leader_log_end_offset:
            caught_up_at = now_ms
        elif self.last_fetch_time_ms is not None and fetch_offset >= self.last_fetch_leader_log_end_offset:
            caught_up_at = self.last_fetch_time_ms
        if caught_up_at is not None and (
            self.last_caught_up_time_ms is None or caught_up_at > self.last_caught_up_time_ms
        ):
            self.last_caught_up_time_ms = caught_up_at
        self.log_end_offset = fetch_offset
        if log_start_offset is not None:
            self.log_start_offset = log_start_offset
        self.last_fetch_leader_log_end_offset = max(leader_log_end_offset, self.last_fetch_leader_log_end_offset)
        self.last_fetch_time_ms = now_ms

    def follow(self, rounds: FetchRounds) -> None:
        """Count ``rounds`` as fetches at this state's LEO from now on.

        Only right after a fetch at the leader's LEO was recorded and while nothing has changed
        since: the leader calls ``stop_following`` at the next change (module docstring).
        """
        self.settle()
        self.rounds = rounds

    def stop_following(self) -> None:
        """Fold in the rounds followed so far and follow them no more."""
        self.settle()
        self.rounds = None

    def settle(self) -> None:
        """Take the latest round followed as this follower's latest fetch, caught up."""
        if self.rounds is None or self.rounds.last_ms is None:
            return
        round_ms = self.rounds.last_ms
        if self.last_fetch_time_ms is None or round_ms > self.last_fetch_time_ms:
            self.last_fetch_time_ms = round_ms
        if self.last_caught_up_time_ms is None or round_ms > self.last_caught_up_time_ms:
            self.last_caught_up_time_ms = round_ms

    def is_caught_up(self, leader_log_end_offset: int, now_ms: int, replica_lag_time_max_ms: int) -> bool:
        """Kafka ``isCaughtUp``: LEO equals the leader's, or caught up within the lag time."""
        self.settle()
        if self.log_end_offset == leader_log_end_offset:
            return True
        if self.last_caught_up_time_ms is None:
            return False
        return now_ms - self.last_caught_up_time_ms <= replica_lag_time_max_ms

    def caught_up_ms_ago(self, now_ms: int) -> int | None:
        """Milliseconds since the follower was last caught up (``None``: never, this epoch)."""
        self.settle()
        if self.last_caught_up_time_ms is None:
            return None
        return now_ms - self.last_caught_up_time_ms
