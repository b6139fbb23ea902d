"""The ``highwater`` command as a test runs it: a subprocess from the repository root, its output as text."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping

from tests.support.brokers import REPO_ROOT

CLI_TIMEOUT_S = 60


def run_cli(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``highwater <args>`` with this interpreter; the exit code is the test's to check."""
    return subprocess.run(
        [sys.executable, "-m", "broker", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        env=None if env is None else dict(env),
        check=False,
    )
