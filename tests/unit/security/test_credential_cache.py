"""The credential cache: hits only for the verified password and credential, bounded, never holds a password."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from broker.security.credential_cache import CredentialCache

PASSWORD = "correct horse battery staple"


@dataclass(frozen=True)
class Credential:
    """Stands in for a stored user credential (salt and derived key)."""

    salt: bytes
    derived_key: bytes


ALICE_CREDENTIAL = Credential(b"salt-1", b"key-1")


def remembered(*users: str, max_entries: int = 8) -> CredentialCache:
    cache = CredentialCache(max_entries)
    for user in users:
        cache.remember(user, PASSWORD, ALICE_CREDENTIAL)
    return cache


def test_a_remembered_password_is_verified() -> None:
    assert remembered("alice").verified("alice", PASSWORD, ALICE_CREDENTIAL) is True


def test_an_unknown_user_is_unknown() -> None:
    assert remembered("alice").verified("bob", PASSWORD, ALICE_CREDENTIAL) is None


@pytest.mark.parametrize("other", ["wrong", "", PASSWORD + " ", PASSWORD.upper(), PASSWORD[:-1]])
def test_another_password_is_unknown_not_wrong(other: str) -> None:
    cache = remembered("alice")
    assert cache.verified("alice", other, ALICE_CREDENTIAL) is None
    assert cache.verified("alice", PASSWORD, ALICE_CREDENTIAL) is True


def test_an_equal_credential_read_again_still_hits() -> None:
    cache = remembered("alice")
    assert cache.verified("alice", PASSWORD, Credential(b"salt-1", b"key-1")) is True


def test_a_replaced_credential_misses_and_drops_the_entry() -> None:
    cache = remembered("alice")
    assert cache.verified("alice", PASSWORD, Credential(b"salt-2", b"key-2")) is None
    assert len(cache) == 0
    assert cache.verified("alice", PASSWORD, ALICE_CREDENTIAL) is None


def test_a_deleted_user_misses() -> None:
    assert remembered("alice").verified("alice", PASSWORD, None) is None


def test_a_credential_is_compared_by_identity_when_it_has_no_equality() -> None:
    credential = object()
    cache = CredentialCache(4)
    cache.remember("alice", PASSWORD, credential)
    assert cache.verified("alice", PASSWORD, credential) is True
    assert cache.verified("alice", PASSWORD, object()) is None


def test_remembering_again_replaces_the_entry() -> None:
    cache = remembered("alice")
    new_credential = Credential(b"salt-2", b"key-2")
    cache.remember("alice", "new password", new_credential)
    assert len(cache) == 1
    assert cache.verified("alice", PASSWORD, new_credential) is None
    assert cache.verified("alice", "new password", new_credential) is True


def test_the_least_recently_verified_user_is_evicted() -> None:
    cache = remembered("alice", "bob", "carol", max_entries=3)
    assert cache.verified("alice", PASSWORD, ALICE_CREDENTIAL)
    cache.remember("dave", PASSWORD, ALICE_CREDENTIAL)
    assert len(cache) == 3
    assert cache.verified("bob", PASSWORD, ALICE_CREDENTIAL) is None
    for kept in ("alice", "carol", "dave"):
        assert cache.verified(kept, PASSWORD, ALICE_CREDENTIAL) is True


def test_a_miss_on_another_password_does_not_refresh_the_entry() -> None:
    cache = remembered("alice", "bob", max_entries=2)
    assert cache.verified("alice", "wrong", ALICE_CREDENTIAL) is None
    cache.remember("carol", PASSWORD, ALICE_CREDENTIAL)
    assert cache.verified("alice", PASSWORD, ALICE_CREDENTIAL) is None
    assert cache.verified("bob", PASSWORD, ALICE_CREDENTIAL) is True


def test_the_cache_never_grows_past_its_bound() -> None:
    cache = CredentialCache(5)
    for number in range(100):
        cache.remember(f"user-{number}", PASSWORD, ALICE_CREDENTIAL)
        assert len(cache) == min(number + 1, 5)


def test_forget_all_empties_the_cache() -> None:
    cache = remembered("alice", "bob")
    cache.forget_all()
    assert len(cache) == 0
    assert cache.verified("alice", PASSWORD, ALICE_CREDENTIAL) is None


def test_a_cache_needs_room_for_one_entry() -> None:
    with pytest.raises(ValueError, match="at least one"):
        CredentialCache(0)


def _held_values(value: object, seen: set[int]) -> Iterator[object]:
    """Every value reachable from ``value`` through slots, attributes, mappings and sequences."""
    if id(value) in seen:
        return
    seen.add(id(value))
    yield value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _held_values(key, seen)
            yield from _held_values(item, seen)
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _held_values(item, seen)
    elif not isinstance(value, str | bytes | int | Credential):
        for name in getattr(type(value), "__slots__", ()):
            yield from _held_values(getattr(value, name), seen)
        for item in getattr(value, "__dict__", {}).values():
            yield from _held_values(item, seen)


def test_the_cache_holds_neither_the_password_nor_a_plain_hash_of_it() -> None:
    cache = remembered("alice")
    held = list(_held_values(cache, set()))
    assert ALICE_CREDENTIAL in held, "the walk reached the entries"
    secret = PASSWORD.encode()
    forbidden = {hashlib.sha256(secret).digest(), hashlib.sha256(secret).hexdigest()}
    for value in held:
        if isinstance(value, str | bytes):
            if isinstance(value, str):
                assert PASSWORD not in value
            else:
                assert secret not in value
            assert value not in forbidden


def test_two_caches_digest_the_same_password_differently() -> None:
    first, second = remembered("alice"), remembered("alice")
    digests = [
        value
        for cache in (first, second)
        for value in _held_values(cache, set())
        if isinstance(value, bytes) and len(value) == 32
    ]
    assert len(digests) >= 2
    assert len(set(digests)) == len(digests)
