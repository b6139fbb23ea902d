"""The follower's fetch loop runs against any ``FetchTransport``: here the leader's own fetch handler, in process.

``ReplicaFetcher`` only builds requests and applies answers; the transport carries them.
With a transport that calls ``serve_replica_fetch`` on a real leader ``Partition``, the
real loop copies the leader's log, fetch sessions included, with no HTTP in between;
a transport that fails makes the loop start its session over and back off, then resume.
"""

from __future__ import annotations

from pathlib import Path

from broker.acks import Acks
from broker.record.codec import encode_batch
from broker.replica_io.partition import Partition
from tests.support.waiting import wait_until_async
from tests.unit.replica_io.in_process import InProcessTransport, fetching, leader_and_follower


async def _copied(follower: Partition, log_end_offset: int) -> None:
    async def reached() -> bool | None:
        return follower.log_end_offset == log_end_offset or None

    await wait_until_async(reached, f"the follower's log to reach {log_end_offset}")


async def test_the_fetch_loop_copies_the_leaders_log_through_an_in_process_transport(tmp_path: Path) -> None:
    leader, follower = leader_and_follower(tmp_path)
    transport = InProcessTransport(leader)
    fetchers = fetching(follower, transport)
    try:
        await leader.append(encode_batch([(None, b"a"), (None, b"b")]), Acks.ONE, timeout_ms=1_000)
        await _copied(follower, 2)
        await leader.append(encode_batch([(None, b"c")]), Acks.ONE, timeout_ms=1_000)
        await _copied(follower, 3)

        async def counted() -> bool | None:
            return leader.high_watermark == 3 or None

        await wait_until_async(counted, "the leader's HW to count the follower")
    finally:
        await fetchers.close()
    assert transport.requests[0].session_epoch == 0, "the first fetch opens a session"
    assert any(request.session_epoch > 0 for request in transport.requests), "later fetches are incremental"


async def test_a_failing_transport_restarts_the_session_and_the_loop_resumes(tmp_path: Path) -> None:
    leader, follower = leader_and_follower(tmp_path)
    await leader.append(encode_batch([(None, b"a")]), Acks.ONE, timeout_ms=1_000)
    transport = InProcessTransport(leader, failures=2)
    fetchers = fetching(follower, transport)
    try:
        await _copied(follower, 1)
    finally:
        await fetchers.close()
    assert len(transport.requests) >= 3
    assert all(request.session_epoch == 0 for request in transport.requests[:3]), "each failure starts a full fetch"
