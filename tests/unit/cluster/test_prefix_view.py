"""``PrefixView`` on a real sqlite store whose watch ends under it (the store closed while the view follows)."""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from broker.cluster.prefix_view import PrefixView
from broker.cluster.store_url import open_store
from tests.support.waiting import wait_until_async


@pytest.mark.timeout(20)
async def test_a_watch_that_ends_is_followed_again_after_a_back_off_never_in_a_busy_loop(tmp_path: Path) -> None:
    """Regression: a view left running when its store closed re-watched at once, forever, without yielding,
    and starved its event loop (a broker test's teardown hung for the suite's whole timeout). This test's
    own polling only runs if the view yields; on the old code it never does and the timeout fails it."""
    store = await open_store(f"sqlite://{tmp_path / 'meta.db'}")
    view = PrefixView(store, "/brokers/")
    await view.start()
    with capture_logs() as logs:
        await store.close()

        async def first_end() -> MutableMapping[str, Any] | None:
            return next((entry for entry in logs if entry["event"] == "prefix_view_watch_ended"), None)

        ended = await wait_until_async(first_end, "the view to notice its watch ended", timeout_s=10)
        await view.close()
    assert ended["backoff_ms"] > 0, "the first re-watch waits"
