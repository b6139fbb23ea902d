"""The replication stream: fetches and their answers on one kept-open WebSocket per leader, on loopback.

The leader's side is the broker's ``ServerStreams`` in an aiohttp app (with the broker's
error middleware), the follower's is ``StreamFetchTransport`` over ``stream_opener``:
real sockets, real frames. The pairing rule is the point: an answer that comes after
its fetch gave up must never be taken for the next fetch's.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from broker.acks import Acks
from broker.record.codec import encode_batch
from broker.replica_io.fetch_transport import FetchTransportError
from broker.replica_io.replication_stream import StreamFetchTransport
from broker.replica_io.stream_socket import STREAM_PATH, ServerStreams, stream_opener
from broker.replication.fetch_wire import FetchRequest, FetchResponse
from broker.server.middleware import error_middleware
from tests.support.waiting import wait_until_async
from tests.unit.replica_io.in_process import InProcessTransport, fetching, leader_and_follower

Answer = Callable[[FetchRequest], Awaitable[FetchResponse]]


@dataclass
class Leader:
    """A leader's stream endpoint answering with ``answer``; counts the streams it accepted."""

    url: str
    streams: ServerStreams
    accepted: list[str] = field(default_factory=list)
    ended: list[str] = field(default_factory=list)


@pytest.fixture
async def serving() -> AsyncIterator[Callable[[Answer], Awaitable[Leader]]]:
    runners: list[web.AppRunner] = []

    async def start(answer: Answer) -> Leader:
        streams = ServerStreams()
        leader = Leader("", streams)

        async def handler(request: web.Request) -> web.StreamResponse:
            leader.accepted.append(str(request.remote))
            try:
                return await streams.serve(request, answer, max_message_bytes=1 << 20)
            finally:
                leader.ended.append(str(request.remote))

        app = web.Application(middlewares=[error_middleware])
        app.router.add_get(STREAM_PATH, handler)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        leader.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
        return leader

    yield start
    for runner in runners:
        await runner.cleanup()


def _request(session_id: int, max_wait_ms: int = 0) -> FetchRequest:
    return FetchRequest(
        replica_id=2, broker_epoch=1, max_wait_ms=max_wait_ms, max_bytes=1 << 20, partitions=[], session_id=session_id
    )


async def _echo_session(request: FetchRequest) -> FetchResponse:
    return FetchResponse([], request.session_id)


async def test_fetches_share_one_kept_open_connection_each_answered_in_turn(serving) -> None:
    leader = await serving(_echo_session)
    async with aiohttp.ClientSession() as session:
        transport = StreamFetchTransport(stream_opener(session, lambda _: leader.url), lambda _: True)
        answers = [(await transport.send(1, _request(session_id))).session_id for session_id in (11, 12, 13)]
        await transport.close()
    assert answers == [11, 12, 13]
    assert len(leader.accepted) == 1


async def test_an_answer_that_comes_after_its_fetch_gave_up_is_never_taken_for_the_next_fetchs(serving) -> None:
    late = asyncio.Event()

    async def slow_first(request: FetchRequest) -> FetchResponse:
        if request.session_id == 1:
            await asyncio.sleep(0.3)
            late.set()
        return FetchResponse([], request.session_id)

    leader = await serving(slow_first)
    async with aiohttp.ClientSession() as session:
        transport = StreamFetchTransport(
            stream_opener(session, lambda _: leader.url), lambda _: True, answer_grace_s=0.1
        )
        with pytest.raises(FetchTransportError):
            await transport.send(1, _request(1))
        await late.wait()
        answer = await transport.send(1, _request(2))
        await transport.close()
    assert answer.session_id == 2
    assert len(leader.accepted) == 2, "the fetch that gave up closed its connection; the next opened another"


async def test_a_message_that_is_not_a_fetch_ends_the_stream_unanswered(serving) -> None:
    asked: list[FetchRequest] = []

    async def record(request: FetchRequest) -> FetchResponse:
        asked.append(request)
        return FetchResponse([], request.session_id)

    leader = await serving(record)
    async with aiohttp.ClientSession() as session, session.ws_connect(leader.url + STREAM_PATH) as socket:
        await socket.send_bytes(b"\x00\x01not a fetch")
        message = await socket.receive()
    assert message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
    assert asked == []


async def test_a_plain_get_of_the_stream_route_is_a_400_naming_the_upgrade(serving) -> None:
    leader = await serving(_echo_session)
    async with aiohttp.ClientSession() as session, session.get(leader.url + STREAM_PATH) as reply:
        body = await reply.json()
    assert reply.status == 400
    assert (body["error"], body["error_code"]) == ("INVALID_REQUEST", 40001)
    assert "WebSocket" in body["message"]


async def test_closing_the_leaders_streams_fails_the_next_fetch_which_then_reconnects(serving) -> None:
    leader = await serving(_echo_session)
    async with aiohttp.ClientSession() as session:
        transport = StreamFetchTransport(stream_opener(session, lambda _: leader.url), lambda _: True)
        await transport.send(1, _request(1))
        await leader.streams.close_all()

        async def ended() -> bool | None:
            return len(leader.ended) == 1 or None

        await wait_until_async(ended, "the leader's stream handler to end")
        with pytest.raises(FetchTransportError):
            await transport.send(1, _request(2))
        assert (await transport.send(1, _request(3))).session_id == 3
        await transport.close()
    assert len(leader.accepted) == 2


async def test_an_unregistered_leader_fails_the_fetch_without_a_connection() -> None:
    async with aiohttp.ClientSession() as session:
        transport = StreamFetchTransport(stream_opener(session, lambda _: None), lambda _: False)
        assert not transport.reachable(1)
        with pytest.raises(FetchTransportError, match="not registered"):
            await transport.send(1, _request(1))


async def test_the_follower_loop_copies_the_leaders_log_over_a_stream(serving, tmp_path: Path) -> None:
    """The broker's fetch loop and fetch handler, with the stream between them: records and the HW cross."""
    leader_partition, follower = leader_and_follower(tmp_path)
    handler = InProcessTransport(leader_partition)
    leader = await serving(lambda request: handler.send(1, request))
    async with aiohttp.ClientSession() as session:
        transport = StreamFetchTransport(stream_opener(session, lambda _: leader.url), lambda _: True)
        fetchers = fetching(follower, transport)
        try:
            await leader_partition.append(encode_batch([(None, b"a"), (None, b"b")]), Acks.ONE, timeout_ms=1_000)

            async def copied() -> bool | None:
                return (follower.log_end_offset, leader_partition.high_watermark, follower.high_watermark) == (
                    2,
                    2,
                    2,
                ) or None

            await wait_until_async(copied, "the follower to hold both records and learn the HW")
        finally:
            await fetchers.close()
            await transport.close()
    assert len(leader.accepted) == 1
