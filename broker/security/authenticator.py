"""Who is asking: from an ``Authorization`` header or a client certificate to a ``Principal``.

Decides, never reads: the caller hands in the header, the certificate's common name,
the source address, the users and broker secret it holds now, and the time.

* A ``HighwaterBroker`` token (``broker_token``) is a broker, in every mode: that is
  how the internal routes stay closed to clients even with ``authentication = "none"``.
* ``none``: everyone else is ``User:ANONYMOUS``; credentials are ignored, as on
  Kafka's PLAINTEXT listener.
* ``basic``: ``Authorization: Basic`` checked against the user's SCRAM-SHA-512
  credential. A key derivation costs milliseconds, so a pair verified once is
  remembered (``CredentialCache``, bounded, tied to the exact stored credential: a
  changed or deleted user misses). No header at all is "not authenticated" (None):
  the caller lets that through to public routes only.
* ``mtls``: the certificate's common name is the user (the TLS layer already
  verified it against the CA).

Every failure counts against its source address (``LoginLimiter``); a source over
its limit is refused before any key derivation, so guessing cannot burn the CPU.
The password never leaves this module: not in errors, not in logs.
"""

from __future__ import annotations

import base64
import binascii
import functools
import secrets
from collections.abc import Mapping

from broker.errors import BASIC_CHALLENGE, AuthenticationFailed, ThrottlingQuotaExceeded
from broker.security.broker_token import SCHEME as BROKER_SCHEME
from broker.security.broker_token import verified_broker_id
from broker.security.credential_cache import CredentialCache
from broker.security.login_limiter import LoginLimiter
from broker.security.principal import ANONYMOUS, Principal
from broker.security.scram import ScramCredential, new_credential, verify_password

BASIC = "Basic"
MTLS_CHALLENGE = 'Mutual realm="highwater"'


@functools.cache
def _stand_in() -> ScramCredential:
    """What an unknown user's password is checked against, so that answer costs what a wrong password does.

    Without it an unknown name would be refused before any key derivation and a wrong
    password after one, and the time of a refusal would tell which user names exist.
    """
    return new_credential(secrets.token_urlsafe(32))


class Authenticator:
    """``mode`` is ``config.security``'s ``authentication`` (none, basic, mtls), passed as text: the settings
    module reads files, and this package does not import what does."""

    def __init__(self, mode: str, cache: CredentialCache, limiter: LoginLimiter) -> None:
        self.mode = mode
        self.cache = cache
        self.limiter = limiter

    def authenticate(
        self,
        authorization: str | None,
        peer_name: str | None,
        source: str,
        users: Mapping[str, ScramCredential],
        broker_secret: bytes | None,
        now_ms: int,
    ) -> Principal | None:
        """The principal the request proves, or None when it offers no credentials.

        Raises ``AuthenticationFailed`` for credentials that do not prove anyone and
        ``ThrottlingQuotaExceeded`` when ``source`` failed too often lately.
        """
        scheme, _, credentials = (authorization or "").strip().partition(" ")
        if scheme == BROKER_SCHEME:
            return self._broker(credentials.strip(), source, broker_secret, now_ms)
        if self.mode == "none":
            return ANONYMOUS
        if self.mode == "mtls":
            return Principal.user(peer_name) if peer_name else None
        if not authorization:
            return None
        if scheme.lower() != BASIC.lower():
            raise self._failure(source, now_ms, f"unsupported authorization scheme {scheme!r}: use Basic")
        return self._basic(credentials.strip(), source, users, now_ms)

    def _broker(self, credentials: str, source: str, secret: bytes | None, now_ms: int) -> Principal:
        self._refuse_if_blocked(source, now_ms)
        node_id = verified_broker_id(credentials, secret) if secret is not None else None
        if node_id is None:
            raise self._failure(source, now_ms, "the broker token is not valid for this cluster")
        return Principal.broker(node_id)

    def _basic(self, credentials: str, source: str, users: Mapping[str, ScramCredential], now_ms: int) -> Principal:
        self._refuse_if_blocked(source, now_ms)
        try:
            username, separator, password = base64.b64decode(credentials, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            raise self._failure(source, now_ms, "Basic credentials are not base64 of username:password") from None
        if not separator or not username:
            raise self._failure(source, now_ms, "Basic credentials are not base64 of username:password")
        credential = users.get(username)
        if credential is None:
            verify_password(_stand_in(), password)
            raise self._failure(source, now_ms, "unknown user or wrong password")
        if self.cache.verified(username, password, credential) is None:
            if not verify_password(credential, password):
                raise self._failure(source, now_ms, "unknown user or wrong password")
            self.cache.remember(username, password, credential)
        return Principal.user(username)

    def _refuse_if_blocked(self, source: str, now_ms: int) -> None:
        wait_ms = self.limiter.blocked(source, now_ms)
        if wait_ms > 0:
            raise ThrottlingQuotaExceeded(
                f"too many failed authentications from {source}; try again in {wait_ms // 1000 + 1} s",
                retry_after_ms=wait_ms,
            )

    def _failure(self, source: str, now_ms: int, message: str) -> AuthenticationFailed:
        self.limiter.record_failure(source, now_ms)
        challenge = MTLS_CHALLENGE if self.mode == "mtls" else BASIC_CHALLENGE
        return AuthenticationFailed(message, challenge=challenge)
