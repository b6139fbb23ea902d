"""Structured logs: JSON lines off a terminal, readable lines on one, stdlib logs routed through."""

from __future__ import annotations

import io
import json
import logging
import os

import pytest
import structlog

from broker.client.library_log import library_logger
from broker.logging_setup import configure_logging, resolve_format

pytestmark = pytest.mark.usefixtures("restored_logging")


def json_lines(stream: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_events_are_one_json_object_per_line_off_a_terminal() -> None:
    stream = io.StringIO()
    configure_logging("info", "auto", stream)
    log = structlog.get_logger("broker.replica_io.partition")
    log.info("partition.high_watermark_advanced", topic="orders", partition=2, high_watermark=41)
    log.debug("partition.fetch", topic="orders")
    [event] = json_lines(stream)
    assert event["event"] == "partition.high_watermark_advanced"
    assert (event["topic"], event["partition"], event["high_watermark"]) == ("orders", 2, 41)
    assert event["level"] == "info" and event["logger"] == "broker.replica_io.partition"
    assert event["timestamp"].endswith("Z")


def test_stdlib_logs_pass_through_at_warning_and_above() -> None:
    stream = io.StringIO()
    configure_logging("debug", "json", stream)
    access = logging.getLogger("aiohttp.access")
    access.info("GET /v3/clusters 200")
    access.warning("slow client %s", "127.0.0.1")
    [event] = json_lines(stream)
    assert event == {**event, "event": "slow client 127.0.0.1", "level": "warning", "logger": "aiohttp.access"}


def test_debug_level_enables_our_debug_events() -> None:
    stream = io.StringIO()
    configure_logging("debug", "json", stream)
    structlog.get_logger("broker.storage").debug("segment.rolled", base_offset=100)
    assert json_lines(stream)[0]["base_offset"] == 100


def test_client_library_events_follow_the_broker_level() -> None:
    stream = io.StringIO()
    configure_logging("debug", "json", stream)
    library_logger("producer.sender").debug("producer_id_assigned producer_id=%d", 7)
    [event] = json_lines(stream)
    assert event == {
        **event,
        "event": "producer_id_assigned producer_id=7",
        "level": "debug",
        "logger": "highwater.producer.sender",
    }


def test_exceptions_stay_on_one_json_line() -> None:
    stream = io.StringIO()
    configure_logging("info", "json", stream)
    try:
        raise ValueError("boom")
    except ValueError:
        structlog.get_logger("broker.node").exception("node.failed")
    [event] = json_lines(stream)
    assert "ValueError: boom" in event["exception"]


def test_console_rendering_on_a_real_terminal() -> None:
    controller_fd, terminal_fd = os.openpty()
    with os.fdopen(terminal_fd, "w") as terminal, os.fdopen(controller_fd, "rb", buffering=0) as controller:
        assert resolve_format("auto", terminal) == "console"
        configure_logging("info", "auto", terminal)
        structlog.get_logger("broker.node").info("broker.listening", url="http://127.0.0.1:9092")
        terminal.flush()
        output = controller.read(4096).decode()
    assert "broker.listening" in output and "url" in output and "http://127.0.0.1:9092" in output
    assert not output.lstrip().startswith("{")


def test_auto_means_json_for_pipes_and_files() -> None:
    assert resolve_format("auto", io.StringIO()) == "json"
    assert resolve_format("console", io.StringIO()) == "console"
