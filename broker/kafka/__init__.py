"""The Kafka-protocol listener: a second front door onto the same node operations.

Kafka clients (librdkafka and its bindings, kafka-python, aiokafka, kcat) reach a
broker here instead of over HTTP. Nothing behind this door is a copy: every request
is translated into ``BrokerNode`` calls (produce, fetch, offsets, metadata), so the
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
with the pure ``config_entries``), and ``listener`` (the asyncio server).
"""
