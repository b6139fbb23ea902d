"""A broker's always-current, immutable copy of the cluster's users, ACLs, quotas and broker secret.

``SecurityView`` follows ``/security/`` with a ``PrefixView`` and, after every applied
change, rebuilds one ``SecuritySnapshot``. Request handlers read ``snapshot`` and keep
the object they got for the whole request, so one request sees one consistent state
(never a user from one revision and the ACLs from another).

A stored value that does not decode is logged once, with its key, and left out of the
snapshot; the rest of the view stays current. Decoded values are cached by key and
mod revision, so a change re-decodes only what changed (a credential or a malformed
value is not re-read, nor re-logged, on every unrelated write). Keys under
``/security/`` outside the known layout are ignored, so a newer broker may add some.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Generic, TypeVar

from broker.cluster.prefix_view import PrefixView
from broker.cluster.security_keys import (
    ACLS_PREFIX,
    BROKER_SECRET_KEY,
    PREFIX,
    QUOTAS_PREFIX,
    USERS_PREFIX,
    decode_acl,
    decode_logged,
    decode_quota,
    decode_secret,
    decode_user,
)
from broker.cluster.store import KeyValue, MetadataStore
from broker.security.acl import AclBinding
from broker.security.quota_limits import QuotaLimits
from broker.security.scram import ScramCredential

T = TypeVar("T")


@dataclass(frozen=True)
class SecuritySnapshot:
    """The security records as of store ``revision``; the mappings are read-only.

    ``users`` and ``quotas`` are keyed by user name and principal; ``acls`` is in store key order.
    """

    users: Mapping[str, ScramCredential]
    acls: tuple[AclBinding, ...]
    quotas: Mapping[str, QuotaLimits]
    broker_secret: bytes | None
    revision: int


EMPTY_SNAPSHOT = SecuritySnapshot(MappingProxyType({}), (), MappingProxyType({}), None, 0)


class _DecodedKind(Generic[T]):
    """The decoded values of the keys under one prefix, each decoded once per mod revision."""

    def __init__(self, prefix: str, decode: Callable[[bytes], T]) -> None:
        self.prefix = prefix
        self._decode = decode
        self._cache: dict[str, tuple[int, T | None]] = {}

    def values(self, items: Mapping[str, KeyValue]) -> dict[str, T]:
        """``{key without prefix: value}`` of the well-formed items under the prefix, in key order."""
        current: dict[str, tuple[int, T | None]] = {}
        for key in sorted(key for key in items if key.startswith(self.prefix)):
            item = items[key]
            cached = self._cache.get(key)
            if cached is None or cached[0] != item.mod_revision:
                cached = (item.mod_revision, decode_logged(item, self._decode))
            current[key] = cached
        self._cache = current
        return {key.removeprefix(self.prefix): value for key, (_, value) in current.items() if value is not None}


class SecurityView:
    """Follows ``/security/`` in ``store``; ``on_change`` (synchronous, cheap) runs after each rebuild."""

    def __init__(self, store: MetadataStore, on_change: Callable[[], None] | None = None) -> None:
        self._on_change = on_change
        self._users = _DecodedKind(USERS_PREFIX, decode_user)
        self._acls = _DecodedKind(ACLS_PREFIX, decode_acl)
        self._quotas = _DecodedKind(QUOTAS_PREFIX, decode_quota)
        self._secret = _DecodedKind(BROKER_SECRET_KEY, decode_secret)
        self._snapshot = EMPTY_SNAPSHOT
        self._view = PrefixView(store, PREFIX, self._rebuild)

    @property
    def snapshot(self) -> SecuritySnapshot:
        return self._snapshot

    async def start(self) -> None:
        """Load the current records (``snapshot`` is complete when this returns), then follow changes."""
        await self._view.start()

    async def close(self) -> None:
        await self._view.close()

    async def wait_changed(self) -> None:
        """Return at the next applied change; ``snapshot`` already reflects it."""
        await self._view.wait_changed()

    def _rebuild(self) -> None:
        items = self._view.snapshot()
        secret = self._secret.values(items).get("")
        self._snapshot = SecuritySnapshot(
            users=MappingProxyType(self._users.values(items)),
            acls=tuple(self._acls.values(items).values()),
            quotas=MappingProxyType(self._quotas.values(items)),
            broker_secret=secret,
            revision=self._view.revision,
        )
        if self._on_change is not None:
            self._on_change()
