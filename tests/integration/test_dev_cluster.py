"""``highwater dev`` (what ``make run`` starts): three real brokers, the demo topic, examples that work.

The printed curl examples are run as printed (their URLs), SIGTERM stops every broker
with exit code 0, and a second run reuses the data of the first. A broker that cannot
start is reported in one line, never a traceback.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.brokers import free_port_run

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[2]
READY_LINE = "Press Ctrl-C to stop the cluster."


def _start_dev(directory: Path, base_port: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "broker.cli", "dev", "--brokers", "3", "--dir", str(directory),
         "--base-port", str(base_port)],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _read_until_ready(process: subprocess.Popen, timeout_s: float = 90.0) -> str:
    deadline = time.monotonic() + timeout_s
    lines = []
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            raise AssertionError(f"dev exited early:\n{''.join(lines)}\n{process.stderr.read()}")
        lines.append(line)
        if READY_LINE in line:
            return "".join(lines)
    raise AssertionError("dev did not get ready:\n" + "".join(lines))


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def _all_records(read_url: str) -> list[tuple[int, int, str]]:
    """(partition, offset, value) of the demo topic, through the printed read example of each partition."""
    return [
        (partition, record["offset"], record["value"]["data"])
        for partition in range(3)
        for record in _get(read_url.replace("/partitions/0/", f"/partitions/{partition}/"))["data"]
    ]


def _stop(process: subprocess.Popen) -> int:
    process.send_signal(signal.SIGTERM)
    return process.wait(60)


def test_dev_runs_three_brokers_with_working_examples_and_reuses_its_data(tmp_path: Path) -> None:
    base_port = free_port_run(3)
    directory = tmp_path / "dev"
    process = _start_dev(directory, base_port)
    try:
        printed = _read_until_ready(process)
        for node_id in (1, 2, 3):
            assert f"broker {node_id}: http://127.0.0.1:{base_port + node_id - 1}" in printed
        read_url = re.search(r"curl -s '([^']*/partitions/0/records\?offset=0&format=string)'", printed).group(1)
        partitions_url = re.search(r"curl -s '([^']*/topics/demo/partitions)'", printed).group(1)
        first_records = _all_records(read_url)
        assert len(first_records) == 3, "the demo's three acks=all records are readable through the example"
        partitions = _get(partitions_url)["data"]
        assert len(partitions) == 3 and all(len(p["replicas"]) == 3 for p in partitions)
    finally:
        assert _stop(process) == 0

    process = _start_dev(directory, base_port)
    try:
        _read_until_ready(process)
        again = _all_records(read_url)
        assert set(first_records) < set(again), "the first run's records are kept where they were"
        assert len(again) == 6, "the second run's demo appended three more"
    finally:
        assert _stop(process) == 0


def test_a_broker_that_cannot_start_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    base_port = free_port_run(3)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", base_port))
        squatter.listen()
        completed = subprocess.run(
            [sys.executable, "-m", "broker.cli", "dev", "--brokers", "3", "--dir", str(tmp_path / "dev"),
             "--base-port", str(base_port)],
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=False,
        )
    assert completed.returncode != 0
    assert "Traceback" not in completed.stderr
    assert "highwater: broker 1 exited" in completed.stderr, completed.stderr
