"""SCRAM-SHA-512 credentials: a known answer computed here with hashlib, verification, the stored form."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from broker.security.scram import (
    MECHANISM,
    ScramCredential,
    from_json,
    new_credential,
    to_json,
    verify_password,
)

SALT = bytes(range(32))


def test_keys_match_rfc5802_derivation_computed_independently() -> None:
    salted = hashlib.pbkdf2_hmac("sha512", b"pencil", SALT, 4096)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha512).digest()
    expected_stored = hashlib.sha512(client_key).digest()
    expected_server = hmac.new(salted, b"Server Key", hashlib.sha512).digest()

    credential = new_credential("pencil", salt=SALT)

    assert credential == ScramCredential(SALT, 4096, expected_stored, expected_server, MECHANISM)


def test_verify_accepts_the_password_and_refuses_others() -> None:
    credential = new_credential("s3cret-é", iterations=5000)
    assert verify_password(credential, "s3cret-é")
    assert not verify_password(credential, "s3cret-e")
    assert not verify_password(credential, "")


def test_each_credential_gets_a_fresh_32_byte_salt() -> None:
    first, second = new_credential("same"), new_credential("same")
    assert len(first.salt) == 32
    assert first.salt != second.salt
    assert first.stored_key != second.stored_key


def test_too_few_iterations_are_refused_when_deriving() -> None:
    with pytest.raises(ValueError, match="at least 4096"):
        new_credential("pw", iterations=4095)


def test_json_round_trip_keeps_every_field_and_never_the_password() -> None:
    credential = new_credential("hunter2", salt=SALT)
    encoded = to_json(credential)
    assert set(encoded) == {"mechanism", "iterations", "salt", "stored_key", "server_key"}
    assert "hunter2" not in repr(encoded)
    assert from_json(encoded) == credential


def test_repr_shows_neither_salt_nor_keys() -> None:
    credential = new_credential("pw", salt=SALT)
    assert repr(credential) == "ScramCredential(mechanism='SCRAM-SHA-512', iterations=4096)"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"iterations": 4095}, "at least 4096"),
        ({"iterations": "4096"}, "at least 4096"),
        ({"iterations": True}, "at least 4096"),
        ({"mechanism": "SCRAM-SHA-256"}, "unknown SCRAM mechanism"),
        ({"salt": "not base64!"}, "'salt' is not valid base64"),
        ({"stored_key": None}, "'stored_key' must be a base64 string"),
    ],
)
def test_from_json_refuses_weak_or_malformed_credentials(change: dict, message: str) -> None:
    encoded = {**to_json(new_credential("pw", salt=SALT)), **change}
    with pytest.raises(ValueError, match=message):
        from_json(encoded)
