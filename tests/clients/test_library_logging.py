"""The client libraries print nothing of their own: they log through stdlib ``logging``.

An application that configures no logging sees no output from producing, consuming and
committing; one that calls ``logging.basicConfig(level=DEBUG)`` gets the libraries'
events on stderr, under the ``highwater`` logger hierarchy. Each case runs a real
application process (``tests.clients.client_app``) against a real broker, because
what is pinned here is what lands on a user's terminal.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.clients.conftest import MakeTopic
from tests.support.brokers import REPO_ROOT

pytestmark = pytest.mark.integration


def _run_app(url: str, topic: str, *flags: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "tests.clients.client_app", url, topic, f"{topic}-group", *flags]
    finished = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert finished.returncode == 0, finished.stderr
    return finished


def test_an_application_that_configures_no_logging_sees_no_output(url: str, make_topic: MakeTopic) -> None:
    finished = _run_app(url, make_topic(partitions=2))
    assert finished.stdout == ""
    assert finished.stderr == ""


def test_debug_logging_configured_by_the_application_shows_the_events_on_stderr(
    url: str, make_topic: MakeTopic
) -> None:
    finished = _run_app(url, make_topic(partitions=2), "--log-debug")
    assert finished.stdout == ""
    assert "Logging error" not in finished.stderr, "every event's arguments fit its format"
    assert "DEBUG:highwater.broker.client.http:metadata_refreshed" in finished.stderr
    assert "DEBUG:highwater.consumer.commits:offsets_committed" in finished.stderr
