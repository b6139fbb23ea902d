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


class ProducerFenced(HighwaterError):
    """A newer incarnation of this transactional id (or the transaction timeout) has bumped the epoch: this
    producer is a zombie and must close."""

    name = "PRODUCER_FENCED"
    error_code = 40921
    http_status = 409


class InvalidProducerIdMapping(HighwaterError):
    """The producer id is not the one the coordinator holds for this transactional id."""

    name = "INVALID_PRODUCER_ID_MAPPING"
    error_code = 40922
    http_status = 409


class ConcurrentTransactions(HighwaterError):
    """The previous transaction of this transactional id is still being completed; retry shortly."""

    name = "CONCURRENT_TRANSACTIONS"
    error_code = 40923
    http_status = 409
    retriable = True


class InvalidTransactionTimeout(HighwaterError):
    """A transaction timeout outside 1 ms .. ``transaction_max_timeout_ms``."""

    name = "INVALID_TRANSACTION_TIMEOUT"
    error_code = 40008
    http_status = 400


class TransactionalIdNotFound(HighwaterError):
    """No producer was initialised with this transactional id (or it expired)."""

    name = "TRANSACTIONAL_ID_NOT_FOUND"
    error_code = 40420
    http_status = 404


class TransactionalIdAuthorizationFailed(HighwaterError):
    """The principal may not use this transactional id (WRITE, or DESCRIBE to describe it, on TRANSACTIONAL_ID)."""

    name = "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
    error_code = 40304
    http_status = 403
