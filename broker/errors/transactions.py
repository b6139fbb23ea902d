"""Errors of transactions (KIP-98, KIP-890), named as Kafka names them.

``INVALID_TXN_STATE`` is what a partition leader answers a transactional write it cannot
tie to an ongoing transaction (KIP-890's verification: nothing is written), and what a
marker that would end a later transaction than its own gets; ``INVALID_RECORD`` is a
produce that carries a control batch, which only a partition leader may write.
"""

from __future__ import annotations

from broker.errors import HighwaterError


class InvalidTxnState(HighwaterError):
    """The producer's transaction is not in a state that allows this request; nothing was written."""

    name = "INVALID_TXN_STATE"
    error_code = 40920
    http_status = 409


class InvalidRecord(HighwaterError):
    """A produced batch the broker refuses whole for what it is, not for its bytes (a control batch)."""

    name = "INVALID_RECORD"
    error_code = 40007
    http_status = 400
