"""``meta.properties``: which cluster and which broker id a data directory belongs to.

Kafka writes the same file. It stops a data directory from being served by a broker
with another id, or joined to another cluster, which would mix two histories of the
same partitions.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from pathlib import Path

from broker.storage.checkpoint import write_atomically

META_PROPERTIES = "meta.properties"


class DataDirMismatch(Exception):
    """The data directory belongs to another broker id or another cluster."""


@dataclass(frozen=True)
class MetaProperties:
    cluster_id: str
    node_id: int
    directory_id: str


def random_kafka_uuid() -> str:
    """A random 22-character id, URL-safe base64 of a UUID, as Kafka's ``Uuid.randomUuid``.

    Also names a data directory (``directory.id``, as Kafka's KIP-858)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def read_meta_properties(data_dir: Path) -> MetaProperties | None:
    path = data_dir / META_PROPERTIES
    if not path.exists():
        return None
    values: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            name, _, value = line.partition("=")
            values[name.strip()] = value.strip()
    try:
        return MetaProperties(values["cluster.id"], int(values["node.id"]), values.get("directory.id", ""))
    except (KeyError, ValueError) as error:
        raise DataDirMismatch(f"{path} is damaged: {error!r}; restore it or move the data directory away") from error


def ensure_meta_properties(data_dir: Path, node_id: int, cluster_id: str) -> MetaProperties:
    """Write the file on first start; afterwards refuse a different node id or cluster id.

    A file from before ``directory.id`` existed gets one added.
    """
    existing = read_meta_properties(data_dir)
    if existing is None:
        return _write(data_dir, MetaProperties(cluster_id, node_id, random_kafka_uuid()))
    if existing.node_id != node_id:
        raise DataDirMismatch(f"data directory {data_dir} belongs to broker {existing.node_id}, not {node_id}")
    if existing.cluster_id != cluster_id:
        raise DataDirMismatch(
            f"data directory {data_dir} belongs to cluster {existing.cluster_id}, "
            f"but the metadata store holds cluster {cluster_id}"
        )
    if not existing.directory_id:
        return _write(data_dir, MetaProperties(cluster_id, node_id, random_kafka_uuid()))
    return existing


def _write(data_dir: Path, meta: MetaProperties) -> MetaProperties:
    content = f"version=1\ncluster.id={meta.cluster_id}\nnode.id={meta.node_id}\ndirectory.id={meta.directory_id}\n"
    write_atomically(data_dir / META_PROPERTIES, content.encode())
    return meta
