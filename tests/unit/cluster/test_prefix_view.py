"""``PrefixView`` on a real sqlite store whose watch ends under it (the store closed while the view follows)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from broker.cluster.prefix_view import PrefixView
from broker.cluster.store_url import open_store


@pytest.mark.timeout(20)
async def test_a_watch_that_ends_is_followed_again_after_a_back_off_never_in_a_busy_loop(tmp_path: Path) -> None:
    """Regression: a view left running when its store closed re-watched at once, forever, without yielding,
    and starved its event loop (a broker test's teardown hung for the suite's whole timeout)."""
    store = await open_store(f"sqlite://{tmp_path / 'meta.db'}")
    view = PrefixView(store, "/brokers/")
    await view.start()
    with capture_logs() as logs:
        await store.close()
        await asyncio.sleep(0.3)
        await view.close()
    ended = [entry for entry in logs if entry["event"] == "prefix_view_watch_ended"]
    assert 1 <= len(ended) <= 10, f"{len(ended)} re-watches in 0.3 s"
    assert ended[0]["backoff_ms"] > 0
