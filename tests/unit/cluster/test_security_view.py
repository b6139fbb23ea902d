"""``SecurityView`` on a real sqlite store: changes written through ``SecurityStore`` appear within a second."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from broker.cluster.security_store import SecurityStore
from broker.cluster.security_view import SecuritySnapshot, SecurityView
from broker.cluster.store import MetadataStore
from broker.cluster.store_url import open_store
from broker.security.acl import AclBinding, AclFilter, AclOperation, AclPermission, PatternType, ResourceType
from broker.security.quota_limits import QuotaLimits
from broker.security.scram import new_credential, verify_password

READ_ORDERS = AclBinding(
    ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*", AclOperation.READ, AclPermission.ALLOW
)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[MetadataStore]:
    opened = await open_store(f"sqlite://{tmp_path / 'meta.db'}")
    yield opened
    await opened.close()


@pytest.fixture
async def view(store: MetadataStore) -> AsyncIterator[SecurityView]:
    started = SecurityView(store)
    await started.start()
    yield started
    await started.close()


async def seen_within_a_second(view: SecurityView, condition: Callable[[SecuritySnapshot], bool]) -> SecuritySnapshot:
    async with asyncio.timeout(1):
        while not condition(view.snapshot):
            await view.wait_changed()
    return view.snapshot


async def test_start_loads_what_is_already_stored(store: MetadataStore) -> None:
    security = SecurityStore(store)
    await security.put_user("alice", new_credential("pw"))
    await security.add_acl(READ_ORDERS)
    await security.set_quota("User:alice", QuotaLimits(100, None))
    secret = await security.broker_secret()
    view = SecurityView(store)
    await view.start()
    try:
        snapshot = view.snapshot
    finally:
        await view.close()
    assert list(snapshot.users) == ["alice"]
    assert verify_password(snapshot.users["alice"], "pw")
    assert snapshot.acls == (READ_ORDERS,)
    assert snapshot.quotas == {"User:alice": QuotaLimits(100, None)}
    assert snapshot.broker_secret == secret
    assert snapshot.revision == (await store.list("/"))[1]


async def test_changes_through_the_store_are_visible_within_a_second(store: MetadataStore, view: SecurityView) -> None:
    security = SecurityStore(store)
    assert view.snapshot.users == {}
    await security.put_user("bob", new_credential("pw"))
    await seen_within_a_second(view, lambda s: "bob" in s.users)
    await security.add_acl(READ_ORDERS)
    await seen_within_a_second(view, lambda s: s.acls == (READ_ORDERS,))
    await security.set_quota("User:bob", QuotaLimits(None, 7))
    await seen_within_a_second(view, lambda s: s.quotas.get("User:bob") == QuotaLimits(None, 7))
    await security.remove_acls(AclFilter(principal="User:alice"))
    await security.delete_user("bob")
    snapshot = await seen_within_a_second(view, lambda s: not s.users and not s.acls)
    assert snapshot.quotas == {"User:bob": QuotaLimits(None, 7)}


async def test_snapshots_are_immutable_and_not_changed_by_later_writes(
    store: MetadataStore, view: SecurityView
) -> None:
    before = view.snapshot
    with pytest.raises(TypeError):
        before.users["mallory"] = new_credential("pw")  # type: ignore[index]
    await SecurityStore(store).put_user("carol", new_credential("pw"))
    after = await seen_within_a_second(view, lambda s: "carol" in s.users)
    assert "carol" not in before.users
    assert after.revision > before.revision


async def test_a_malformed_value_is_logged_once_and_skipped(store: MetadataStore, view: SecurityView) -> None:
    security = SecurityStore(store)
    with capture_logs() as logs:
        await store.put("/security/users/broken", b"not json")
        await store.put("/security/quotas/User:x", b'{"producer_byte_rate": -5}')
        await security.put_user("dave", new_credential("pw"))
        snapshot = await seen_within_a_second(view, lambda s: "dave" in s.users)
        await security.set_quota("User:dave", QuotaLimits(1, 1))
        snapshot = await seen_within_a_second(view, lambda s: "User:dave" in s.quotas)
    assert list(snapshot.users) == ["dave"]
    assert list(snapshot.quotas) == ["User:dave"]
    skipped = [entry["key"] for entry in logs if entry["event"] == "security_record_malformed_skipped"]
    assert skipped == ["/security/users/broken", "/security/quotas/User:x"]


async def test_on_change_runs_after_each_rebuild(store: MetadataStore) -> None:
    revisions: list[int] = []
    view: SecurityView
    view = SecurityView(store, on_change=lambda: revisions.append(view.snapshot.revision))
    await view.start()
    try:
        revision = await store.put("/security/broker-secret", base64.b64encode(bytes(32)))
        await seen_within_a_second(view, lambda s: s.broker_secret == bytes(32))
    finally:
        await view.close()
    assert revisions[-1] == revision
    assert len(revisions) == 2
