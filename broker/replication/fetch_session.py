"""Incremental fetch sessions between brokers (Kafka's KIP-227), both sides. Pure.

Why: a follower broker fetches every partition it follows from one leader broker in
one request. Without a session every round names every partition and every answer
lists every partition, so a round costs as much as the partitions the two brokers
share, however few of them changed: at 1 000 partitions the rounds, not the disk,
bounded throughput. With a session a round costs what changed.

The protocol, Kafka's, with one session per follower broker at each leader:

- A **full** fetch (``session_epoch`` 0) names every partition. The leader opens a new
  session for that follower (dropping its previous one), answers every partition and
  returns the session id. Epoch -1 with id 0 is a fetch outside any session.
- An **incremental** fetch carries the session id and the epoch the leader expects
  next (1, 2, ...). It names only the partitions whose fetch fields changed since the
  follower's previous request (new ones included) and lists those it no longer
  fetches as *forgotten*. The leader fetches every partition of the session, with the
  fields it holds, and answers only those with news: records, an error, a diverging
  epoch, or a high watermark, log start or log end offset other than the last it sent
  in this session.
- An unknown session id or an unexpected epoch is answered with a session error and
  no partitions; the follower starts over with a full fetch. So does a follower whose
  request failed in transit (the leader may or may not have applied it).

Invariant: after every answered request, the leader's session holds, per partition,
exactly the fields the follower's ``FollowerSession`` holds as sent; and for every
partition in the session the follower was sent the last HW, log start and log end
offset the leader answered with. So leaving out an unchanged partition (either way)
loses nothing.

The leader validates and records every partition of the session, as Kafka does: a
follower's fetch is what keeps it caught up (ISR membership), whether or not its
offsets changed. Except for **quiet** partitions, so that an idle round costs what
changed and not what the session holds (10 000 idle partitions kept three brokers at
25 to 30 % of a core each, 80 % of it recording and re-checking unchanged partitions):

- a partition is quiet in a session once a round found that the follower repeated its
  fetch, the leader's O(1) path recorded it (every replica in the ISR, no ISR change in
  flight, the follower at its recorded LEO: ``PartitionLeaderState.on_repeated_follower_fetch``),
  it was at the leader's log end and the session had nothing new to tell. The session
  remembers the replica's change count (its *generation*, bumped by the driver on every
  change of the replica's state or log) at that moment;
- a later round does not look at it at all: recording it again would change nothing
  but the follower's fetch times, and answering it would say nothing. A round goes
  over the session's *active* partitions only, so an idle round costs O(changed);
- the follower's fetch times still move with every round: the session stamps each
  round's arrival once (``rounds``, ``begin_round``), and the leader's state of every
  quiet partition's follower counts those stamps as its fetches (``replica_state``'s
  ``FetchRounds``), exactly as recording each would have;
- the next change to the replica (an append, the HW, the log start, the ISR, a role)
  *stirs* it: the driver registers the session on the replica when it marks it quiet,
  and the replica's next change calls ``stir``, which makes it active again and wakes
  the request parked on the session (``wake``); the replica stops counting the rounds
  then. A fetch naming the partition, a new broker epoch of the follower or a full fetch
  ends its quiet too (its next recorded fetch stops the counting), and so does a
  forgotten partition (``take_released``: the driver stops the counting, since the
  follower no longer fetches it). A session replaced or refused is never stamped again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum

from broker.replication.broker_epoch import UNKNOWN_BROKER_EPOCH
from broker.replication.fetch_wire import FetchPartition, FetchPartitionResponse, FetchRequest
from broker.replication.replica_state import FetchRounds

PartitionKey = tuple[str, int]

SESSIONLESS_EPOCH = -1
FULL_EPOCH = 0


class SessionError(IntEnum):
    """Kafka's error codes for fetch sessions."""

    NONE = 0
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71


def _key(partition: FetchPartition | FetchPartitionResponse) -> PartitionKey:
    return (partition.topic, partition.partition)


def next_session_epoch(epoch: int) -> int:
    """Epochs run 1 .. 2**31-1 and wrap to 1 (0 is reserved for a full fetch), as Kafka's."""
    return 1 if epoch >= 2**31 - 1 else epoch + 1


@dataclass(frozen=True, slots=True)
class SessionRequest:
    """What the next request carries: the session id and epoch, the partitions to name, the forgotten ones."""

    session_id: int
    session_epoch: int
    partitions: list[FetchPartition]
    forgotten: tuple[PartitionKey, ...]


@dataclass(slots=True)
class FollowerSession:
    """The follower's side of its session with one leader broker (Kafka's ``FetchSessionHandler``)."""

    session_id: int = 0
    epoch: int = FULL_EPOCH
    sent: dict[PartitionKey, FetchPartition] = field(default_factory=dict)
    _pending: dict[PartitionKey, FetchPartition] = field(default_factory=dict)

    def build(self, partitions: Mapping[PartitionKey, FetchPartition]) -> SessionRequest:
        """The request for a round fetching ``partitions`` (by key); call ``on_answered`` or ``reset`` after it.

        A caller that keeps passing the same ``FetchPartition`` object for an unchanged
        partition lets the comparison stop at identity: with 6 700 partitions followed per
        broker, building and comparing every entry each round was a fifth of an idle
        broker's profile.
        """
        self._pending = dict(partitions)
        if self.epoch == FULL_EPOCH:
            return SessionRequest(self.session_id, FULL_EPOCH, list(self._pending.values()), ())
        sent = self.sent
        changed = [p for key, p in self._pending.items() if (was := sent.get(key)) is not p and was != p]
        forgotten = tuple(key for key in self.sent if key not in self._pending)
        return SessionRequest(self.session_id, self.epoch, changed, forgotten)

    def on_answered(self, session_id: int, session_error: int) -> None:
        """The leader answered the request ``build`` returned; a session error starts over."""
        if session_error != SessionError.NONE:
            self.reset()
            return
        self.session_id = session_id
        self.epoch = next_session_epoch(self.epoch)
        self.sent = self._pending
        self._pending = {}

    def reset(self) -> None:
        """The next request is a full fetch (the request failed, or the session was refused)."""
        self.session_id = 0
        self.epoch = FULL_EPOCH
        self.sent = {}
        self._pending = {}


@dataclass(slots=True)
class LeaderSession:
    """The leader's side of one follower's session (Kafka's ``FetchSession``)."""

    session_id: int
    next_epoch: int
    partitions: dict[PartitionKey, FetchPartition]
    last_sent: dict[PartitionKey, tuple[int, int, int]] = field(default_factory=dict)
    answers_all: bool = True
    """The current request is a full fetch: every partition is answered."""
    quiet: dict[PartitionKey, int] = field(default_factory=dict)
    """Quiet partitions (module docstring) and their replica's generation when found quiet."""
    active: dict[PartitionKey, None] = field(default_factory=dict)
    """The partitions that are not quiet, in the order they became so: what a round records.
    Invariant: ``active`` and ``quiet`` split the keys of ``partitions``."""
    stirred: dict[PartitionKey, None] = field(default_factory=dict)
    """Partitions stirred out of quiet since the driver last took them (``take_stirred``)."""
    wake: Callable[[], None] | None = None
    """Called when a partition is stirred: the driver's way to wake the request parked on this session."""
    quiet_broker_epoch: int = UNKNOWN_BROKER_EPOCH
    """The follower's broker epoch the quiet partitions were found under."""
    rounds: FetchRounds = field(default_factory=FetchRounds)
    """This session's rounds, which the followers' states of its quiet partitions count as fetches."""
    released: list[PartitionKey] = field(default_factory=list)
    """Quiet partitions forgotten since the driver last took them (``take_released``)."""

    def __post_init__(self) -> None:
        self.active = dict.fromkeys(self.partitions)

    def begin_round(self, now_ms: int, broker_epoch: int, registered_broker_epoch: int) -> None:
        """A request of this session arrived at ``now_ms``; called once per request, before any recording.

        In a full fetch, or when the follower's broker epoch is not the registered one or
        not the one the quiet partitions were found under, every quiet partition is active
        again (the round records each) and the rounds so far are left behind: a new
        ``FetchRounds`` starts, and the states that followed the old one keep what it said.
        Otherwise the round is stamped, and every quiet partition's follower state counts it.
        """
        if self.answers_all or broker_epoch != registered_broker_epoch or broker_epoch != self.quiet_broker_epoch:
            self.active.update(dict.fromkeys(self.quiet))
            self.quiet.clear()
            self.quiet_broker_epoch = broker_epoch
            self.rounds = FetchRounds()
            return
        self.rounds.last_ms = now_ms

    def is_quiet(self, key: PartitionKey, generation: int) -> bool:
        return self.quiet.get(key) == generation

    def mark_quiet(self, key: PartitionKey, generation: int) -> None:
        """``key`` was found quiet at its replica's ``generation``; the driver stirs it at the next change."""
        if key in self.partitions:
            self.active.pop(key, None)
            self.quiet[key] = generation

    def stir(self, key: PartitionKey) -> None:
        """``key``'s replica changed: a quiet ``key`` is active again and ``wake`` is called."""
        if self.quiet.pop(key, None) is None:
            return
        self.active[key] = None
        self.stirred[key] = None
        if self.wake is not None:
            self.wake()

    def take_released(self) -> list[PartitionKey]:
        """The quiet partitions forgotten since the last call: their followers' states must stop
        counting this session's rounds (the follower no longer fetches them)."""
        released, self.released = self.released, []
        return released

    def take_stirred(self) -> list[PartitionKey]:
        """The partitions stirred since the last call (or the round's start), now active."""
        stirred = list(self.stirred)
        self.stirred.clear()
        return stirred

    def has_news(self, response: FetchPartitionResponse) -> bool:
        """Whether ``response`` must be sent: in a full fetch always, else only when it says something new."""
        if response.records or response.error or response.diverging_epoch:
            return True
        return not self.knows(
            _key(response), response.high_watermark, response.log_start_offset, response.log_end_offset
        )

    def knows(self, key: PartitionKey, high_watermark: int, log_start_offset: int, log_end_offset: int) -> bool:
        """Whether the follower was sent these offsets last for ``key`` (never, in a full fetch).

        Lets the leader skip building an answer for a partition with no records to send.
        """
        return not self.answers_all and self.last_sent.get(key) == (high_watermark, log_start_offset, log_end_offset)

    def answered(self, responses: Iterable[FetchPartitionResponse]) -> None:
        """Remember the offsets sent, so an unchanged partition is left out of the next answer."""
        for response in responses:
            self.last_sent[_key(response)] = (
                response.high_watermark,
                response.log_start_offset,
                response.log_end_offset,
            )


@dataclass(frozen=True, slots=True)
class SessionRefused:
    error: SessionError


@dataclass(slots=True)
class LeaderSessions:
    """A leader broker's sessions, one per follower broker: bounded by the number of brokers.

    ``new_session_id`` is the driver's (a random positive int32), so a restarted leader
    does not recognise the ids its previous incarnation gave out.
    """

    new_session_id: Callable[[], int]
    by_replica: dict[int, LeaderSession] = field(default_factory=dict)

    def open(self, request: FetchRequest) -> LeaderSession | SessionRefused:
        """The session ``request`` runs in, updated by it; or why it is refused."""
        partitions = {_key(p): p for p in request.partitions}
        if request.session_epoch == SESSIONLESS_EPOCH:
            self.by_replica.pop(request.replica_id, None)
            return LeaderSession(0, SESSIONLESS_EPOCH, partitions)
        if request.session_epoch == FULL_EPOCH:
            session = LeaderSession(self.new_session_id(), next_session_epoch(FULL_EPOCH), partitions)
            self.by_replica[request.replica_id] = session
            return session
        found = self.by_replica.get(request.replica_id)
        if found is None or found.session_id != request.session_id:
            return SessionRefused(SessionError.FETCH_SESSION_ID_NOT_FOUND)
        if found.next_epoch != request.session_epoch:
            self.by_replica.pop(request.replica_id)
            return SessionRefused(SessionError.INVALID_FETCH_SESSION_EPOCH)
        for key in request.forgotten:
            found.partitions.pop(key, None)
            found.last_sent.pop(key, None)
            if found.quiet.pop(key, None) is not None:
                found.released.append(key)
            found.active.pop(key, None)
            found.stirred.pop(key, None)
        for key in partitions:
            found.quiet.pop(key, None)
            found.active[key] = None
        found.partitions.update(partitions)
        found.next_epoch = next_session_epoch(found.next_epoch)
        found.answers_all = False
        return found
