"""meta.properties pins a data directory to one broker id and one cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.node.meta_properties import DataDirMismatch, ensure_meta_properties, read_meta_properties


def test_first_start_writes_ids_and_later_starts_keep_them(tmp_path: Path) -> None:
    first = ensure_meta_properties(tmp_path, 3, "cluster-a")
    assert first.directory_id
    assert ensure_meta_properties(tmp_path, 3, "cluster-a") == first == read_meta_properties(tmp_path)


def test_another_broker_id_or_cluster_is_refused(tmp_path: Path) -> None:
    ensure_meta_properties(tmp_path, 3, "cluster-a")
    with pytest.raises(DataDirMismatch, match="belongs to broker 3"):
        ensure_meta_properties(tmp_path, 4, "cluster-a")
    with pytest.raises(DataDirMismatch, match="belongs to cluster cluster-a"):
        ensure_meta_properties(tmp_path, 3, "cluster-b")


def test_a_file_without_directory_id_gets_one(tmp_path: Path) -> None:
    (tmp_path / "meta.properties").write_text("version=1\ncluster.id=cluster-a\nnode.id=3\n")
    meta = ensure_meta_properties(tmp_path, 3, "cluster-a")
    reread = read_meta_properties(tmp_path)
    assert reread is not None
    assert meta.directory_id and reread.directory_id == meta.directory_id
