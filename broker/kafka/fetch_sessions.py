"""Fetch sessions for Kafka clients (KIP-227), the broker's side. Pure.

Why: a consumer fetching many partitions from one broker names every partition in
every request, and every answer lists every partition, changed or not. With a session,
a request names only the partitions whose fetch position changed, and the answer only
the partitions with news. The brokers' own replica fetches already run in sessions
(``broker.replication.fetch_session``); this is the same protocol for clients, without
the replica side's bookkeeping of followers.

Kafka's rules (``FetchManager.newContext``):

- epoch 0 (with any id) is a full fetch that opens a new session, closing the one the id
  named: the answer carries the new session's id, or 0 when the cache has no room
  (the client then keeps sending full fetches);
- epoch -1 is a fetch outside any session (closing the session its id names); the
  answer's session id is 0;
- any other epoch must be the named session's next one: the request's partitions are
  added or updated in the session, its forgotten ones removed, and every partition of
  the session is read; the answer holds only those with records, an error, or a high
  watermark, last stable offset or log start offset other than the last one sent to
  the client (so leaving a partition out tells it nothing new). An unknown id is
  ``FETCH_SESSION_ID_NOT_FOUND``, a wrong epoch ``INVALID_FETCH_SESSION_EPOCH``, and
  the client starts over with a full fetch.

A session belongs to the principal that opened it: another principal naming its id is
told it does not exist. (Each request's partitions are authorized again anyway, as
Kafka does, by the handler.) The cache holds at most ``capacity`` sessions; when full,
the least recently used one is evicted only once it has been idle ``eviction_ms``.

Invariant: after every answered request the session holds, per partition, the fetch
fields the client last sent and the offsets last answered for it.
"""

from __future__ import annotations

import random
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from broker.replication.fetch_session import (
    FULL_EPOCH,
    SESSIONLESS_EPOCH,
    PartitionKey,
    SessionError,
    next_session_epoch,
)

SESSIONLESS = 0
"""The session id of an answer outside any session."""
EVICTION_MS = 120_000
"""Kafka's least idle time before a session may be evicted for another."""


def new_fetch_session_id() -> int:
    """A random positive session id, as Kafka draws them (hard to guess; never 0, "no session")."""
    return random.randint(1, 2**31 - 1)


@dataclass(frozen=True, slots=True)
class FetchPosition:
    """What the client asks of one partition: the fields a session keeps for it."""

    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int


Offsets = tuple[int, int, int]
"""(high watermark, last stable offset, log start offset) as answered."""


@dataclass(slots=True)
class ClientSession:
    session_id: int
    owner: str
    next_epoch: int
    positions: dict[PartitionKey, FetchPosition]
    answered: dict[PartitionKey, Offsets] = field(default_factory=dict)
    last_used_ms: int = 0


@dataclass(frozen=True, slots=True)
class FetchContext:
    """How one request is served: what it reads, whether only news is answered, and the session id to send."""

    error: SessionError
    reads: tuple[tuple[PartitionKey, FetchPosition], ...]
    incremental: bool
    session: ClientSession | None
    opens_session: bool


class ClientFetchSessions:
    """The broker's cache of client fetch sessions (Kafka's ``FetchSessionCache``)."""

    def __init__(self, capacity: int, new_session_id: Callable[[], int], eviction_ms: int = EVICTION_MS) -> None:
        self.capacity = capacity
        self._new_session_id = new_session_id
        self._eviction_ms = eviction_ms
        self._sessions: OrderedDict[int, ClientSession] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def begin(
        self,
        session_id: int,
        epoch: int,
        owner: str,
        named: Sequence[tuple[PartitionKey, FetchPosition]],
        forgotten: Sequence[PartitionKey],
        now_ms: int,
    ) -> FetchContext:
        """The context of a request; the caller reads ``reads`` and then calls ``answered``."""
        if epoch in (FULL_EPOCH, SESSIONLESS_EPOCH):
            if session_id != SESSIONLESS:
                self._close(session_id, owner)
            return FetchContext(SessionError.NONE, tuple(named), False, None, epoch == FULL_EPOCH)
        session = self._sessions.get(session_id)
        if session is None or session.owner != owner:
            return FetchContext(SessionError.FETCH_SESSION_ID_NOT_FOUND, (), False, None, False)
        if epoch != session.next_epoch:
            return FetchContext(SessionError.INVALID_FETCH_SESSION_EPOCH, (), False, None, False)
        for key in forgotten:
            session.positions.pop(key, None)
            session.answered.pop(key, None)
        for key, position in named:
            session.positions[key] = position
        session.next_epoch = next_session_epoch(epoch)
        session.last_used_ms = now_ms
        self._sessions.move_to_end(session_id)
        return FetchContext(SessionError.NONE, tuple(session.positions.items()), True, session, False)

    def answered(
        self, context: FetchContext, results: Sequence[tuple[bool, Offsets]], owner: str, now_ms: int
    ) -> tuple[int, list[bool]]:
        """The session id to answer with, and which partitions of ``context.reads`` to include.

        ``results`` are, per read, whether it must be answered whatever the session saw
        (records or an error) and the offsets it found.
        """
        if context.incremental:
            assert context.session is not None
            answered = context.session.answered
            included = []
            for (key, _), (news, offsets) in zip(context.reads, results, strict=True):
                include = news or answered.get(key) != offsets
                if include:
                    answered[key] = offsets
                included.append(include)
            return context.session.session_id, included
        everything = [True] * len(context.reads)
        if not context.opens_session or not context.reads:
            return SESSIONLESS, everything
        session = self._open(owner, context.reads, now_ms)
        if session is None:
            return SESSIONLESS, everything
        session.answered = {key: offsets for (key, _), (_, offsets) in zip(context.reads, results, strict=True)}
        return session.session_id, everything

    def _open(
        self, owner: str, reads: Sequence[tuple[PartitionKey, FetchPosition]], now_ms: int
    ) -> ClientSession | None:
        if len(self._sessions) >= self.capacity and not self._evict_one(now_ms):
            return None
        session_id = self._new_session_id()
        while session_id == SESSIONLESS or session_id in self._sessions:
            session_id = self._new_session_id()
        session = ClientSession(session_id, owner, 1, dict(reads), last_used_ms=now_ms)
        self._sessions[session_id] = session
        return session

    def _evict_one(self, now_ms: int) -> bool:
        """Evict the least recently used session if it has been idle long enough."""
        if not self._sessions:
            return False
        oldest_id, oldest = next(iter(self._sessions.items()))
        if now_ms - oldest.last_used_ms < self._eviction_ms:
            return False
        del self._sessions[oldest_id]
        return True

    def _close(self, session_id: int, owner: str) -> None:
        session = self._sessions.get(session_id)
        if session is not None and session.owner == owner:
            del self._sessions[session_id]
