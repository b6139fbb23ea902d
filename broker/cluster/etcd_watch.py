"""One etcd watch on a gRPC stream of its own.

Why not aetcd's ``Client.watch``: it carries every watch of a client on one stream and
pairs each "created" answer with whichever create request is pending at that moment. A
create that timed out (its member silent, as when a host is cut off from the store) and
was confirmed later gave its watch to the next create, which then streamed another key
range from another revision. A broker's view of ``/brokers/`` received ``/controller``'s
events this way, its revision moved past a peer's re-registration, and the broker refused
that peer's rejoin to the ISR until the end of the run. Here each watch opens its own
``Watch`` call and sends one create on it, so the answer on a stream can only be its own;
gRPC multiplexes the calls on the client's one connection.

Invariant: ``events`` yields the events of ``[start, end)`` from ``from_revision`` on, in
revision order, and nothing else; anything else the member says ends the watch with an error.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import grpc
from aetcd import rpc

REQUIRE_LEADER = (("hasleader", "true"),)
"""etcd's ``WithRequireLeader``: a member that loses its leader ends the watch (UNAVAILABLE)
instead of keeping it open and silent, so the watch moves to a member that still hears writes."""


class WatchCompactedError(Exception):
    """The start revision is below the member's compaction point."""

    def __init__(self, compacted_revision: int) -> None:
        super().__init__(f"revision was compacted below {compacted_revision}")
        self.compacted_revision = compacted_revision


class WatchEndedError(Exception):
    """The member refused or ended the watch (its reason, when it gave one, in the message)."""


class RangeWatch:
    """A watch of ``[start, end)`` from ``from_revision`` on ``channel``: ``created`` confirms it,
    ``events`` streams it, ``cancel`` ends the call (always call it, also after an error)."""

    def __init__(self, channel: grpc.aio.Channel, start: bytes, end: bytes, from_revision: int) -> None:
        self._call: Any = rpc.WatchStub(channel).Watch(metadata=REQUIRE_LEADER)
        self._create = rpc.WatchRequest(
            create_request=rpc.WatchCreateRequest(key=start, range_end=end, start_revision=from_revision)
        )

    async def created(self) -> None:
        """Send the create and wait for the member to confirm it (the caller bounds the wait)."""
        await self._call.write(self._create)
        response = await self._call.read()
        _check(response)
        if not response.created:
            raise WatchEndedError("the member answered the create with something other than its confirmation")

    async def events(self) -> AsyncGenerator[Any, None]:
        """Each ``mvccpb.Event`` the member streams, until it ends the stream."""
        while (response := await self._call.read()) is not grpc.aio.EOF:
            _check(response)
            for event in response.events:
                yield event

    def cancel(self) -> None:
        self._call.cancel()


def _check(response: Any) -> None:
    if response is grpc.aio.EOF:
        raise WatchEndedError("the member ended the watch stream before confirming it")
    if response.compact_revision:
        raise WatchCompactedError(response.compact_revision)
    if response.canceled:
        raise WatchEndedError(f"the member cancelled the watch: {response.cancel_reason or 'no reason given'}")
