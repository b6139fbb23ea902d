"""Store URL parsing: the two accepted forms and clear errors for everything else."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.cluster.store_url import open_store
from config.store_url import EtcdUrl, SqliteUrl, parse_store_url


def test_sqlite_url_with_absolute_path_and_retention() -> None:
    assert parse_store_url("sqlite:///var/lib/hw/meta.db") == SqliteUrl(Path("/var/lib/hw/meta.db"))
    assert parse_store_url("sqlite:///m.db?changelog_retention=50") == SqliteUrl(Path("/m.db"), 50)


def test_etcd_url_with_several_endpoints() -> None:
    assert parse_store_url("etcd://10.0.0.1:2379, etcd-2:2379,[::1]:2379") == EtcdUrl(
        [("10.0.0.1", 2379), ("etcd-2", 2379), ("::1", 2379)]
    )


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("postgres://db/meta", "unknown scheme 'postgres'"),
        ("/var/lib/meta.db", "no scheme"),
        ("sqlite://meta.db", "must be absolute"),
        ("sqlite:///var/lib/", "directory"),
        ("sqlite:///m.db?retention=5", "unknown option"),
        ("sqlite:///m.db?changelog_retention=0", "positive integer"),
        ("etcd://host", "not host:port"),
        ("etcd://host:99999", "not host:port"),
        ("etcd://a:1,,b:2", "not host:port"),
    ],
)
async def test_anything_else_is_a_value_error_naming_the_accepted_forms(url: str, reason: str) -> None:
    with pytest.raises(ValueError, match="expected sqlite:///abs/path") as raised:
        await open_store(url)
    assert reason in str(raised.value)
