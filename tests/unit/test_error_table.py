"""The error table is complete and unambiguous, its numbers never move, and bodies round-trip.

Users and clients react to an error's name and ``error_code``: the expected table below
pins every row's name, code, HTTP status and retriability, so changing one is a
deliberate edit of this test, never a side effect.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from collections.abc import Iterator

import pytest

from broker.error_table import ERROR_TABLE, decode_error_body, error_body, error_from_name
from broker.errors import HighwaterError, NotFound, UnknownCluster, UnknownPartition, UnknownTopicOrPartition

PROJECT_PACKAGES = ("broker", "producer", "consumer", "config", "spark_connector")
CLIENT_LIBRARIES = ("broker.client", "producer", "consumer")

EXPECTED_ROWS = {
    ("UNKNOWN_SERVER_ERROR", 50001, 500, False),
    ("INVALID_REQUEST", 40001, 400, False),
    ("INVALID_TOPIC_EXCEPTION", 40002, 400, False),
    ("INVALID_PARTITIONS", 40003, 400, False),
    ("INVALID_REPLICATION_FACTOR", 40004, 400, False),
    ("INVALID_CONFIG", 40005, 400, False),
    ("CORRUPT_MESSAGE", 40006, 400, False),
    ("NOT_FOUND", 40400, 404, False),
    ("UNKNOWN_TOPIC_OR_PARTITION", 40403, 404, False),
    ("METHOD_NOT_ALLOWED", 40500, 405, False),
    ("REQUEST_TIMEOUT", 40801, 408, False),
    ("FENCED_LEADER_EPOCH", 40901, 409, False),
    ("TOPIC_ALREADY_EXISTS", 40002, 400, False),
    ("INVALID_REPLICA_ASSIGNMENT", 40002, 400, False),
    ("UNKNOWN_LEADER_EPOCH", 40903, 409, True),
    ("INVALID_PRODUCER_EPOCH", 40904, 409, False),
    ("STALE_BROKER_EPOCH", 40905, 409, True),
    ("MESSAGE_TOO_LARGE", 41301, 413, False),
    ("REQUEST_TOO_LARGE", 41302, 413, False),
    ("UNSUPPORTED_MEDIA_TYPE", 41501, 415, False),
    ("OFFSET_OUT_OF_RANGE", 41601, 416, False),
    ("NOT_LEADER_OR_FOLLOWER", 42101, 421, True),
    ("UNPROCESSABLE_ENTITY", 42201, 422, False),
    ("OUT_OF_ORDER_SEQUENCE_NUMBER", 42202, 422, False),
    ("KAFKA_STORAGE_ERROR", 50002, 500, True),
    ("SERVICE_UNAVAILABLE", 50003, 503, True),
    ("UNEXPECTED_APPEND_OFFSET", 50010, 500, False),
    ("LEADER_NOT_AVAILABLE", 50302, 503, True),
    ("NOT_ENOUGH_REPLICAS", 50303, 503, True),
    ("NOT_ENOUGH_REPLICAS_AFTER_APPEND", 50304, 503, True),
    ("NOT_CONTROLLER", 50305, 503, True),
    ("OFFSET_NOT_AVAILABLE", 50306, 503, True),
    ("REQUEST_TIMED_OUT", 50401, 504, True),
    ("UNSUPPORTED_ASSIGNOR", 40010, 400, False),
    ("UNKNOWN_MEMBER_ID", 40410, 404, False),
    ("GROUP_ID_NOT_FOUND", 40411, 404, False),
    ("FENCED_MEMBER_EPOCH", 40910, 409, False),
    ("STALE_MEMBER_EPOCH", 40911, 409, False),
    ("NON_EMPTY_GROUP", 40912, 409, False),
    ("NOT_COORDINATOR", 42110, 421, True),
    ("COORDINATOR_NOT_AVAILABLE", 50310, 503, True),
    ("COORDINATOR_LOAD_IN_PROGRESS", 50311, 503, True),
    ("AUTHENTICATION_FAILED", 40101, 401, False),
    ("TOPIC_AUTHORIZATION_FAILED", 40301, 403, False),
    ("GROUP_AUTHORIZATION_FAILED", 40302, 403, False),
    ("CLUSTER_AUTHORIZATION_FAILED", 40303, 403, False),
    ("RESOURCE_NOT_FOUND", 40404, 404, False),
    ("THROTTLING_QUOTA_EXCEEDED", 42901, 429, True),
    ("INVALID_TXN_STATE", 40920, 409, False),
    ("INVALID_RECORD", 40007, 400, False),
    ("PRODUCER_FENCED", 40921, 409, False),
    ("INVALID_PRODUCER_ID_MAPPING", 40922, 409, False),
    ("CONCURRENT_TRANSACTIONS", 40923, 409, True),
    ("INVALID_TRANSACTION_TIMEOUT", 40008, 400, False),
    ("TRANSACTIONAL_ID_NOT_FOUND", 40420, 404, False),
    ("TRANSACTIONAL_ID_AUTHORIZATION_FAILED", 40304, 403, False),
}


def _import_project() -> None:
    """Import every project module, so every ``HighwaterError`` subclass is defined.

    A module whose optional third-party dependency is not installed (a benchmark codec)
    is left out; a missing project module is a failure.
    """
    for package_name in PROJECT_PACKAGES:
        package = importlib.import_module(package_name)
        for module in pkgutil.walk_packages(package.__path__, package_name + "."):
            if module.name.endswith(".__main__"):
                continue  # an entry point: importing it runs the command
            try:
                importlib.import_module(module.name)
            except ModuleNotFoundError as error:
                if (error.name or "").split(".")[0] in PROJECT_PACKAGES:
                    raise


def _subclasses(cls: type[HighwaterError]) -> Iterator[type[HighwaterError]]:
    for subclass in cls.__subclasses__():
        yield subclass
        yield from _subclasses(subclass)


def _project_errors() -> list[type[HighwaterError]]:
    _import_project()
    return [cls for cls in _subclasses(HighwaterError) if cls.__module__.split(".")[0] in PROJECT_PACKAGES]


def _row_of(cls: type[HighwaterError]) -> type[HighwaterError]:
    return next(row for row in ERROR_TABLE if row.name == cls.name)


def test_rows_keep_their_names_codes_statuses_and_retriability() -> None:
    assert {(row.name, row.error_code, row.http_status, row.retriable) for row in ERROR_TABLE} == EXPECTED_ROWS


SHARED_CODES = {40002: {"INVALID_TOPIC_EXCEPTION", "TOPIC_ALREADY_EXISTS", "INVALID_REPLICA_ASSIGNMENT"}}
"""Codes the REST Proxy gives several errors: 40002 is its code for a request Kafka refused as invalid."""


def test_every_class_name_and_code_is_in_the_table_once() -> None:
    """Names are unique (bodies decode by name); a code is unique unless the REST Proxy shares it."""
    assert len(set(ERROR_TABLE)) == len(ERROR_TABLE)
    assert len({row.name for row in ERROR_TABLE}) == len(ERROR_TABLE)
    by_code: dict[int, set[str]] = {}
    for row in ERROR_TABLE:
        by_code.setdefault(row.error_code, set()).add(row.name)
    assert {code: names for code, names in by_code.items() if len(names) > 1} == SHARED_CODES


def test_every_broker_error_outside_the_table_refines_a_row() -> None:
    row_names = {row.name for row in ERROR_TABLE}
    broker_side = [cls for cls in _project_errors() if not cls.__module__.startswith(CLIENT_LIBRARIES)]
    refinements = [cls for cls in broker_side if cls not in ERROR_TABLE]
    assert refinements, "the walk found the refinements (UnknownPartition, CorruptCheckpoint ...)"
    for cls in refinements:
        assert cls.name in row_names, f"{cls.__qualname__} ({cls.name}) is neither a row nor refines one"
        row = _row_of(cls)
        assert issubclass(cls, row), f"{cls.__qualname__} takes the name {cls.name} but is no {row.__qualname__}"
        assert (cls.http_status, cls.retriable) == (row.http_status, row.retriable), cls.__qualname__


def test_client_library_errors_take_no_name_of_a_row_they_do_not_refine() -> None:
    client_side = [cls for cls in _project_errors() if cls.__module__.startswith(CLIENT_LIBRARIES)]
    assert {cls.name for cls in client_side} >= {"BROKER_UNREACHABLE", "LOG_TRUNCATION", "COMMIT_FAILED"}
    for cls in client_side:
        assert cls not in ERROR_TABLE, f"{cls.__qualname__} never comes in a broker's body"
        if any(row.name == cls.name for row in ERROR_TABLE):
            assert issubclass(cls, _row_of(cls)), cls.__qualname__


@pytest.mark.parametrize("row", ERROR_TABLE, ids=lambda row: row.name)
def test_every_row_round_trips_through_its_json_body(row: type[HighwaterError]) -> None:
    sent = row("what went wrong", topic_name="t", partition_id=3)
    body = json.loads(json.dumps(error_body(sent)))
    assert body == {
        "error_code": row.error_code,
        "error": row.name,
        "message": "what went wrong",
        "retriable": row.retriable,
        "topic_name": "t",
        "partition_id": 3,
    }
    received = decode_error_body(body, row.http_status)
    assert type(received) is row
    assert error_body(received) == body
    assert received.http_status == row.http_status
    assert type(error_from_name(row.name, "m")) is row


@pytest.mark.parametrize(
    ("refinement", "row"), [(UnknownPartition, UnknownTopicOrPartition), (UnknownCluster, NotFound)]
)
def test_a_refinement_decodes_as_its_row_with_the_code_it_was_sent_with(
    refinement: type[HighwaterError], row: type[HighwaterError]
) -> None:
    """A forwarding broker passes on the 40402 of ``UnknownPartition``, not its row's 40403."""
    received = decode_error_body(error_body(refinement("gone")), refinement.http_status)
    assert type(received) is row
    assert (received.name, received.error_code) == (refinement.name, refinement.error_code)


def test_a_name_in_no_row_keeps_what_the_body_says() -> None:
    body = {"error_code": 50399, "error": "SOMETHING_NEW", "message": "m", "retriable": True, "hint": 1}
    received = decode_error_body(body, 503)
    assert type(received) is HighwaterError
    assert (received.name, received.error_code, received.http_status, received.retriable) == (
        "SOMETHING_NEW",
        50399,
        503,
        True,
    )
    assert error_body(received) == body


@pytest.mark.parametrize("body", [None, "<html>bad gateway</html>", [], {"message": "no name"}, {"error": 7}])
def test_anything_but_an_error_body_decodes_to_nothing(body: object) -> None:
    assert decode_error_body(body, 502) is None
