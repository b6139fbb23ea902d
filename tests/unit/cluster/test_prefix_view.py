"""``PrefixView`` and its ``ParsedValues`` on a real sqlite store (one whose watch ends under it: the store closed while the view follows)."""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from broker.cluster.prefix_view import ParsedValues, PrefixView
from broker.cluster.store import KeyValue
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


async def test_parsed_values_parse_each_key_once_per_revision_and_forget_deleted_keys(tmp_path: Path) -> None:
    store = await open_store(f"sqlite://{tmp_path / 'meta.db'}")
    parsed: list[tuple[str, int]] = []

    def parse(kv: KeyValue) -> str:
        parsed.append((kv.key, kv.mod_revision))
        return kv.value.decode()

    view = PrefixView(store, "/p/")
    values = ParsedValues(view, parse)
    try:
        first = await store.put("/p/a", b"a1")
        await store.put("/p/b", b"b1")
        await view.start()
        assert values.values() == ["a1", "b1"]
        assert values.values() == ["a1", "b1"]
        listed, _ = await store.list("/p/")
        assert [values.of(kv) for kv in listed] == ["a1", "b1"], "a listing at the view's revisions is not parsed again"
        assert len(parsed) == 2
        second = await store.put("/p/a", b"a2")
        await store.delete_if("/p/b", (await store.get("/p/b")).mod_revision)  # type: ignore[union-attr]
        await wait_until_async(lambda: _holds(view, second), "the view to apply the change")
        assert values.values() == ["a2"]
        assert parsed == [("/p/a", first), ("/p/b", first + 1), ("/p/a", second)]
        assert "/p/b" not in values._parsed, "a deleted key leaves the memo"
    finally:
        await view.close()
        await store.close()


async def _holds(view: PrefixView, revision: int) -> bool | None:
    return view.revision > revision or None
