"""Open a metadata store from its URL (forms and parsing: ``config.store_url``).

A malformed URL is a ``ValueError`` raised before any connection is attempted. Each
backend is imported only when used, so a sqlite deployment never loads grpc.
"""

from __future__ import annotations

from broker.cluster.store import MetadataStore
from config.store_url import SqliteUrl, parse_store_url


async def open_store(url: str) -> MetadataStore:
    """Parse ``url`` and open the store it names (connects / creates the file)."""
    parsed = parse_store_url(url)
    if isinstance(parsed, SqliteUrl):
        from broker.cluster.sqlite_store import SqliteMetadataStore

        return await SqliteMetadataStore.open(parsed.path, parsed.changelog_retention)
    from broker.cluster.etcd_store import EtcdMetadataStore

    return await EtcdMetadataStore.open(parsed.endpoints)
