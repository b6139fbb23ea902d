"""``SecurityStore`` on a real sqlite metadata store: users, ACLs, quotas and the broker secret."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from broker.cluster.security_keys import BROKER_SECRET_KEY, MalformedRecord
from broker.cluster.security_store import SecurityStore
from broker.cluster.store import MetadataStore
from broker.cluster.store_url import open_store
from broker.errors import UnprocessableEntity
from broker.security.acl import AclBinding, AclFilter, AclOperation, AclPermission, PatternType, ResourceType
from broker.security.quota_limits import QuotaLimits
from broker.security.scram import new_credential, verify_password


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[MetadataStore]:
    opened = await open_store(f"sqlite://{tmp_path / 'meta.db'}")
    yield opened
    await opened.close()


def acl(
    name: str,
    pattern: PatternType = PatternType.LITERAL,
    principal: str = "User:alice",
    operation: AclOperation = AclOperation.READ,
    resource_type: ResourceType = ResourceType.TOPIC,
) -> AclBinding:
    return AclBinding(resource_type, name, pattern, principal, "*", operation, AclPermission.ALLOW)


async def test_user_is_created_replaced_listed_and_deleted(store: MetadataStore) -> None:
    security = SecurityStore(store)
    assert await security.put_user("alice", new_credential("one"))
    assert not await security.put_user("alice", new_credential("two"))
    users = await security.users()
    assert list(users) == ["alice"]
    assert verify_password(users["alice"], "two")
    assert not verify_password(users["alice"], "one")
    assert await security.delete_user("alice")
    assert not await security.delete_user("alice")
    assert await security.users() == {}


async def test_stored_user_holds_no_password(store: MetadataStore) -> None:
    await SecurityStore(store).put_user("bob", new_credential("correct horse"))
    stored = await store.get("/security/users/bob")
    assert stored is not None
    assert b"correct horse" not in stored.value


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "must not be empty"),
        ("a" * 256, "256 characters long; at most 255"),
        ("a/b", "may contain only letters, digits"),
        ("ünïcode", "may contain only letters, digits"),
    ],
)
async def test_bad_user_names_are_refused(store: MetadataStore, name: str, message: str) -> None:
    with pytest.raises(UnprocessableEntity, match=message):
        await SecurityStore(store).put_user(name, new_credential("pw"))
    assert await store.list("/security/") == ([], 0)


async def test_longest_allowed_user_name_is_accepted(store: MetadataStore) -> None:
    name = "a.b_c@d-" + "x" * 247
    assert await SecurityStore(store).put_user(name, new_credential("pw"))
    assert name in await SecurityStore(store).users()


async def test_a_malformed_user_is_skipped_and_the_rest_listed(store: MetadataStore) -> None:
    security = SecurityStore(store)
    await security.put_user("good", new_credential("pw"))
    await store.put("/security/users/bad", b'{"mechanism": "SCRAM-SHA-1"}')
    assert list(await security.users()) == ["good"]


async def test_acl_added_once_listed_by_filter_and_removed(store: MetadataStore) -> None:
    security = SecurityStore(store)
    read_orders = acl("orders")
    write_prefix = acl("ord", PatternType.PREFIXED, operation=AclOperation.WRITE)
    bobs = acl("orders", principal="User:bob")
    for binding in (read_orders, write_prefix, bobs):
        assert await security.add_acl(binding)
    assert not await security.add_acl(read_orders)
    assert len(await security.acls()) == 3
    assert await security.acls(AclFilter(principal="User:bob")) == [bobs]
    assert await security.acls(AclFilter(pattern_type=PatternType.PREFIXED)) == [write_prefix]

    removed = await security.remove_acls(AclFilter(principal="User:alice"))
    assert sorted(removed, key=str) == sorted([read_orders, write_prefix], key=str)
    assert await security.acls() == [bobs]
    assert await security.remove_acls(AclFilter(principal="User:alice")) == []


async def test_match_filter_selects_every_binding_that_applies_to_the_resource(store: MetadataStore) -> None:
    security = SecurityStore(store)
    literal, wildcard, prefix = acl("orders"), acl("*"), acl("ord", PatternType.PREFIXED)
    unrelated = [
        acl("payments"),
        acl("orders-eu", PatternType.PREFIXED),
        acl("orders", resource_type=ResourceType.GROUP),
    ]
    for binding in (literal, wildcard, prefix, *unrelated):
        await security.add_acl(binding)
    match = AclFilter(resource_type=ResourceType.TOPIC, resource_name="orders", pattern_type="MATCH")
    assert set(await security.acls(match)) == {literal, wildcard, prefix}
    exact = AclFilter(resource_type=ResourceType.TOPIC, resource_name="orders")
    assert await security.acls(exact) == [literal]


async def test_quota_set_replaced_listed_and_removed(store: MetadataStore) -> None:
    security = SecurityStore(store)
    await security.set_quota("User:alice", QuotaLimits(1000, None))
    await security.set_quota("User:alice", QuotaLimits(2000, 3000))
    await security.set_quota("User:bob", QuotaLimits(None, 10))
    assert await security.quotas() == {"User:alice": QuotaLimits(2000, 3000), "User:bob": QuotaLimits(None, 10)}
    assert await security.remove_quota("User:alice")
    assert not await security.remove_quota("User:alice")
    assert list(await security.quotas()) == ["User:bob"]


@pytest.mark.parametrize("principal", ["alice", "Group:x", "User:", "User:a/b"])
async def test_quota_principal_must_be_a_user(store: MetadataStore, principal: str) -> None:
    with pytest.raises(UnprocessableEntity):
        await SecurityStore(store).set_quota(principal, QuotaLimits(1, 1))


async def test_broker_secret_is_created_once_and_shared(tmp_path: Path, store: MetadataStore) -> None:
    other = await open_store(f"sqlite://{tmp_path / 'meta.db'}")
    try:
        secrets = await asyncio.gather(*(SecurityStore(s).broker_secret() for s in (store, other, store, other)))
    finally:
        await other.close()
    assert len(secrets[0]) == 32
    assert set(secrets) == {secrets[0]}
    stored = await store.get(BROKER_SECRET_KEY)
    assert stored is not None
    assert base64.b64decode(stored.value) == secrets[0]
    assert stored.create_revision == stored.mod_revision


async def test_a_malformed_broker_secret_is_reported_not_replaced(store: MetadataStore) -> None:
    await store.put(BROKER_SECRET_KEY, base64.b64encode(b"short"))
    with pytest.raises(MalformedRecord, match="5 bytes, not 32"):
        await SecurityStore(store).broker_secret()
    stored = await store.get(BROKER_SECRET_KEY)
    assert stored is not None
    assert stored.value == base64.b64encode(b"short")
