"""Users, ACLs, quotas and the broker secret, read and written in the metadata store.

Every broker and the offline CLI (``highwater users|acls|quotas --metadata``) write
through this class, so the layout of ``broker.cluster.security_keys`` has one writer.
Brokers read through ``SecurityView``, which follows the same keys with a watch.

Writes that report what they did ("created", "deleted") read the key and then write
with a compare-and-set on the revision they read, retrying when another writer got
in between, so the answer is true of the write that landed. A ``StoreUnavailableError``
reaches the caller: an admin request should fail rather than hang.
"""

from __future__ import annotations

import secrets

from broker.cluster.security_keys import (
    ACLS_PREFIX,
    BROKER_SECRET_BYTES,
    BROKER_SECRET_KEY,
    QUOTAS_PREFIX,
    USERS_PREFIX,
    acl_key,
    decode_acl,
    decode_quota,
    decode_secret,
    decode_user,
    decoded,
    encode_acl,
    encode_quota,
    encode_secret,
    encode_user,
    quota_key,
    user_key,
)
from broker.cluster.store import MetadataStore
from broker.security.acl import AclBinding, AclFilter, filter_matches
from broker.security.quota_limits import QuotaLimits
from broker.security.scram import ScramCredential


class SecurityStore:
    """The security records of one cluster's metadata store (``/security/...``)."""

    def __init__(self, store: MetadataStore) -> None:
        self._store = store

    async def _upsert(self, key: str, value: bytes) -> bool:
        """Write ``value`` at ``key``; True if the key did not exist before this write."""
        while True:
            current = await self._store.get(key)
            expected = 0 if current is None else current.mod_revision
            if await self._store.put_if(key, value, expected) is not None:
                return current is None

    async def _delete(self, key: str) -> bool:
        """Delete ``key``; True if this call deleted it, False if it was absent."""
        while True:
            current = await self._store.get(key)
            if current is None:
                return False
            if await self._store.delete_if(key, current.mod_revision):
                return True

    # ------------------------------------------------------------------ users

    async def put_user(self, name: str, credential: ScramCredential) -> bool:
        """Create or replace the user's credential; True if the user is new. Validates ``name``."""
        return await self._upsert(user_key(name), encode_user(credential))

    async def delete_user(self, name: str) -> bool:
        return await self._delete(user_key(name))

    async def users(self) -> dict[str, ScramCredential]:
        items, _ = await self._store.list(USERS_PREFIX)
        return dict(decoded(items, USERS_PREFIX, decode_user))

    # ------------------------------------------------------------------ ACLs

    async def add_acl(self, binding: AclBinding) -> bool:
        """Store the binding; False if the same binding is already there (nothing changes)."""
        return await self._store.put_if(acl_key(binding), encode_acl(binding), 0) is not None

    async def remove_acl(self, binding: AclBinding) -> bool:
        """Delete exactly this binding; True if this call deleted it (an all-or-nothing batch undoes its own)."""
        return await self._delete(acl_key(binding))

    async def acls(self, acl_filter: AclFilter | None = None) -> list[AclBinding]:
        """The stored bindings (all, or those ``acl_filter`` selects), in key order."""
        return [binding for _, binding, _ in await self._acl_entries(acl_filter)]

    async def remove_acls(self, acl_filter: AclFilter) -> list[AclBinding]:
        """Delete the bindings ``acl_filter`` selects; the ones this call deleted (a binding another
        writer removed meanwhile is not reported twice)."""
        removed = []
        for key, binding, revision in await self._acl_entries(acl_filter):
            if await self._store.delete_if(key, revision):
                removed.append(binding)
        return removed

    async def _acl_entries(self, acl_filter: AclFilter | None) -> list[tuple[str, AclBinding, int]]:
        items, _ = await self._store.list(ACLS_PREFIX)
        revisions = {item.key: item.mod_revision for item in items}
        return [
            (ACLS_PREFIX + name, binding, revisions[ACLS_PREFIX + name])
            for name, binding in decoded(items, ACLS_PREFIX, decode_acl)
            if acl_filter is None or filter_matches(acl_filter, binding)
        ]

    # ------------------------------------------------------------------ quotas

    async def set_quota(self, principal: str, limits: QuotaLimits) -> None:
        """Create or replace ``principal``'s limits (``User:<name>``)."""
        await self._store.put(quota_key(principal), encode_quota(limits))

    async def remove_quota(self, principal: str) -> bool:
        return await self._delete(quota_key(principal))

    async def quotas(self) -> dict[str, QuotaLimits]:
        items, _ = await self._store.list(QUOTAS_PREFIX)
        return dict(decoded(items, QUOTAS_PREFIX, decode_quota))

    # ------------------------------------------------------------------ broker secret

    async def broker_secret(self) -> bytes:
        """The cluster's broker secret, created on first use.

        Creation is ``put_if(..., 0)``: of brokers starting together exactly one write lands,
        and the others re-read it, so every broker of the cluster ends with the same secret.
        A stored secret that does not decode raises ``MalformedRecord`` rather than being
        replaced: replacing it would silently split brokers that already hold the old one.
        """
        while True:
            current = await self._store.get(BROKER_SECRET_KEY)
            if current is not None:
                return decode_secret(current.value)
            secret = secrets.token_bytes(BROKER_SECRET_BYTES)
            if await self._store.put_if(BROKER_SECRET_KEY, encode_secret(secret), 0) is not None:
                return secret
