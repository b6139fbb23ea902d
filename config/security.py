"""Security settings of a broker: who may connect (``[security]``) and over what (``[tls]``).

Kafka's names where Kafka has one: ``super_users`` is ``super.users``, ``allow_if_no_acl``
is ``allow.everyone.if.no.acl.found``, ``quota_window_num`` is ``quota.window.num`` and
``quota_window_size_ms`` is ``quota.window.size.seconds`` in milliseconds. A super user
is written ``User:admin`` or just ``admin`` (the ``User`` type is implied); both name
the same principal.

Authorization is on exactly when authentication is: with ``authentication = "none"``
every client is ``User:ANONYMOUS`` and may do what it likes except what nobody may
(write or delete internal topics, call broker-to-broker routes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

AuthenticationMode = Literal["none", "basic", "mtls"]
ClientAuth = Literal["none", "required"]
USER_TYPE = "User"


def user_principal(text: str) -> str:
    """``admin`` -> ``User:admin``; ``User:admin`` stays; anything else with a type is refused."""
    kind, separator, name = text.partition(":")
    if not separator:
        return f"{USER_TYPE}:{text}"
    if kind != USER_TYPE or not name:
        raise ValueError(f"{text!r} is not a user principal (write User:<name> or <name>)")
    return text


class SecuritySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    authentication: AuthenticationMode = Field(
        "none",
        description=(
            "how clients prove who they are: none (everyone is User:ANONYMOUS, no ACL is checked); basic (HTTP "
            "Basic user and password, checked against the users in the metadata store); mtls (the client "
            "certificate's CN is the user; needs tls.client_auth = required)"
        ),
    )
    super_users: list[str] = Field(
        default_factory=list, description="principals allowed everything (super.users): User:admin, or just admin"
    )
    allow_if_no_acl: bool = Field(
        False, description="allow an operation on a resource that no ACL names (allow.everyone.if.no.acl.found)"
    )
    credential_cache_entries: int = Field(
        1024, ge=1, description="verified username/password pairs kept so a request costs no key derivation"
    )
    failed_logins_per_minute: int = Field(
        20, ge=1, description="failed authentications one source address may make per minute before 429"
    )
    quota_window_num: int = Field(
        11,
        ge=2,
        description=(
            "samples a principal's byte rate is measured over (quota.window.num); it may burst about "
            "quota × (quota_window_num − 1) samples before it is slowed"
        ),
    )
    quota_window_size_ms: int = Field(
        1000, ge=1, description="length of one quota sample (Kafka's quota.window.size.seconds, in milliseconds)"
    )
    quota_max_throttle_ms: int = Field(
        30_000, ge=0, description="longest delay a quota imposes; a request that would need more gets 429"
    )

    @field_validator("super_users")
    @classmethod
    def _principals(cls, value: list[str]) -> list[str]:
        return [user_principal(item) for item in value]

    @property
    def authorizing(self) -> bool:
        return self.authentication != "none"


class TlsSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cert_file: Path | None = Field(
        None,
        description="PEM certificate chain of this broker; with key_file it turns TLS on for clients and brokers; unset: plain HTTP",
    )
    key_file: Path | None = Field(None, description="PEM private key of cert_file")
    ca_file: Path | None = Field(None, description="PEM CA bundle that verifies other brokers and, with mTLS, clients")
    client_auth: ClientAuth = Field("none", description="required = clients must present a certificate (mTLS)")

    @property
    def enabled(self) -> bool:
        return self.cert_file is not None

    @model_validator(mode="after")
    def _complete(self) -> TlsSettings:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("tls.cert_file and tls.key_file go together")
        if self.client_auth == "required" and (self.ca_file is None or not self.enabled):
            raise ValueError("tls.client_auth = 'required' needs tls.cert_file, tls.key_file and tls.ca_file")
        return self
