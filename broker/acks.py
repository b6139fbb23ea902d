"""How much of a produce must be done before the producer is answered (Kafka's ``acks``).

Parsed once where it arrives (HTTP query, CLI flag, producer setting, bench option),
then carried inward as ``Acks``, so the broker compares members, never spellings.
A member's value is its spelling on the wire (``?acks=all``). The edges keep their own
leniency: ``parse`` is the HTTP API's (any case, and ``-1``, Kafka's number for all);
the command-line flags accept exactly the values, through ``Acks(text)``; the producer
takes the spelling its settings validated (``config.client``, which, being a leaf
itself, does not import this module).

This module imports nothing from the project, so any layer may use it.
"""

from __future__ import annotations

from enum import Enum

KAFKA_NUMBER_FOR_ALL = "-1"
"""Kafka's clients send ``acks=-1`` for ``all``."""


class Acks(Enum):
    ZERO = "0"
    """Answer before the append (fire-and-forget): no offset, no error once accepted."""
    ONE = "1"
    """Answer once the leader has the batch in the OS; lost if the leader dies before followers copy it."""
    ALL = "all"
    """Answer once every in-sync replica has the batch; refused up front when the ISR is below min ISR."""

    @classmethod
    def parse(cls, text: str) -> Acks:
        """Kafka's spellings, in any case: ``0``, ``1``, ``all`` or ``-1`` (all). ``ValueError`` otherwise."""
        spelling = text.lower()
        return cls.ALL if spelling == KAFKA_NUMBER_FOR_ALL else cls(spelling)
