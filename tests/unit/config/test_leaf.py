"""Configuration is a leaf: the broker imports it, never the reverse.

Checked in a fresh interpreter, since this test process has long since imported the
broker's modules for other tests.
"""

from __future__ import annotations

import subprocess
import sys

LOAD_AND_LIST_CLUSTER_MODULES = """
import sys
from config.broker import load_broker_settings

load_broker_settings(metadata_store="etcd://127.0.0.1:2379")
print(sorted(name for name in sys.modules if name.startswith("broker.cluster")))
"""


def test_validating_a_metadata_store_url_loads_no_cluster_module() -> None:
    completed = subprocess.run(
        [sys.executable, "-c", LOAD_AND_LIST_CLUSTER_MODULES], capture_output=True, text=True, check=True
    )
    assert completed.stdout.strip() == "[]"
