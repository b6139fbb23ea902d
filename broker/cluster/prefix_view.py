"""A local, always-current copy of the keys under one prefix, and a store retry helper.

``PrefixView`` lists the prefix once and then applies the store's watch from the
listed revision + 1, so it misses no change and applies each exactly once. When the
watch falls behind the store's compaction point it re-lists; when the store is
unreachable it retries with backoff from the last revision it applied. One task
owns the watch; readers take ``snapshot()`` and wait on ``wait_changed``.

Keys learnt from watch events carry ``create_revision = mod_revision`` and no lease:
events do not say more, and the views here only need values and mod revisions.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

import structlog

from broker.backoff import Backoff
from broker.cluster.store import (
    CompactedError,
    KeyValue,
    MetadataStore,
    StoreUnavailableError,
)

log = structlog.get_logger(__name__)

T = TypeVar("T")

INITIAL_BACKOFF_MS = 50
MAX_BACKOFF_MS = 2000


async def retry_unavailable(action: Callable[[], Awaitable[T]], what: str) -> T:
    """Run ``action`` until it does not raise ``StoreUnavailableError``, doubling the
    wait between attempts up to ``MAX_BACKOFF_MS``. Cancel the caller to give up.

    Only for actions that are safe to repeat: reads, and writes that are CAS (an
    applied write makes its retry fail the comparison instead of applying twice).
    """
    backoff = Backoff(INITIAL_BACKOFF_MS, MAX_BACKOFF_MS)
    while True:
        try:
            return await action()
        except StoreUnavailableError as error:
            delay_ms = backoff.next_delay()
            log.warning("metadata_store_unavailable_retrying", what=what, backoff_ms=delay_ms, error=str(error))
            await asyncio.sleep(delay_ms / 1000)


def report_stopped_watch(task: asyncio.Task[None]) -> None:
    """A view's watch ends only when it is cancelled (the view closed): one that ended with an error left
    its view frozen at its last revision, which nothing else would tell (a broker's view of live brokers
    stopped this way and refused a peer's ISR rejoin for the rest of the run). Logged with the traceback."""
    if task.cancelled() or task.exception() is None:
        return
    log.error("view_watch_stopped", task=task.get_name(), error=repr(task.exception()), exc_info=task.exception())


class PrefixView:
    """Every key under ``prefix`` as of ``revision``, kept current by a watch.

    ``on_change`` (optional, synchronous) runs after each applied change, on the
    view's task; keep it cheap (set an event).
    """

    def __init__(self, store: MetadataStore, prefix: str, on_change: Callable[[], None] | None = None) -> None:
        self.store = store
        self.prefix = prefix
        self.revision = 0
        self._items: dict[str, KeyValue] = {}
        self._on_change = on_change
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Load the prefix, then follow it in the background."""
        await self._relist()
        self._task = asyncio.get_running_loop().create_task(self._follow(), name=f"prefix-view {self.prefix}")
        self._task.add_done_callback(report_stopped_watch)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait({self._task})  # a watch that stopped on an error was reported when it did
            self._task = None

    def snapshot(self) -> dict[str, KeyValue]:
        return dict(self._items)

    def get(self, key: str) -> KeyValue | None:
        """One key as of ``revision``, without copying the prefix."""
        return self._items.get(key)

    async def catch_up(self, timeout_s: float) -> bool:
        """Wait until the view holds every key the store holds now, each at least as new as there.

        The watch trails the store by a poll or a hop: a decision that must not refuse on
        what it has not heard of yet (a controller placing replicas a moment after brokers
        registered) reads the prefix once and gives the watch ``timeout_s`` to deliver it.
        A key deleted since is not waited for. Whether the view caught up in time; the read
        is inside that time too, so an unreachable store cannot hold the caller longer.
        """

        def held(items: list[KeyValue]) -> bool:
            return all(
                (mine := self._items.get(kv.key)) is not None and mine.mod_revision >= kv.mod_revision for kv in items
            )

        try:
            async with asyncio.timeout(timeout_s):
                items, _ = await retry_unavailable(lambda: self.store.list(self.prefix), f"list {self.prefix}")
                while not held(items):
                    await self.wait_changed()
        except TimeoutError:
            return False
        return True

    async def wait_changed(self) -> None:
        """Return at the next applied change."""
        changed = self._changed
        await changed.wait()

    async def _relist(self) -> None:
        items, revision = await retry_unavailable(lambda: self.store.list(self.prefix), f"list {self.prefix}")
        self._items = {item.key: item for item in items}
        self.revision = revision
        self._notify()

    async def _follow(self) -> None:
        """Apply the watch for ever. A watch that ends without an error (its store was closed under
        it) is watched again after a back-off, reset when the watch had delivered changes: following
        it again at once spun the event loop and starved everything else on it (a test teardown
        hung on a view left running)."""
        backoff = Backoff(INITIAL_BACKOFF_MS, MAX_BACKOFF_MS)
        while True:
            try:
                watched_from = self.revision
                await self._apply_watch()
                if self.revision > watched_from:
                    backoff.reset()
                delay_ms = backoff.next_delay()
                log.info("prefix_view_watch_ended", prefix=self.prefix, revision=self.revision, backoff_ms=delay_ms)
                await asyncio.sleep(delay_ms / 1000)
            except CompactedError:
                log.info("prefix_view_relist_after_compaction", prefix=self.prefix, revision=self.revision)
                await self._relist()
            except StoreUnavailableError as error:
                delay_ms = backoff.next_delay()
                log.warning("prefix_view_watch_failed", prefix=self.prefix, backoff_ms=delay_ms, error=str(error))
                await asyncio.sleep(delay_ms / 1000)

    async def _apply_watch(self) -> None:
        events = self.store.watch(self.prefix, self.revision + 1)
        async with contextlib.aclosing(events):  # type: ignore[type-var]
            async for event in events:
                if event.type == "put":
                    self._items[event.key] = KeyValue(
                        key=event.key,
                        value=event.value,
                        mod_revision=event.mod_revision,
                        create_revision=event.mod_revision,
                        lease=None,
                    )
                else:
                    self._items.pop(event.key, None)
                self.revision = event.mod_revision
                self._notify()

    def _notify(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()
        if self._on_change is not None:
            self._on_change()


class ParsedValues(Generic[T]):
    """The values of a ``PrefixView`` (and of listings of its prefix), each parsed once per revision of its key.

    A controller reads every partition record for its periodic leader balance, and every
    registration for each record it writes; parsing the JSON on every read was a third of
    an idle controller's profile, and after a failover an eighth of the new controller's.
    Parsed values are shared between readers: never change one in place (records change
    by ``model_copy``). Keys the view no longer holds leave the memo at the next ``values``.
    """

    def __init__(self, view: PrefixView, parse: Callable[[KeyValue], T]) -> None:
        self._view = view
        self._parse = parse
        self._parsed: dict[str, tuple[int, T]] = {}

    def of(self, kv: KeyValue) -> T:
        """``kv``'s parsed value, from the memo when its key was parsed at the same revision
        (a listing read from the store names the revisions the view holds)."""
        cached = self._parsed.get(kv.key)
        if cached is not None and cached[0] == kv.mod_revision:
            return cached[1]
        value = self._parse(kv)
        self._parsed[kv.key] = (kv.mod_revision, value)
        return value

    def values(self) -> list[T]:
        """Every key's parsed value as the view holds it now, in the view's key order."""
        held = self._view.snapshot()
        values = [self.of(kv) for kv in held.values()]
        if len(self._parsed) > len(values):
            self._parsed = {key: parsed for key, parsed in self._parsed.items() if key in held}
        return values
