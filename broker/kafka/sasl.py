"""The server side of SASL PLAIN (RFC 4616) and SCRAM-SHA-512 (RFC 5802, RFC 7677), pure.

No I/O and no clock: a mechanism is a state machine fed the client's messages, which
answers the next server message or raises ``SaslFailure``. Credentials come from the
same SCRAM-SHA-512 store the HTTP API keeps (``broker.security.scram``): salt,
iterations, ``StoredKey`` and ``ServerKey`` — never a password, so a SCRAM exchange is
verified exactly as Kafka verifies it, with the stored keys alone.

Invariants of ``ScramServer``:

- it proves a principal only after a client-final message whose nonce ends with the one
  this exchange made (client nonce + a fresh server nonce, ``secrets``; "ends with" is
  Kafka's own rule in ``ScramSaslServer``, which librdkafka 2.0 relies on: it sends its
  client nonce again in front of the server's) and whose proof
  hashes to the stored key; a final message of another exchange (a replay) carries
  another nonce and fails;
- it accepts exactly one client-first and one client-final message, in that order:
  anything after success or failure is a failure (a replayed final message included);
- an unknown user gets a server-first message like a known one (salt derived from
  the name under a key drawn per process, the stored iteration count's minimum) and
  fails only at the proof, so the exchange does not tell which user names exist;
- channel binding is refused (``p=`` — Kafka does not offer it either), and an
  authorization id other than the user name is refused (Kafka's rule).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from broker.security.scram import MIN_ITERATIONS, ScramCredential, proves, server_signature

PLAIN = "PLAIN"
SCRAM_SHA_512 = "SCRAM-SHA-512"
MECHANISMS = (PLAIN, SCRAM_SHA_512)
"""What SaslHandshake offers, in the order Kafka lists them."""

NONCE_BYTES = 24
_STAND_IN_KEY = secrets.token_bytes(32)


class SaslFailure(Exception):
    """The exchange failed; the message is safe to show the client (no credential in it)."""


@dataclass(frozen=True)
class PlainCredentials:
    username: str
    password: str


def parse_plain(message: bytes) -> PlainCredentials:
    """``[authzid] NUL authcid NUL passwd`` (RFC 4616); an authzid must be the user itself (Kafka's rule)."""
    try:
        authzid, authcid, password = message.decode("utf-8").split("\x00")
    except (UnicodeDecodeError, ValueError):
        raise SaslFailure("PLAIN message is not authzid NUL username NUL password") from None
    if not authcid or not password:
        raise SaslFailure("PLAIN message needs a username and a password")
    if authzid and authzid != authcid:
        raise SaslFailure("an authorization id other than the username is not supported")
    return PlainCredentials(authcid, password)


def _attributes(message: str) -> list[tuple[str, str]]:
    pairs = []
    for part in message.split(","):
        name, separator, value = part.partition("=")
        if not separator or len(name) != 1:
            raise SaslFailure(f"malformed SCRAM attribute {part[:20]!r}")
        pairs.append((name, value))
    return pairs


def _saslname(value: str) -> str:
    """RFC 5802's escaping of ``,`` and ``=`` in names undone; a bare ``=`` is refused."""
    unescaped = value.replace("=2C", ",").replace("=3D", "=")
    if "=" in value.replace("=2C", "").replace("=3D", ""):
        raise SaslFailure("malformed SCRAM user name")
    return unescaped


def stand_in_credential(username: str) -> ScramCredential:
    """What an unknown user's exchange runs against: a stable salt per name, keys nobody can prove."""
    salt = hmac.new(_STAND_IN_KEY, username.encode("utf-8"), hashlib.sha512).digest()[:32]
    return ScramCredential(salt=salt, iterations=MIN_ITERATIONS, stored_key=secrets.token_bytes(64), server_key=b"")


class ScramServer:
    """One SCRAM-SHA-512 exchange; see the module docstring for its invariants."""

    def __init__(self, users: Mapping[str, ScramCredential], server_nonce: str | None = None) -> None:
        self._users = users
        self._server_nonce = server_nonce or base64.b64encode(secrets.token_bytes(NONCE_BYTES)).decode("ascii")
        self._state = "first"
        self._username = ""
        self._known = False
        self._credential: ScramCredential | None = None
        self._nonce = ""
        self._gs2_header = ""
        self._client_first_bare = ""
        self._server_first = ""

    @property
    def username(self) -> str:
        """The proven user name; only meaningful once ``done``."""
        return self._username

    @property
    def done(self) -> bool:
        return self._state == "done"

    def step(self, message: bytes) -> bytes:
        """The server's answer to the client's next message; ``SaslFailure`` ends the exchange."""
        state, self._state = self._state, "failed"
        try:
            text = message.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslFailure("SCRAM messages are UTF-8") from None
        if state == "first":
            answer = self._client_first(text)
            self._state = "final"
            return answer
        if state == "final":
            answer = self._client_final(text)
            self._state = "done"
            return answer
        raise SaslFailure("the SCRAM exchange is over; a new one needs a new connection")

    def _client_first(self, text: str) -> bytes:
        binding, _, rest = text.partition(",")
        authzid, separator, bare = rest.partition(",")
        if binding not in ("n", "y") or not separator:
            raise SaslFailure("SCRAM channel binding is not supported; the client-first message must start n,,")
        attributes = _attributes(bare)
        if len(attributes) < 2 or attributes[0][0] != "n" or attributes[1][0] != "r" or not attributes[1][1]:
            raise SaslFailure("the SCRAM client-first message needs n=<user>,r=<nonce>")
        username = _saslname(attributes[0][1])
        if authzid and authzid != f"a={attributes[0][1]}":
            raise SaslFailure("an authorization id other than the username is not supported")
        credential = self._users.get(username)
        self._known = credential is not None
        self._credential = credential if credential is not None else stand_in_credential(username)
        self._username = username
        self._gs2_header = f"{binding},{authzid},"
        self._client_first_bare = bare
        self._nonce = attributes[1][1] + self._server_nonce
        salt = base64.b64encode(self._credential.salt).decode("ascii")
        self._server_first = f"r={self._nonce},s={salt},i={self._credential.iterations}"
        return self._server_first.encode("utf-8")

    def _client_final(self, text: str) -> bytes:
        without_proof, separator, proof_text = text.rpartition(",p=")
        if not separator:
            raise SaslFailure("the SCRAM client-final message has no proof")
        attributes = dict(_attributes(without_proof))
        try:
            binding = base64.b64decode(attributes.get("c", ""), validate=True).decode("utf-8")
            proof = base64.b64decode(proof_text, validate=True)
        except (binascii.Error, UnicodeDecodeError):
            raise SaslFailure("the SCRAM client-final message is not valid base64") from None
        if binding != self._gs2_header:
            raise SaslFailure("the SCRAM channel binding does not match the client-first message")
        if not attributes.get("r", "").endswith(self._nonce):
            raise SaslFailure("the SCRAM nonce is not this exchange's")
        assert self._credential is not None
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        if not (proves(self._credential, auth_message, proof) and self._known):
            raise SaslFailure("unknown user or wrong password")
        signature = server_signature(self._credential, auth_message)
        return f"v={base64.b64encode(signature).decode('ascii')}".encode()
