"""The topics a classic-protocol consumer subscribes to, read from its JoinGroup metadata.

A Kafka consumer joining with protocol type ``consumer`` sends, for each assignor, Kafka's
``ConsumerProtocolSubscription``: a version (int16), then the topics (an int32 count of
int16-length UTF-8 strings), then fields this reader does not need (user data, owned
partitions, rack). The broker never assigns for these groups (the leader member does),
so it reads the topics only to answer OffsetDelete as Kafka does: a group with members
cannot lose the offsets of a topic it subscribes to, and one whose subscription cannot
be read counts as subscribed to everything (Kafka's ``isSubscribedToTopic``). Pure.
"""

from __future__ import annotations

import struct

_VERSION = struct.Struct(">h")
_COUNT = struct.Struct(">i")
_LENGTH = struct.Struct(">h")


def subscribed_topics(metadata: bytes) -> frozenset[str] | None:
    """The topics of one member's subscription metadata; None when it does not read as one."""
    try:
        (version,) = _VERSION.unpack_from(metadata, 0)
        (count,) = _COUNT.unpack_from(metadata, _VERSION.size)
        if version < 0 or count < 0:
            return None
        position = _VERSION.size + _COUNT.size
        topics = []
        for _ in range(count):
            (length,) = _LENGTH.unpack_from(metadata, position)
            position += _LENGTH.size
            if length < 0 or position + length > len(metadata):
                return None
            topics.append(metadata[position : position + length].decode())
            position += length
    except (struct.error, UnicodeDecodeError):
        return None
    return frozenset(topics)
