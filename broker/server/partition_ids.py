"""One rule, one answer, for a partition id a client names: in a path, a query or a JSON body.

A partition id is an integer >= 0. A negative one is a malformed request wherever it
appears, answered 400 ``INVALID_REQUEST`` (40001) naming where it was found: the path's
``…/partitions/-1`` (``params.partition_param``) and a body's ``"partition_id": -1`` are
the same mistake and get the same status, ``error_code`` and words. An id at or above
the topic's partition count is well formed but names nothing: 404
``UNKNOWN_TOPIC_OR_PARTITION``, decided against metadata (``params.check_partition``,
``produce_plan.choose_partition``).

Bodies declare their partition ids as ``PartitionId``; a negative one fails validation
with the error type ``NEGATIVE_PARTITION_ID``, which ``middleware.validation_error``
answers 400 rather than the 422 of other schema mistakes.

Pure: no asyncio, no I/O.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, WithJsonSchema
from pydantic_core import PydanticCustomError

from broker.server.params import INT32_MAX, JsonInt

PARTITION_ID = {"type": "integer", "minimum": 0, "maximum": INT32_MAX}
"""What a partition id is, in a path, a query or a body."""
NEGATIVE_PARTITION_ID = "negative_partition_id"
"""The pydantic error type of a negative partition id in a body."""


def _non_negative(value: int) -> int:
    """The body's twin of ``params.parse_int``'s refusal of ``…/partitions/-1``, in the same words."""
    if value < 0:
        raise PydanticCustomError(
            NEGATIVE_PARTITION_ID, "partition_id must be a non-negative integer, got {value}", {"value": value}
        )
    return value


PartitionId = Annotated[JsonInt, Field(le=INT32_MAX), AfterValidator(_non_negative), WithJsonSchema(PARTITION_ID)]
"""A partition id field of a JSON body: a JSON Schema integer (never ``false``), an int32, documented as >= 0."""
