"""Exceptions to JSON error responses: statuses, bodies, Retry-After, field names."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ValidationError

from broker.acks import Acks
from broker.errors import CorruptRecord, InvalidRequest, NotEnoughReplicas, OffsetOutOfRange, RequestTimedOut
from broker.server.middleware import error_response, validation_error
from broker.server.params import acks_param, parse_int


def body_of(response) -> dict:
    return json.loads(response.body)


def test_highwater_error_keeps_status_code_and_details() -> None:
    response = error_response(OffsetOutOfRange("offset 9 is out of range", log_start_offset=0, log_end_offset=3))
    assert response.status == 416
    assert body_of(response) == {
        "error_code": 41601,
        "error": "OFFSET_OUT_OF_RANGE",
        "message": "offset 9 is out of range",
        "retriable": False,
        "log_start_offset": 0,
        "log_end_offset": 3,
    }
    assert "Retry-After" not in response.headers


def test_503_carries_retry_after() -> None:
    response = error_response(NotEnoughReplicas("isr too small"))
    assert response.status == 503 and response.headers["Retry-After"] == "1"
    assert body_of(response)["retriable"] is True
    assert "Retry-After" not in error_response(RequestTimedOut("slow")).headers
    assert error_response(CorruptRecord("bad crc")).status == 400


def test_validation_error_names_every_field() -> None:
    class Model(BaseModel):
        count: int
        name: str

    with pytest.raises(ValidationError) as raised:
        Model.model_validate({"count": "x"})
    error = validation_error(raised.value)
    assert error.http_status == 422
    assert [problem["field"] for problem in error.details["errors"]] == ["count", "name"]
    assert "count:" in error.message and "name:" in error.message


@pytest.mark.parametrize("text", ["-1", "+1", " 1", "1.0", "", "٣"])
def test_parse_int_refuses_anything_but_plain_digits(text: str) -> None:
    with pytest.raises(InvalidRequest, match="offset"):
        parse_int("offset", text)


def test_parse_int_bounds() -> None:
    assert parse_int("n", "007", minimum=1, maximum=7) == 7
    with pytest.raises(InvalidRequest, match="at most 7"):
        parse_int("n", "8", maximum=7)
    with pytest.raises(InvalidRequest, match="at least 1"):
        parse_int("n", "0", minimum=1)


def test_acks_spellings() -> None:
    spellings = ("0", "1", "all", "ALL", "-1")
    assert [acks_param({"acks": value}) for value in spellings] == [Acks.ZERO, Acks.ONE, Acks.ALL, Acks.ALL, Acks.ALL]
    assert acks_param({}) is Acks.ALL
    with pytest.raises(InvalidRequest, match="acks must be 0, 1 or all, got 'two'"):
        acks_param({"acks": "TWO"})
