"""Where the security records live in the metadata store, and their stored form.

Layout (every value is UTF-8 JSON except the secret, which is base64 text):

* ``/security/users/<name>`` — the user's SCRAM credential (``broker.security.scram``);
* ``/security/acls/<binding_key>`` — one ACL binding in its REST v3 wire form;
* ``/security/quotas/<principal>`` — a principal's quota limits;
* ``/security/broker-secret`` — 32 random bytes shared by the brokers of the cluster.

User names are limited to ``[A-Za-z0-9._@-]`` (1–255 characters) so a name is a single,
unambiguous path segment in every backend: no ``/``, no percent-encoding, no Unicode
look-alikes. Decoding refuses anything malformed with ``MalformedRecord`` so a reader
can skip one bad value and keep the rest.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

import structlog

from broker.cluster.store import KeyValue
from broker.errors import HighwaterError, UnprocessableEntity
from broker.security.acl import AclBinding
from broker.security.acl_codec import binding_from_wire, binding_key, binding_to_wire
from broker.security.principal import USER
from broker.security.quota_limits import QuotaLimits, limits_from_wire, limits_to_wire
from broker.security.scram import ScramCredential, from_json, to_json

log = structlog.get_logger(__name__)

T = TypeVar("T")

PREFIX = "/security/"
USERS_PREFIX = "/security/users/"
ACLS_PREFIX = "/security/acls/"
QUOTAS_PREFIX = "/security/quotas/"
BROKER_SECRET_KEY = "/security/broker-secret"
BROKER_SECRET_BYTES = 32

_USER_NAME = re.compile(r"[A-Za-z0-9._@-]{1,255}")


class MalformedRecord(ValueError):
    """A stored security value that does not decode; the message says why, never the value."""


def check_user_name(name: str) -> str:
    """``name`` if it is 1–255 characters of letters, digits, ``.``, ``_``, ``@`` and ``-``."""
    if not name:
        raise UnprocessableEntity("user name must not be empty")
    if len(name) > 255:
        raise UnprocessableEntity(f"user name is {len(name)} characters long; at most 255 are allowed")
    if not _USER_NAME.fullmatch(name):
        raise UnprocessableEntity(
            f"user name {name!r} may contain only letters, digits and the characters '.', '_', '@', '-'"
        )
    return name


def check_quota_principal(principal: str) -> str:
    """``principal`` if it is ``User:<name>`` with a valid user name."""
    kind, separator, name = principal.partition(":")
    if kind != USER or not separator:
        raise UnprocessableEntity(f"quota principal must be {USER}:<name> (got {principal!r})")
    check_user_name(name)
    return principal


def user_key(name: str) -> str:
    return USERS_PREFIX + check_user_name(name)


def acl_key(binding: AclBinding) -> str:
    return ACLS_PREFIX + binding_key(binding)


def quota_key(principal: str) -> str:
    return QUOTAS_PREFIX + check_quota_principal(principal)


def _json(document: object) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode("utf-8")


def encode_user(credential: ScramCredential) -> bytes:
    return _json(to_json(credential))


def encode_acl(binding: AclBinding) -> bytes:
    return _json(binding_to_wire(binding))


def encode_quota(limits: QuotaLimits) -> bytes:
    return _json(limits_to_wire(limits))


def encode_secret(secret: bytes) -> bytes:
    return base64.b64encode(secret)


def _decode_json(value: bytes, build: Callable[[dict], T]) -> T:
    try:
        document = json.loads(value)
        if not isinstance(document, dict):
            raise MalformedRecord("not a JSON object")
        return build(document)
    except MalformedRecord:
        raise
    except (ValueError, HighwaterError) as error:
        raise MalformedRecord(str(error)) from None


def decode_user(value: bytes) -> ScramCredential:
    return _decode_json(value, from_json)


def decode_acl(value: bytes) -> AclBinding:
    return _decode_json(value, binding_from_wire)


def decode_quota(value: bytes) -> QuotaLimits:
    return _decode_json(value, limits_from_wire)


def decode_secret(value: bytes) -> bytes:
    try:
        secret = base64.b64decode(value, validate=True)
    except binascii.Error:
        raise MalformedRecord("the broker secret is not base64") from None
    if len(secret) != BROKER_SECRET_BYTES:
        raise MalformedRecord(f"the broker secret is {len(secret)} bytes, not {BROKER_SECRET_BYTES}")
    return secret


def decode_logged(item: KeyValue, decode: Callable[[bytes], T]) -> T | None:
    """``item``'s decoded value, or None (logged with its key) when it is malformed."""
    try:
        return decode(item.value)
    except MalformedRecord as error:
        log.error("security_record_malformed_skipped", key=item.key, reason=str(error))
        return None


def decoded(items: Iterable[KeyValue], prefix: str, decode: Callable[[bytes], T]) -> Iterator[tuple[str, T]]:
    """``(name after prefix, decoded value)`` of each item under ``prefix``; a malformed one is logged and skipped."""
    for item in items:
        if item.key.startswith(prefix) and (value := decode_logged(item, decode)) is not None:
            yield item.key.removeprefix(prefix), value
