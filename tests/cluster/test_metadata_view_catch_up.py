"""A broker asked about a topic its view has not applied yet waits for the watch (real sqlite store).

Pins the race seen in the integration suite: a topic created through broker 1 was
answered UNKNOWN_TOPIC_OR_PARTITION by its leader, broker 3, whose watch had not
delivered the new records yet.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from structlog.testing import capture_logs

from broker.cluster.metadata_view import CATCH_UP_TIMEOUT_S, MetadataView
from broker.cluster.records import TopicRecord, new_topic_id, topic_key
from broker.cluster.store_url import open_store


async def _view_and_writer(tmp_path: Path):
    url = f"sqlite://{tmp_path}/metadata.db"
    reader, writer = await open_store(url), await open_store(url)
    view = MetadataView(
        reader,
        on_cluster_configs=lambda configs: None,
        on_broker_configs=lambda: None,
        on_topic=lambda topic: None,
        on_partition=lambda record: None,
        on_partition_deleted=lambda topic, p: None,
    )
    await view.start()
    return view, reader, writer


async def test_a_topic_written_a_moment_ago_is_in_the_view_once_caught_up(tmp_path: Path) -> None:
    view, reader, writer = await _view_and_writer(tmp_path)
    try:
        record = TopicRecord(name="fresh", topic_id=new_topic_id(), partitions_count=1, replication_factor=1)
        await writer.put(topic_key("fresh"), record.model_dump_json().encode())
        await view.catch_up_with_topic("fresh")
        assert "fresh" in view.topics
    finally:
        await view.close()
        await reader.close()
        await writer.close()


async def test_a_topic_the_store_lacks_is_answered_without_waiting(tmp_path: Path) -> None:
    view, reader, writer = await _view_and_writer(tmp_path)
    try:
        record = TopicRecord(name="freshly", topic_id=new_topic_id(), partitions_count=1, replication_factor=1)
        await writer.put(topic_key("freshly"), record.model_dump_json().encode())
        started = time.monotonic()
        await view.catch_up_with_topic("fresh")
        assert time.monotonic() - started < CATCH_UP_TIMEOUT_S / 2, "a missing topic must not wait for the timeout"
        assert "fresh" not in view.topics
    finally:
        await view.close()
        await reader.close()
        await writer.close()


async def test_a_watch_that_stops_on_an_error_says_so_instead_of_freezing_the_view_in_silence(tmp_path: Path) -> None:
    view, reader, writer = await _view_and_writer(tmp_path)
    try:
        with capture_logs() as logs:
            await writer.put(topic_key("mangled"), b"{not json")
            for _ in range(200):
                if any(entry["event"] == "view_watch_stopped" for entry in logs):
                    break
                await asyncio.sleep(0.05)
        [stopped] = [entry for entry in logs if entry["event"] == "view_watch_stopped"]
        assert stopped["task"] == "metadata-watch" and "TopicRecord" in stopped["error"]
    finally:
        await view.close()
        await reader.close()
        await writer.close()
