"""Building a response of whichever version the client asked for, from kio's generated classes (pure).

kio has one module per API version; a version adds, drops or renames fields. The
handlers name the fields they know and ``build`` keeps those the version has, so one
handler serves every supported version and no field list is typed by hand. A field a
version requires but the handler did not give fails loudly (``TypeError``) — the
unit tests build every supported version of every response to prove none does.
"""

from __future__ import annotations

import dataclasses
import datetime
import sys
import uuid
from functools import cache
from types import ModuleType
from typing import Any

from kio.index import load_response_schema
from kio.static.primitive import i32Timedelta

NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))
ZERO_UUID = uuid.UUID(int=0)
"""Kafka's "no id" (a topic id or a member id field left unset)."""
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


@cache
def response_module(api_key: int, version: int) -> ModuleType:
    """kio's module holding the response classes of ``api_key`` at ``version``."""
    return sys.modules[load_response_schema(api_key, version).__module__]


@cache
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(field.name for field in dataclasses.fields(cls))


def build(cls: type, **values: Any) -> Any:
    """``cls(**values)`` with only the fields ``cls``'s version has."""
    names = _field_names(cls)
    return cls(**{name: value for name, value in values.items() if name in names})


def shape(api_key: int, version: int, name: str) -> type:
    """The class called ``name`` (``"PartitionData"``, ``"FetchResponse"``...) in that version's response module."""
    return getattr(response_module(api_key, version), name)


def duration(ms: int) -> i32Timedelta:
    """``ms`` milliseconds as a response's duration field."""
    return i32Timedelta.parse(datetime.timedelta(milliseconds=ms))


def millis(timeout: datetime.timedelta) -> int:
    """kio's timedelta fields back to Kafka's milliseconds."""
    return int(timeout / datetime.timedelta(milliseconds=1))


def timestamp(epoch_ms: int) -> datetime.datetime | None:
    """Kafka's int64 milliseconds as a datetime kio writes back as those milliseconds; -1 ("none") is None.

    Not ``TZAware.parse``: kio 0.6.5's check of that type refuses any datetime with a
    sub-second part, while its writer keeps milliseconds exactly (a round trip test pins it).
    """
    return EPOCH + datetime.timedelta(milliseconds=epoch_ms) if epoch_ms >= 0 else None
