"""The Kafka-protocol listener: a second front door onto the same node operations.

Kafka clients (librdkafka and its bindings, kafka-python, aiokafka, kcat) reach a
broker here instead of over HTTP. Nothing behind this door is a copy: every request
is translated into calls to the node's pieces (produce, fetch, offsets, metadata), so the
high-watermark rule, acks, fencing and idempotence are the node's, whichever door a
request came through. Message shapes come from ``kio`` (generated from Kafka's own
JSON message schemas); record batches pass through as the bytes the client sent or
the log holds, never re-encoded.

Modules: ``framing`` (size-prefixed frames, pure), ``codec`` (request and response
headers, pure), ``shapes`` (a response of any version from kio's classes), ``errors``
(highwater error -> Kafka error code, pure), ``fencing`` (the leader-epoch check,
pure), ``apis`` (the one table of supported APIs and versions), ``context`` (what a
handler gets: ``KafkaNode``, the part of the node it may call), ``dispatch`` (decode,
route, encode one frame), one module per API group (``api_versions``, ``metadata``,
``produce``, ``fetch``, ``offsets``, ``producer_ids``, ``admin``, ``describe_configs``
(labelled by the pure ``broker.topics.config_entries``), ``alter_configs`` (IncrementalAlterConfigs and
AlterConfigs through the controller gateway's one alter), ``groups`` and
``group_offsets`` for consumer groups),
and ``listener`` (the asyncio server).

Security (the HTTP door's users, ACLs and quotas; docs/security.md): ``sasl`` (the
PLAIN and SCRAM-SHA-512 server mechanisms, pure), ``authn`` (one ``Session`` per
connection, the pre-authentication gate, SaslHandshake and SaslAuthenticate),
``authz`` (authorization) and ``guard`` (runs a handler as the connection's principal:
per-topic checks of the first step's APIs, quotas and ``throttle_time_ms``).

Authorizing a new API: a handler calls ``authz.authorized(context.node, operation,
resource)`` — the one check, against the connection's principal (``authn.SESSION``),
audited when it refuses — and answers the refusal in its own response with Kafka's
error code for that resource type (``TOPIC_AUTHORIZATION_FAILED``,
``GROUP_AUTHORIZATION_FAILED``, ``CLUSTER_AUTHORIZATION_FAILED``), exactly where the
HTTP API's route would answer 403. An API whose request lists topics the way Produce
or Fetch does can instead get a row in ``authz.RULES``.
"""
