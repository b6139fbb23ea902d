"""Schemathesis drives the whole published ``/openapi.json`` against a live 3-broker cluster.

Every phase runs (the document's examples, boundary coverage, fuzzing, and stateful
sequences over the links schemathesis infers, e.g. a created topic's name reused by the
calls that take one). Checks: no status >= 500, every status, content type and body
as documented, schema-valid requests accepted, schema-invalid ones refused; the few
exceptions are in ``schemathesis.toml``, each with its reason.

Deterministic: schemathesis' deterministic generation (no seed, no example database)
against a cluster with a fixed id, so a failure found once is found on every run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.brokers import REPO_ROOT
from tests.support.cluster import Cluster

pytestmark = [pytest.mark.fuzz, pytest.mark.integration]

CONFIG = Path(__file__).with_name("schemathesis.toml")
SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")


def test_published_api_conforms_and_never_answers_5xx(
    fuzz_cluster: Cluster, fuzz_examples: int, tmp_path: Path
) -> None:
    started = time.monotonic()
    run = subprocess.run(
        [
            str(SCHEMATHESIS),
            "--no-color",
            "--config-file",
            str(CONFIG),
            "run",
            f"{fuzz_cluster.url(1)}/openapi.json",
            "--max-examples",
            str(fuzz_examples),
            "--report",
            "junit",
            "--report-dir",
            str(tmp_path),
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        check=False,
    )
    generated = re.search(r"(\d+) generated", run.stdout)
    print(
        f"\nFIGURE schemathesis examples_per_operation={fuzz_examples} "
        f"generated={generated.group(1) if generated else '?'} run_s={time.monotonic() - started:.1f}"
    )
    assert run.returncode == 0, run.stdout[-20000:] + run.stderr[-5000:]
    assert generated is not None and int(generated.group(1)) > 0, run.stdout[-5000:]
