"""A broker's identity on disk: the data directory's lock and the cluster it belongs to.

Invariant: one broker process per data directory, and a data directory serves one
cluster for its whole life (``meta.properties`` pins it to the store's cluster id).
"""

from __future__ import annotations

import fcntl
from pathlib import Path
from typing import IO

from broker.cluster.records import CLUSTER_ID_KEY
from broker.cluster.store import MetadataStore
from broker.node.meta_properties import (
    DataDirMismatch,
    MetaProperties,
    ensure_meta_properties,
    random_kafka_uuid,
    read_meta_properties,
)
from config.broker import BrokerSettings

LOCK_FILE = ".lock"


def lock_data_dir(data_dir: Path) -> IO[str]:
    """One process per data directory: two brokers writing one log would corrupt it."""
    handle = open(data_dir / LOCK_FILE, "w")  # noqa: SIM115 - the lock is held for the broker's lifetime
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise DataDirMismatch(f"data directory {data_dir} is in use by another broker process") from None
    return handle


async def load_identity(store: MetadataStore, data_dir: Path, settings: BrokerSettings) -> MetaProperties:
    """The cluster id lives in the store; ``meta.properties`` pins this data dir to it."""
    kv = await store.get(CLUSTER_ID_KEY)
    if kv is None:
        existing = read_meta_properties(data_dir)
        proposed = settings.cluster_id or (existing.cluster_id if existing else random_kafka_uuid())
        await store.put_if(CLUSTER_ID_KEY, proposed.encode(), 0)
        kv = await store.get(CLUSTER_ID_KEY)
        assert kv is not None  # the cluster id key is never deleted
    return ensure_meta_properties(data_dir, settings.node_id, kv.value.decode())
