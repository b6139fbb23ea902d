"""A client that cannot reach any broker fails without leaving an HTTP session open.

The servers are a loopback port nothing listens on (``free_port``: handed to no broker),
so every connection is refused at once. aiohttp reports a session collected unclosed
twice: a ``ResourceWarning`` and an "Unclosed client session" error on the asyncio
logger. Each case drops the failed client, collects garbage and expects neither: a
failed ``async with`` never reaches ``close``, and a script that stops at the error
never calls it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import warnings
from collections.abc import AsyncIterator

import pytest

from broker.client.errors import BrokerUnreachable
from consumer import Consumer, SyncConsumer, TopicPartition
from producer import Producer, SyncProducer
from tests.support.brokers import free_port

pytestmark = pytest.mark.integration

UNCLOSED = "Unclosed client session"


@pytest.fixture
def nowhere() -> str:
    return f"http://127.0.0.1:{free_port()}"


@contextlib.asynccontextmanager
async def _no_unclosed_session(caplog: pytest.LogCaptureFixture) -> AsyncIterator[None]:
    """Fail if a session is reported unclosed while the block runs or when its garbage is collected.

    One loop turn comes first: the refused connection's callbacks keep the session
    reachable until they have run.
    """
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.ERROR, logger="asyncio"):
        warnings.simplefilter("always", ResourceWarning)
        yield
        await asyncio.sleep(0)
        gc.collect()
    reports = [str(warning.message) for warning in caught if UNCLOSED in str(warning.message)]
    reports += [record.getMessage() for record in caplog.records if UNCLOSED in record.getMessage()]
    assert reports == []


async def test_a_producer_that_cannot_start_leaves_no_session(nowhere: str, caplog: pytest.LogCaptureFixture) -> None:
    async with _no_unclosed_session(caplog):
        with pytest.raises(BrokerUnreachable):
            async with Producer(nowhere):
                pass


async def test_a_producer_whose_first_send_fails_leaves_no_session(
    nowhere: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with _no_unclosed_session(caplog):
        producer = Producer(nowhere)
        with pytest.raises(BrokerUnreachable):
            await producer.send("orders", b"value")
        del producer


async def test_a_consumer_that_cannot_start_leaves_no_session(nowhere: str, caplog: pytest.LogCaptureFixture) -> None:
    async with _no_unclosed_session(caplog):
        with pytest.raises(BrokerUnreachable):
            async with Consumer(nowhere):
                pass


async def test_a_consumer_whose_first_poll_fails_leaves_no_session(
    nowhere: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with _no_unclosed_session(caplog):
        consumer = Consumer(nowhere, auto_offset_reset="earliest")
        consumer.assign([TopicPartition("orders", 0)])
        with pytest.raises(BrokerUnreachable):
            await consumer.getmany(timeout_ms=100)
        del consumer


async def test_the_sync_facades_that_cannot_start_leave_no_session(
    nowhere: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with _no_unclosed_session(caplog):
        with pytest.raises(BrokerUnreachable):
            SyncProducer(nowhere)
        with pytest.raises(BrokerUnreachable):
            SyncConsumer(nowhere)
