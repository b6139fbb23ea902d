"""Consumer groups: the coordinator on ``__consumer_offsets``, KIP-848 membership, lag and health.

Pure parts (``assignors``, ``membership``, ``classic`` (Kafka's classic JoinGroup/SyncGroup
protocol, for Kafka clients), ``lag_status``, ``offsets_records``, ``shard``)
are unit-tested without a broker; ``coordinator`` and ``lag`` drive them from the
broker they run in, seen through ``host.GroupHost``; the HTTP routes live in
``broker.server.routes_groups``.
"""
