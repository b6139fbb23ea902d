"""Who is asking and what they may do: principals, credentials, ACLs, the authorizer, quotas.

Pure code (no asyncio, no files, no clock: time enters as ``now_ms``), so the HTTP door
and the Kafka listener ask the same questions and get the same answers. The store-backed
copy of users, ACLs and quotas lives in ``broker.cluster``; the middleware in ``broker.server``.
"""
