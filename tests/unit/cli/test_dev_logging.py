"""``highwater dev``'s own process logs nothing to stdout: library and store events stay out of its summary.

Unconfigured, structlog prints every event to stdout: the sqlite store's
``sqlite_metadata_store_opened``/``closed`` once landed in the middle of dev's summary.
"""

from __future__ import annotations

import pytest
import structlog

from broker.cli.dev import quiet_library_logging

pytestmark = pytest.mark.usefixtures("restored_logging")


def test_routine_events_are_dropped_and_warnings_go_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    quiet_library_logging()
    store_log = structlog.get_logger("broker.cluster.sqlite_store")
    store_log.info("sqlite_metadata_store_opened", path="/tmp/metadata.db")
    store_log.warning("sqlite_busy", retries=3)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "sqlite_metadata_store_opened" not in captured.err
    assert "sqlite_busy" in captured.err
