"""Fencing of controller writes: a deposed controller's writes must fail.

The controller epoch is the ``mod_revision`` of ``/controller`` when this broker
created it. Every controller write goes through ``ControllerFence`` and is ONE store
call, ``put_if_fenced``/``delete_if_fenced``, that applies atomically only if both

1. the target key's own ``mod_revision`` is the one the decision was based on (a
   record that anybody — a newer controller, a leader's ISR update — has changed
   since it was read rejects the stale write instead of overwriting newer state); and
2. ``/controller``'s ``mod_revision`` is still this controller's epoch.

The store judges both comparisons and the write at one revision (etcd: one ``Txn``;
sqlite: one ``BEGIN IMMEDIATE`` transaction), so there is no window in which a
newer controller is elected but the old one's write still lands. Store revisions
only grow, so once ``/controller`` moves off the epoch it never returns to it.

A fenced write that fails does not say which comparison failed, so the fence then
reads ``/controller``: if the epoch is gone it raises ``NotController`` and stays
closed (``deposed``); otherwise the key changed and the caller gets None/False to
re-read and decide again. A successful write costs one round trip.

Writes are retried on ``StoreUnavailableError``. Such an error leaves the outcome
unknown, so after one, a failed comparison is checked against the key itself: if it
already holds what we wrote (or, for a delete, is gone), the earlier attempt applied
— under the fence, since every attempt is fenced.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import TypeVar

import structlog

from broker.backoff import Backoff
from broker.cluster.prefix_view import (
    INITIAL_BACKOFF_MS,
    MAX_BACKOFF_MS,
    retry_unavailable,
)
from broker.cluster.records import CONTROLLER_KEY
from broker.cluster.store import MetadataStore, StoreUnavailableError
from broker.errors import NotController

log = structlog.get_logger(__name__)

T = TypeVar("T")


class ControllerFence:
    """Writes that succeed only while ``/controller`` carries ``controller_epoch``."""

    def __init__(self, store: MetadataStore, broker_id: int, controller_epoch: int) -> None:
        self.store = store
        self.broker_id = broker_id
        self.controller_epoch = controller_epoch
        self.deposed = False

    async def check(self) -> None:
        """Raise ``NotController`` unless this controller's epoch is still current."""
        if not self.deposed:
            current = await retry_unavailable(lambda: self.store.get(CONTROLLER_KEY), "read /controller")
            if current is None or current.mod_revision != self.controller_epoch:
                self.deposed = True
                log.warning(
                    "controller_deposed",
                    broker_id=self.broker_id,
                    controller_epoch=self.controller_epoch,
                    current_controller_revision=current.mod_revision if current else None,
                )
        self._raise_if_deposed()

    def _raise_if_deposed(self) -> None:
        if self.deposed:
            raise NotController(
                f"broker {self.broker_id} is no longer the controller (its epoch {self.controller_epoch} "
                f"was superseded)"
            )

    async def put_if(self, key: str, value: bytes, expected_revision: int) -> int | None:
        """Fenced compare-and-set; the new revision, or None if ``key`` changed.
        Raises ``NotController`` once ``/controller`` no longer carries our epoch."""

        async def landed() -> int | None:
            current = await retry_unavailable(partial(self.store.get, key), f"read {key}")
            return current.mod_revision if current is not None and current.value == value else None

        return await self._write(
            key,
            "controller_write_outcome_unknown",
            lambda: self.store.put_if_fenced(key, value, expected_revision, CONTROLLER_KEY, self.controller_epoch),
            landed,
        )

    async def put_all(self, items: Sequence[tuple[str, bytes, int]]) -> int | None:
        """Fenced compare-and-set of every ``(key, value, expected_revision)`` at once
        (``MetadataStore.put_all_fenced``, 0: create); the revision of the last write, or None if a
        key is not as expected (nothing written). Raises ``NotController`` once ``/controller`` no
        longer carries our epoch. A write whose outcome the store could not tell is read back:
        done if every key holds its value."""

        async def landed() -> int | None:
            revisions = []
            for key, value, _ in items:
                current = await retry_unavailable(partial(self.store.get, key), f"read {key}")
                if current is None or current.value != value:
                    return None
                revisions.append(current.mod_revision)
            return max(revisions)

        return await self._write(
            items[0][0],
            "controller_write_outcome_unknown",
            lambda: self.store.put_all_fenced(items, CONTROLLER_KEY, self.controller_epoch),
            landed,
        )

    async def delete_if(self, key: str, expected_revision: int) -> bool:
        """Fenced compare-and-delete; False if ``key`` changed.
        Raises ``NotController`` once ``/controller`` no longer carries our epoch."""

        async def attempt() -> bool | None:
            deleted = await self.store.delete_if_fenced(key, expected_revision, CONTROLLER_KEY, self.controller_epoch)
            return True if deleted else None

        async def landed() -> bool | None:
            return True if await retry_unavailable(partial(self.store.get, key), f"read {key}") is None else None

        return bool(await self._write(key, "controller_delete_outcome_unknown", attempt, landed))

    async def _write(
        self,
        key: str,
        unknown_event: str,
        attempt: Callable[[], Awaitable[T | None]],
        landed: Callable[[], Awaitable[T | None]],
    ) -> T | None:
        """The one fenced write loop: ``attempt`` (None: a comparison failed), retried while the store is
        unavailable; after such an error a failed comparison asks ``landed`` whether an earlier attempt
        applied. A comparison that failed for good checks the fence (``NotController``) and answers None."""
        outcome_unknown = False
        backoff = Backoff(INITIAL_BACKOFF_MS, MAX_BACKOFF_MS)
        while True:
            self._raise_if_deposed()
            try:
                done = await attempt()
            except StoreUnavailableError as error:
                outcome_unknown = True
                delay_ms = backoff.next_delay()
                log.warning(unknown_event, key=key, backoff_ms=delay_ms, error=str(error))
                await asyncio.sleep(delay_ms / 1000)
                continue
            if done is not None:
                return done
            if outcome_unknown and (found := await landed()) is not None:
                return found
            await self.check()
            return None
