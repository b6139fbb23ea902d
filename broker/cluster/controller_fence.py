"""Fencing of controller writes: a deposed controller's writes must fail.

The controller epoch is the ``mod_revision`` of ``/controller`` when this broker
created it. Every controller write goes through ``ControllerFence``, which combines:

1. **compare-and-set on the target key's own ``mod_revision``**: a decision made on
   a record that anybody (a newer controller, a leader's ISR update) has changed
   since it was read fails instead of overwriting the newer state; and
2. **a check that ``/controller`` still carries this controller's epoch**, read right
   before each write. Once it fails the fence stays closed (``deposed``).

Interim, until the store offers a multi-key transaction: (2) and the write are two
store calls, not one atomic step. The window between them is one store round trip;
within it a newer controller may have been elected but, by (1), any record it has
already rewritten rejects our stale write. What remains possible is a write to a
record the new controller has not touched yet, based on what we read just before —
and the new controller re-reads every record before acting on it. The strict form is
one store method, ``put_if_fenced(key, value, expected_revision, fence_key,
fence_revision)`` (etcd: one ``Txn`` comparing both ``mod_revision``s; sqlite: both
comparisons inside the one ``BEGIN IMMEDIATE`` transaction), plus the matching
``delete_if_fenced``; the two methods below then become single calls.

Writes are retried on ``StoreUnavailableError``. Such an error leaves the outcome
unknown, so after one, a failed comparison is checked against the key itself: if it
already holds what we wrote (or, for a delete, is gone), the earlier attempt applied.
"""

from __future__ import annotations

import asyncio

import structlog

from broker.cluster.prefix_view import (
    INITIAL_BACKOFF_MS,
    MAX_BACKOFF_MS,
    retry_unavailable,
)
from broker.cluster.records import CONTROLLER_KEY
from broker.cluster.store import MetadataStore, StoreUnavailableError
from broker.errors import HighwaterError

log = structlog.get_logger(__name__)


class NotController(HighwaterError):
    """This broker is not (or no longer) the active controller; retry on the controller."""

    name = "NOT_CONTROLLER"
    error_code = 50305
    http_status = 503
    retriable = True


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
        if self.deposed:
            raise NotController(
                f"broker {self.broker_id} is no longer the controller (its epoch {self.controller_epoch} "
                f"was superseded)"
            )

    async def put_if(self, key: str, value: bytes, expected_revision: int) -> int | None:
        """Fenced compare-and-set; the new revision, or None if ``key`` changed."""
        outcome_unknown = False
        backoff_ms = INITIAL_BACKOFF_MS
        while True:
            await self.check()
            try:
                revision = await self.store.put_if(key, value, expected_revision)
            except StoreUnavailableError as error:
                outcome_unknown = True
                log.warning("controller_write_outcome_unknown", key=key, backoff_ms=backoff_ms, error=str(error))
                await asyncio.sleep(backoff_ms / 1000)
                backoff_ms = min(backoff_ms * 2, MAX_BACKOFF_MS)
                continue
            if revision is None and outcome_unknown:
                current = await retry_unavailable(lambda: self.store.get(key), f"read {key}")
                if current is not None and current.value == value:
                    return current.mod_revision
            return revision

    async def delete_if(self, key: str, expected_revision: int) -> bool:
        """Fenced compare-and-delete; False if ``key`` changed."""
        outcome_unknown = False
        backoff_ms = INITIAL_BACKOFF_MS
        while True:
            await self.check()
            try:
                deleted = await self.store.delete_if(key, expected_revision)
            except StoreUnavailableError as error:
                outcome_unknown = True
                log.warning("controller_delete_outcome_unknown", key=key, backoff_ms=backoff_ms, error=str(error))
                await asyncio.sleep(backoff_ms / 1000)
                backoff_ms = min(backoff_ms * 2, MAX_BACKOFF_MS)
                continue
            if not deleted and outcome_unknown:
                return await retry_unavailable(lambda: self.store.get(key), f"read {key}") is None
            return deleted
