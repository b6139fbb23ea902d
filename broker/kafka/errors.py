"""highwater's errors as Kafka error codes: one table, used by every API of the listener (pure).

A highwater error already carries a Kafka-style name (``NOT_LEADER_OR_FOLLOWER``,
``OFFSET_OUT_OF_RANGE`` ...). Where Kafka has an error code of that name it is the
answer; ``RENAMED`` lists the few highwater names Kafka has no code for, with the
code a Kafka client acts on correctly (retriable stays retriable: a produce whose
outcome is unknown must still be reported as one). Anything else — an exception
that is no ``HighwaterError`` — is ``UNKNOWN_SERVER_ERROR``, as Kafka answers it.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from broker.errors import HighwaterError

RENAMED: dict[str, ErrorCode] = {
    "NOT_FOUND": ErrorCode.resource_not_found,
    "METHOD_NOT_ALLOWED": ErrorCode.invalid_request,
    "REQUEST_TIMEOUT": ErrorCode.request_timed_out,
    "REQUEST_TOO_LARGE": ErrorCode.record_list_too_large,
    "UNSUPPORTED_MEDIA_TYPE": ErrorCode.invalid_request,
    "UNPROCESSABLE_ENTITY": ErrorCode.invalid_request,
    "SERVICE_UNAVAILABLE": ErrorCode.request_timed_out,
    "UNEXPECTED_APPEND_OFFSET": ErrorCode.unknown_server_error,
    "AUTHENTICATION_FAILED": ErrorCode.sasl_authentication_failed,
}
"""highwater error name -> Kafka code, for the names Kafka does not have."""


def kafka_error_code(error: BaseException) -> ErrorCode:
    """The Kafka error code a Kafka client gets for ``error``."""
    if not isinstance(error, HighwaterError):
        return ErrorCode.unknown_server_error
    renamed = RENAMED.get(error.name)
    if renamed is not None:
        return renamed
    try:
        return ErrorCode[error.name.lower()]
    except KeyError:
        return ErrorCode.unknown_server_error
