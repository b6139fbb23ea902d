"""SCRAM-SHA-512 credentials as Kafka stores them (RFC 5802, RFC 7677).

A credential keeps the salt, the iteration count and two keys derived from the
password (``StoredKey`` and ``ServerKey``), never the password: whoever reads the
store can verify a SCRAM exchange but cannot log in, because the client proof needs
``ClientKey``, of which only its hash is kept. The HTTP door's Basic authentication
recomputes ``StoredKey`` from the offered password (``verify_password``); the Kafka
door's SCRAM exchange checks a client proof with ``proves`` and signs with ``server_signature``.

Invariants: ``iterations >= MIN_ITERATIONS`` (Kafka's minimum for SHA-512) and
``mechanism == MECHANISM`` for every credential this module builds or decodes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any

MECHANISM = "SCRAM-SHA-512"
MIN_ITERATIONS = 4096
SALT_BYTES = 32
_HASH = "sha512"


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes
    mechanism: str = MECHANISM

    def __repr__(self) -> str:
        # The keys are password-equivalent for an offline guessing attack: keep them out of logs.
        return f"ScramCredential(mechanism={self.mechanism!r}, iterations={self.iterations})"


def _salted_password(password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(_HASH, password.encode("utf-8"), salt, iterations)


def _hmac(key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, _HASH).digest()


def _stored_key(salted_password: bytes) -> bytes:
    return hashlib.sha512(_hmac(salted_password, b"Client Key")).digest()


def proves(credential: ScramCredential, auth_message: bytes, client_proof: bytes) -> bool:
    """Whether ``client_proof`` proves the password over ``auth_message`` (RFC 5802, the server side).

    ``ClientKey = ClientProof XOR HMAC(StoredKey, AuthMessage)``; the proof holds when
    ``H(ClientKey) == StoredKey``, compared in constant time.
    """
    client_signature = _hmac(credential.stored_key, auth_message)
    if len(client_proof) != len(client_signature):
        return False
    client_key = bytes(a ^ b for a, b in zip(client_proof, client_signature, strict=True))
    return hmac.compare_digest(hashlib.sha512(client_key).digest(), credential.stored_key)


def server_signature(credential: ScramCredential, auth_message: bytes) -> bytes:
    """``HMAC(ServerKey, AuthMessage)``: what proves the server to the client (RFC 5802)."""
    return _hmac(credential.server_key, auth_message)


def new_credential(password: str, iterations: int = MIN_ITERATIONS, salt: bytes | None = None) -> ScramCredential:
    """Derive a credential from ``password`` with a fresh random salt (``secrets``, i.e. ``os.urandom``)."""
    if iterations < MIN_ITERATIONS:
        raise ValueError(f"iterations must be at least {MIN_ITERATIONS}, got {iterations}")
    salt = secrets.token_bytes(SALT_BYTES) if salt is None else salt
    return credential_from_salted_password(salt, _salted_password(password, salt, iterations), iterations)


def credential_from_salted_password(salt: bytes, salted_password: bytes, iterations: int) -> ScramCredential:
    """The credential a client derived itself (Kafka's AlterUserScramCredentials sends the salted
    password, never the password); ``ValueError`` below ``MIN_ITERATIONS`` or for an empty salt."""
    if iterations < MIN_ITERATIONS:
        raise ValueError(f"iterations must be at least {MIN_ITERATIONS}, got {iterations}")
    if not salt or not salted_password:
        raise ValueError("the salt and the salted password must not be empty")
    return ScramCredential(
        salt=salt,
        iterations=iterations,
        stored_key=_stored_key(salted_password),
        server_key=_hmac(salted_password, b"Server Key"),
    )


def verify_password(credential: ScramCredential, password: str) -> bool:
    """True when ``password`` derives ``credential.stored_key``; compared in constant time."""
    salted = _salted_password(password, credential.salt, credential.iterations)
    return hmac.compare_digest(_stored_key(salted), credential.stored_key)


def to_json(credential: ScramCredential) -> dict[str, Any]:
    """The stored form: byte fields base64-encoded, as Kafka's ``salt=...,stored_key=...`` config does."""
    return {
        "mechanism": credential.mechanism,
        "iterations": credential.iterations,
        "salt": base64.b64encode(credential.salt).decode("ascii"),
        "stored_key": base64.b64encode(credential.stored_key).decode("ascii"),
        "server_key": base64.b64encode(credential.server_key).decode("ascii"),
    }


def _bytes_field(data: dict[str, Any], name: str) -> bytes:
    value = data.get(name)
    if not isinstance(value, str):
        raise ValueError(f"credential field {name!r} must be a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error:
        raise ValueError(f"credential field {name!r} is not valid base64") from None


def from_json(data: dict[str, Any]) -> ScramCredential:
    """The inverse of ``to_json``; ValueError on a missing or malformed field, a weak iteration
    count or a mechanism other than SCRAM-SHA-512 (a credential is never half-trusted)."""
    mechanism = data.get("mechanism")
    if mechanism != MECHANISM:
        raise ValueError(f"unknown SCRAM mechanism {mechanism!r}; only {MECHANISM} is supported")
    iterations = data.get("iterations")
    if not isinstance(iterations, int) or isinstance(iterations, bool) or iterations < MIN_ITERATIONS:
        raise ValueError(f"iterations must be an integer of at least {MIN_ITERATIONS}, got {iterations!r}")
    return ScramCredential(
        salt=_bytes_field(data, "salt"),
        iterations=iterations,
        stored_key=_bytes_field(data, "stored_key"),
        server_key=_bytes_field(data, "server_key"),
    )
