"""Authentication at the Kafka door: one ``Session`` per connection, SaslHandshake and SaslAuthenticate.

A connection is authenticated once, as Kafka's are, and its principal then drives
every authorization decision (``authz``). Where the principal comes from follows
``security.authentication``, as at the HTTP door:

- ``none``: ``User:ANONYMOUS`` from the first byte (Kafka's PLAINTEXT listener);
- ``mtls``: the user the verified client certificate names (Kafka's SSL listener
  with ``ssl.client.auth=required``);
- ``basic``: nobody, until SASL PLAIN or SCRAM-SHA-512 proves a user of the same
  credential store. PLAIN is checked by the very check HTTP Basic uses (its cache of
  verified passwords, its limiter of failed logins, its equal cost for unknown
  users); SCRAM by ``sasl.ScramServer`` against the stored keys.

Before a principal exists only ApiVersions and the SASL APIs are served
(``served_before_authentication``); the listener closes the connection on anything
else, as Kafka does. A failed exchange answers ``SASL_AUTHENTICATION_FAILED`` and the
connection is closed after that answer (``Session.failed``). Once authenticated,
SaslHandshake answers ``ILLEGAL_SASL_STATE`` (no re-authentication, KIP-368 is not
offered: ``session_lifetime`` 0).

SaslHandshake v0 (kafka-python's older clients) means the SASL tokens that follow
are raw frames, not SaslAuthenticate requests: the listener hands those to
``authenticate_token`` and sends its answer back as a raw frame.

The session of the connection being served is in ``SESSION`` (a context variable:
each connection is its own asyncio task), so a handler of any API reaches it
without the dispatcher carrying per-connection state.
"""

from __future__ import annotations

import base64
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import structlog
from kio.schema.errors import ErrorCode

from broker.errors import HighwaterError
from broker.kafka.codec import DecodedRequest
from broker.kafka.context import KafkaNode, RequestContext
from broker.kafka.sasl import MECHANISMS, PLAIN, SaslFailure, ScramServer, parse_plain
from broker.kafka.shapes import build, shape
from broker.security.principal import ANONYMOUS, Principal

log = structlog.get_logger(__name__)
audit = structlog.get_logger("highwater.audit")

SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36
API_VERSIONS = 18
PRE_AUTHENTICATION_APIS = frozenset({API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE})


@dataclass
class Session:
    """One connection's authentication state; ``principal`` is None until it is proven."""

    host: str
    principal: Principal | None = None
    mechanism: str | None = None
    scram: ScramServer | None = None
    raw_tokens: bool = False
    failed: bool = False


SESSION: ContextVar[Session] = ContextVar("kafka_session")


def served_before_authentication(api_key: int) -> bool:
    """The pre-authentication gate: what a connection without a principal may ask."""
    return api_key in PRE_AUTHENTICATION_APIS


def open_session(authentication: str, host: str, certificate_user: str | None) -> Session:
    """The session a new connection starts with, per ``security.authentication`` (module docstring)."""
    if authentication == "none":
        return Session(host, ANONYMOUS)
    if authentication == "mtls":
        return Session(host, Principal.user(certificate_user) if certificate_user else None)
    return Session(host)


def _step(node: KafkaNode, session: Session, token: bytes) -> bytes:
    """Feed one client token to the session's mechanism; the server's token, or ``SaslFailure``."""
    if session.mechanism == PLAIN:
        credentials = parse_plain(token)
        if ":" in credentials.username:
            raise SaslFailure("unknown user or wrong password")
        basic = base64.b64encode(f"{credentials.username}:{credentials.password}".encode()).decode("ascii")
        try:
            principal = node.security.authenticate(f"Basic {basic}", None, session.host)
        except HighwaterError as error:
            raise SaslFailure(error.message) from None
        session.principal = principal
        return b""
    if session.scram is None:
        session.scram = ScramServer(node.security.view.snapshot.users)
    answer = session.scram.step(token)
    if session.scram.done:
        session.principal = Principal.user(session.scram.username)
    return answer


def authenticate_token(node: KafkaNode, session: Session, token: bytes) -> bytes:
    """``_step`` with the audit trail; on failure the session is marked failed and ``SaslFailure`` re-raised."""
    try:
        answer = _step(node, session, token)
    except SaslFailure as failure:
        session.failed = True
        audit.warning(
            "audit.authentication_failed",
            door="kafka",
            source=session.host,
            mechanism=session.mechanism,
            reason=str(failure),
        )
        raise
    if session.principal is not None:
        log.info(
            "kafka.authenticated", peer=session.host, principal=str(session.principal), mechanism=session.mechanism
        )
    return answer


async def handshake(context: RequestContext, request: DecodedRequest) -> Any:
    session = SESSION.get()
    version = request.prefix.api_version
    response = shape(SASL_HANDSHAKE, version, "SaslHandshakeResponse")
    if session.principal is not None or session.mechanism is not None:
        return build(response, error_code=ErrorCode.illegal_sasl_state, mechanisms=())
    if request.body.mechanism not in MECHANISMS:
        return build(response, error_code=ErrorCode.unsupported_sasl_mechanism, mechanisms=MECHANISMS)
    session.mechanism = request.body.mechanism
    session.raw_tokens = version == 0
    return build(response, error_code=ErrorCode.none, mechanisms=MECHANISMS)


async def authenticate(context: RequestContext, request: DecodedRequest) -> Any:
    session = SESSION.get()
    response = shape(SASL_AUTHENTICATE, request.prefix.api_version, "SaslAuthenticateResponse")
    if session.mechanism is None or session.principal is not None or session.raw_tokens:
        session.failed = True
        message = "SaslAuthenticate needs a SaslHandshake v1 first, and only before authentication"
        return build(response, error_code=ErrorCode.illegal_sasl_state, error_message=message, auth_bytes=b"")
    try:
        answer = authenticate_token(context.node, session, request.body.auth_bytes)
    except SaslFailure as failure:
        message = f"Authentication failed with SASL mechanism {session.mechanism}: {failure}"
        return build(response, error_code=ErrorCode.sasl_authentication_failed, error_message=message, auth_bytes=b"")
    return build(response, error_code=ErrorCode.none, error_message=None, auth_bytes=answer)
