"""One request frame in, at most one response payload out: decode, route by API key, encode.

Rules (Kafka's, unless said otherwise):

- an API key or version outside ``apis.API_TABLE`` is answered, never dropped: with
  ApiVersions v0 carrying ``UNSUPPORTED_VERSION`` and the supported ranges. That is
  Kafka's answer to an ApiVersions version it does not know (KIP-511); for any other
  key highwater gives the same answer rather than closing the connection as Kafka
  does, since no response schema exists for an API it does not know and the ranges
  tell the client what to use instead;
- a frame too short to carry a correlation id, or whose header or body does not parse
  as the version it names, raises ``MalformedRequest``: the listener closes that
  connection (Kafka's ``InvalidRequestException``), as the peer is not speaking Kafka;
- every handler runs through ``guard`` (authorization, quotas, ``throttle_time``), so the
  tests that answer through ``Dispatcher`` take the listener's own path;
- a handler that returns None (Produce with acks=0) gets no response;
- a handler's unexpected exception is not the client's to see in detail: it is logged
  and re-raised, and the listener closes the connection (Kafka does the same).
"""

from __future__ import annotations

from dataclasses import dataclass

from kio.index import load_request_schema
from kio.schema.errors import ErrorCode

from broker.kafka import guard
from broker.kafka.api_versions import api_versions_response
from broker.kafka.apis import APIS, SUPPORTED
from broker.kafka.codec import DecodedRequest, RequestPrefix, decode_request, encode_response, read_prefix
from broker.kafka.context import KafkaNode, RequestContext
from broker.kafka.fetch_sessions import ClientFetchSessions, new_fetch_session_id

UNSUPPORTED_ANSWER_VERSION = 0


@dataclass(frozen=True)
class Routed:
    """A frame the dispatcher understood: the decoded request and the name of its API."""

    api_name: str
    request: DecodedRequest


def unsupported_answer(prefix: RequestPrefix) -> bytes:
    """ApiVersions v0 with UNSUPPORTED_VERSION and the supported ranges, under the request's correlation id."""
    response = api_versions_response(UNSUPPORTED_ANSWER_VERSION, ErrorCode.unsupported_version, SUPPORTED)
    return encode_response(prefix.correlation_id, response)


def route(frame: bytes) -> Routed | bytes:
    """The decoded request, or (unsupported key or version) the answer to send as it is.

    ``MalformedRequest`` if the frame is not a request of the version it claims.
    """
    prefix = read_prefix(frame)
    api = APIS.get(prefix.api_key)
    if api is None or prefix.api_version not in api.versions:
        return unsupported_answer(prefix)
    request_class = load_request_schema(prefix.api_key, prefix.api_version)
    return Routed(api.name, decode_request(frame, prefix, request_class))


class Dispatcher:
    """Runs handlers against one node; see the module docstring."""

    def __init__(self, node: KafkaNode) -> None:
        slots = node.settings.max_incremental_fetch_session_cache_slots
        self.context = RequestContext(node, SUPPORTED, ClientFetchSessions(slots, new_fetch_session_id))

    async def answer(self, routed: Routed) -> tuple[bytes | None, int]:
        """The encoded answer (None: no answer, as to acks=0) and the throttle (ms) owed.

        The handler runs through ``guard``: authorization and quotas apply to every request.
        """
        prefix = routed.request.prefix
        handler = APIS[prefix.api_key].handler
        response, throttle_ms = await guard.answer(handler, self.context, routed.request)
        payload = None if response is None else encode_response(prefix.correlation_id, response)
        return payload, throttle_ms
