"""The metadata store URL's two accepted forms, parsed without connecting.

* ``sqlite:///abs/path/to/file.db`` — the embedded single-host store (three slashes:
  an empty host, then an absolute path). Optional ``?changelog_retention=N``.
* ``etcd://host:port[,host:port...]`` — an etcd v3 cluster, endpoints tried in order.

Anything else is a ``ValueError`` naming the accepted forms. Settings validation
checks the URL here at load, and ``broker.cluster.store_url.open_store`` opens what
it names; this module imports nothing from the broker, so configuration stays a leaf.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs

ACCEPTED_FORMS = "sqlite:///abs/path/to/file.db or etcd://host:port[,host:port...]"


@dataclass(frozen=True)
class SqliteUrl:
    path: Path
    changelog_retention: int = 10_000


@dataclass(frozen=True)
class EtcdUrl:
    endpoints: list[tuple[str, int]]


def _invalid(url: str, reason: str) -> ValueError:
    return ValueError(f"invalid metadata store URL {url!r}: {reason}; expected {ACCEPTED_FORMS}")


def _parse_sqlite(url: str, rest: str) -> SqliteUrl:
    path_text, _, query = rest.partition("?")
    if not path_text.startswith("/") or path_text.startswith("//"):
        raise _invalid(url, "the sqlite path must be absolute (three slashes after 'sqlite:')")
    if path_text.endswith("/"):
        raise _invalid(url, "the sqlite path names a directory, not a file")
    options = parse_qs(query, strict_parsing=bool(query))
    unknown = set(options) - {"changelog_retention"}
    if unknown:
        raise _invalid(url, f"unknown option(s) {sorted(unknown)}")
    retention_text = options.get("changelog_retention", ["10000"])[-1]
    if not retention_text.isdigit() or int(retention_text) < 1:
        raise _invalid(url, "changelog_retention must be a positive integer")
    return SqliteUrl(path=Path(path_text), changelog_retention=int(retention_text))


def _parse_etcd(url: str, rest: str) -> EtcdUrl:
    endpoints: list[tuple[str, int]] = []
    for endpoint in rest.rstrip("/").split(","):
        host, separator, port_text = endpoint.strip().rpartition(":")
        if not separator or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise _invalid(url, f"endpoint {endpoint!r} is not host:port")
        endpoints.append((host.strip("[]"), int(port_text)))
    return EtcdUrl(endpoints=endpoints)


def parse_store_url(url: str) -> SqliteUrl | EtcdUrl:
    scheme, separator, rest = url.partition("://")
    if not separator:
        raise _invalid(url, "no scheme")
    if scheme == "sqlite":
        return _parse_sqlite(url, rest)
    if scheme == "etcd":
        return _parse_etcd(url, rest)
    raise _invalid(url, f"unknown scheme {scheme!r}")
