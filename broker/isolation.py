"""Which records a reader may see (Kafka's ``isolation.level``).

``read_uncommitted`` (the default, as Kafka's) reads up to the high watermark and sees
every data record, aborted transactions' included. ``read_committed`` reads up to the
last stable offset (below it every transaction is decided) and is told which
transactions aborted, so their records are dropped (``broker.record.committed``).
Parsed once at the edge (HTTP query, consumer setting, Kafka's ``isolation_level``
byte), carried inward as ``Isolation``. Imports nothing from the project.
"""

from __future__ import annotations

from enum import Enum


class Isolation(Enum):
    READ_UNCOMMITTED = "read_uncommitted"
    READ_COMMITTED = "read_committed"

    @property
    def committed(self) -> bool:
        return self is Isolation.READ_COMMITTED

    def visible_end(self, high_watermark: int, last_stable_offset: int) -> int:
        """Where this reader stops: the high watermark, or the last stable offset for ``read_committed``."""
        return last_stable_offset if self is Isolation.READ_COMMITTED else high_watermark

    @classmethod
    def parse(cls, text: str) -> Isolation:
        """Either spelling, in any case; ``ValueError`` naming the choices otherwise."""
        try:
            return cls(text.lower())
        except ValueError:
            raise ValueError(f"isolation must be read_uncommitted or read_committed, got {text!r}") from None

    @classmethod
    def from_kafka(cls, isolation_level: int) -> Isolation:
        """Kafka's Fetch and ListOffsets byte: 1 is read_committed, anything else read_uncommitted."""
        return cls.READ_COMMITTED if isolation_level == 1 else cls.READ_UNCOMMITTED
