"""Records of ``__consumer_offsets``: where a group lives and how a commit is stored.

A group belongs to partition ``abs(hashCode(group_id)) % partitions_count`` exactly as
in Kafka (Java's ``String.hashCode`` over UTF-16 code units, Kafka's ``Utils.abs`` that
maps ``Integer.MIN_VALUE`` to 0), so a group id lands where a Kafka cluster with the
same partition count would put it.

One committed offset is one keyed record. The key names the group, topic and
partition (so compaction keeps exactly the latest commit of each); the value holds the
offset, the client's metadata string and the commit time. A record with a null value
(a tombstone) deletes the commit. Keys and values are compact, key-sorted JSON so the
same key always has the same bytes — compaction compares key bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

KEY_VERSION = 1


def java_string_hashcode(text: str) -> int:
    """Java's ``String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, as int32."""
    units = text.encode("utf-16-be")
    value = 0
    for index in range(0, len(units), 2):
        value = (31 * value + (units[index] << 8 | units[index + 1])) & 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def kafka_abs(value: int) -> int:
    """Kafka's ``Utils.abs``: ``Integer.MIN_VALUE`` maps to 0 rather than overflowing."""
    return 0 if value == -(1 << 31) else abs(value)


def partition_for_group(group_id: str, partitions_count: int) -> int:
    return kafka_abs(java_string_hashcode(group_id)) % partitions_count


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group_id: str
    topic: str
    partition: int

    def encode(self) -> bytes:
        document = {"v": KEY_VERSION, "group": self.group_id, "topic": self.topic, "partition": self.partition}
        return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, raw: bytes) -> OffsetKey | None:
        """None for keys of other record types or versions (skipped on replay, never an error)."""
        try:
            document = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            return None
        if not isinstance(document, dict) or document.get("v") != KEY_VERSION:
            return None
        return cls(str(document["group"]), str(document["topic"]), int(document["partition"]))


@dataclass(frozen=True, slots=True)
class OffsetValue:
    offset: int
    metadata: str
    commit_timestamp_ms: int

    def encode(self) -> bytes:
        document = {"offset": self.offset, "metadata": self.metadata, "commit_timestamp_ms": self.commit_timestamp_ms}
        return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, raw: bytes) -> OffsetValue:
        document = json.loads(raw)
        return cls(int(document["offset"]), str(document.get("metadata", "")), int(document["commit_timestamp_ms"]))
