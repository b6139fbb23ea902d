"""Settings of the producer and consumer clients, with Kafka's defaults and names.

Each reads its own environment prefix (``HIGHWATER_PRODUCER_ACKS=1``,
``HIGHWATER_CONSUMER_GROUP_ID=billing``); keyword arguments win over the environment.
The cross-field rules are Kafka's, enforced at construction so a misconfigured client
fails when it is built instead of misbehaving under load:

* idempotence needs ``acks="all"`` and at most 5 requests in flight per connection
  (the broker remembers the last 5 batches per producer);
* ``delivery_timeout_ms >= linger_ms + request_timeout_ms``;
* a consumer heartbeats several times per session: ``heartbeat_interval_ms < session_timeout_ms``.

Both take the security options every client shares (``ClientSecuritySettings``):
``username``/``password`` (HTTP Basic; the password is a ``SecretStr``, so it never shows
in a repr, a log line or a validation error) and ``ssl_ca_file``/``ssl_cert_file``/
``ssl_key_file`` for ``https://`` brokers (``HIGHWATER_PRODUCER_PASSWORD``,
``HIGHWATER_CONSUMER_SSL_CA_FILE``...).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from config.topic import MIB
from config.variables import CONSUMER_PREFIX, PRODUCER_PREFIX

DEFAULT_BOOTSTRAP_SERVERS = "http://127.0.0.1:9092"

# The meanings both clients share, written once.
_SERVERS_MEANING = (
    "comma-separated broker URLs to start from; Producer and Consumer take it as their first argument, "
    "servers (a string or a list of URLs)"
)
_CLIENT_ID_MEANING = "sent as the User-Agent header of every request"
_REQUEST_TIMEOUT_MEANING = "how long one request may wait for the broker's answer"
_RETRY_BACKOFF_MEANING = "pause before a failed request is retried"


def _split_servers(servers: str) -> list[str]:
    return [server.strip().rstrip("/") for server in servers.split(",") if server.strip()]


def _check_servers(servers: str) -> str:
    urls = _split_servers(servers)
    if not urls:
        raise ValueError("must name at least one broker URL")
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"{url!r} must start with http:// or https://")
    return servers


class ClientSecuritySettings(BaseSettings):
    """Credentials and TLS files, named as ``ClusterClient``'s keyword arguments (``security_options``).

    Validation errors leave the input out (``hide_input_in_errors``, inherited by both
    clients' settings): a rejected settings dict may hold the password.
    """

    model_config = SettingsConfigDict(hide_input_in_errors=True)

    username: str | None = Field(None, min_length=1, description="user for HTTP Basic authentication")
    password: SecretStr | None = Field(None, description="password of username")
    ssl_ca_file: Path | None = Field(None, description="PEM CA bundle verifying https brokers; default: the system's")
    ssl_cert_file: Path | None = Field(None, description="PEM client certificate (mTLS)")
    ssl_key_file: Path | None = Field(None, description="PEM private key of ssl_cert_file")

    @model_validator(mode="after")
    def _pairs(self) -> ClientSecuritySettings:
        if (self.username is None) != (self.password is None):
            raise ValueError("username and password go together")
        if self.ssl_key_file is not None and self.ssl_cert_file is None:
            raise ValueError("ssl_key_file needs ssl_cert_file")
        return self

    def security_options(self) -> dict[str, Any]:
        """The ``ClusterClient`` keyword arguments; the only place the password is unwrapped."""
        return {
            "username": self.username,
            "password": None if self.password is None else self.password.get_secret_value(),
            "ssl_ca_file": self.ssl_ca_file,
            "ssl_cert_file": self.ssl_cert_file,
            "ssl_key_file": self.ssl_key_file,
        }


class ProducerSettings(ClientSecuritySettings):
    """Kafka producer semantics: batching by ``linger_ms``/``batch_size``, retries until ``delivery_timeout_ms``."""

    model_config = SettingsConfigDict(env_prefix=PRODUCER_PREFIX, extra="forbid", validate_default=True)

    bootstrap_servers: str = Field(DEFAULT_BOOTSTRAP_SERVERS, description=_SERVERS_MEANING)
    client_id: str = Field("highwater-producer", description=_CLIENT_ID_MEANING)
    acks: Literal["0", "1", "all"] = Field(
        "all",
        description=(
            "when the broker answers a produce: 0 before the append (fire and forget); 1 after the leader's "
            "append; all once every in-sync replica has the batch and the ISR holds min.insync.replicas"
        ),
    )
    linger_ms: int = Field(5, ge=0, description="wait this long for more records before sending a batch")
    batch_size: int = Field(16_384, ge=1, description="target bytes of one partition's batch")
    buffer_memory: int = Field(32 * MIB, ge=1, description="bytes of unsent records before send() waits")
    max_block_ms: int = Field(60_000, ge=0, description="how long send() waits for buffer space")
    max_request_size: int = Field(MIB, ge=1, description="largest request (and so batch) sent")
    max_queue_ms: int | None = Field(
        100,
        ge=0,
        description=(
            "send() also waits while the unacknowledged bytes would take longer than this to drain at the "
            "measured acknowledgement rate, or its partition's oldest unacknowledged batch is older than "
            "linger_ms plus this: under sustained overload records wait about this long for their "
            "acknowledgement, not seconds; None: only buffer_memory bounds what is outstanding"
        ),
    )
    compression: Literal["none", "gzip", "lz4", "zstd"] = Field(
        "none", description="codec the producer compresses each batch with; the broker stores batches as sent"
    )
    enable_idempotence: bool = Field(
        True,
        description=(
            "a retried batch is appended once (producer id, epoch and sequence numbers); needs acks=all; "
            "Producer turns it off when acks other than all is given without it"
        ),
    )
    max_in_flight_requests_per_connection: int = Field(
        5, ge=1, description="unacknowledged produce requests per broker; at most 5 with enable_idempotence"
    )
    transactional_id: str | None = Field(
        None,
        min_length=1,
        description=(
            "makes the producer transactional: begin_transaction/commit_transaction/abort_transaction, and a new "
            "producer with the same id fences this one; needs enable_idempotence"
        ),
    )
    transaction_timeout_ms: int = Field(
        60_000, ge=1, description="the coordinator aborts a transaction still open this long after it began"
    )
    request_timeout_ms: int = Field(30_000, ge=1, description=_REQUEST_TIMEOUT_MEANING)
    delivery_timeout_ms: int = Field(120_000, ge=1, description="give up on a record this long after send()")
    retry_backoff_ms: int = Field(100, ge=0, description=_RETRY_BACKOFF_MEANING)
    metadata_max_age_ms: int = Field(300_000, ge=0, description="refresh partition leaders at least this often")
    unresponsive_backoff_ms: int = Field(
        30_000, ge=0, description="ask a broker that gave no answer after all others for this long"
    )

    @field_validator("acks", mode="before")
    @classmethod
    def _acks_as_text(cls, value: Any) -> Any:
        return str(value).lower() if isinstance(value, (int, str)) and not isinstance(value, bool) else value

    @field_validator("bootstrap_servers")
    @classmethod
    def _urls(cls, value: str) -> str:
        return _check_servers(value)

    @model_validator(mode="after")
    def _kafka_rules(self) -> ProducerSettings:
        if self.enable_idempotence and self.acks != "all":
            raise ValueError(f"enable_idempotence needs acks='all' (got acks={self.acks!r})")
        if self.transactional_id is not None and not self.enable_idempotence:
            raise ValueError("transactional_id needs enable_idempotence (and so acks='all')")
        if self.enable_idempotence and self.max_in_flight_requests_per_connection > 5:
            raise ValueError("enable_idempotence needs max_in_flight_requests_per_connection <= 5")
        if self.delivery_timeout_ms < self.linger_ms + self.request_timeout_ms:
            raise ValueError("delivery_timeout_ms must be >= linger_ms + request_timeout_ms")
        return self

    @property
    def bootstrap_urls(self) -> list[str]:
        return _split_servers(self.bootstrap_servers)


class ConsumerSettings(ClientSecuritySettings):
    """Kafka consumer semantics: positions per partition, optional group with auto-commit."""

    model_config = SettingsConfigDict(env_prefix=CONSUMER_PREFIX, extra="forbid", validate_default=True)

    bootstrap_servers: str = Field(DEFAULT_BOOTSTRAP_SERVERS, description=_SERVERS_MEANING)
    client_id: str = Field("highwater-consumer", description=_CLIENT_ID_MEANING)
    group_id: str | None = Field(None, description="consumer group; None = manual assignment, no commits")
    auto_offset_reset: Literal["earliest", "latest", "none"] = Field(
        "latest",
        description=(
            "where to start in a partition without a committed offset, or when the position is out of range: "
            "earliest, latest, or none (NoOffsetForPartitionError: seek first)"
        ),
    )
    enable_auto_commit: bool = Field(
        True, description="with a group_id, commit the positions of records handed out every auto_commit_interval_ms"
    )
    auto_commit_interval_ms: int = Field(5000, ge=1, description="period of the automatic commits")
    isolation_level: Literal["read_uncommitted", "read_committed"] = Field(
        "read_uncommitted",
        description=(
            "read_committed: read up to the last stable offset and never an aborted transaction's record "
            "(Kafka's isolation.level)"
        ),
    )
    fetch_max_bytes: int = Field(50 * MIB, ge=1, description="bytes of one fetch across partitions")
    max_partition_fetch_bytes: int = Field(MIB, ge=1, description="bytes per partition in one fetch")
    fetch_max_wait_ms: int = Field(500, ge=0, description="long-poll time when no data is ready")
    max_poll_records: int = Field(500, ge=1, description="most records one poll returns")
    session_timeout_ms: int = Field(
        45_000, ge=100, le=3_600_000, description="the coordinator expels a member silent this long"
    )
    heartbeat_interval_ms: int = Field(
        3000, ge=1, description="heartbeat period until the coordinator names its own; less than session_timeout_ms"
    )
    max_poll_interval_ms: int = Field(
        300_000, ge=1, le=3_600_000, description="rebalance timeout: how long a revocation may take"
    )
    request_timeout_ms: int = Field(
        30_000, ge=1, description=_REQUEST_TIMEOUT_MEANING + "; greater than fetch_max_wait_ms"
    )
    retry_backoff_ms: int = Field(100, ge=0, description=_RETRY_BACKOFF_MEANING)
    metadata_max_age_ms: int = Field(300_000, ge=0, description="refresh partition leaders at least this often")
    unresponsive_backoff_ms: int = Field(
        30_000, ge=0, description="ask a broker that gave no answer after all others for this long"
    )

    @field_validator("bootstrap_servers")
    @classmethod
    def _urls(cls, value: str) -> str:
        return _check_servers(value)

    @model_validator(mode="after")
    def _kafka_rules(self) -> ConsumerSettings:
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError("heartbeat_interval_ms must be less than session_timeout_ms")
        if self.request_timeout_ms <= self.fetch_max_wait_ms:
            raise ValueError("request_timeout_ms must be greater than fetch_max_wait_ms")
        return self

    @property
    def bootstrap_urls(self) -> list[str]:
        return _split_servers(self.bootstrap_servers)
