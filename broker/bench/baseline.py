"""The reference: what Python and aiohttp alone reach on this machine, in the same run.

``python -m broker.bench.baseline --fd N --file F`` serves, on the listening socket it
inherits as file descriptor N (bound by the parent to a port the kernel picked, so no
other process can take the port between a choice and a bind), ``POST /append``, which
writes the request body to ``F`` (to the OS, no fsync, as an acks=1 broker does) and answers ``{}``: no parsing, no validation, no replication (and ``POST /echo``, which
only reads the body, for the lone-request latency reference). The load comes
from the same number of processes and tasks as the broker run, each task keeping
``IN_FLIGHT_PER_TASK`` requests outstanding (the producer's
``max_in_flight_requests_per_connection``), every body a real record batch of
``batch_size`` bytes made of records of ``record_size`` bytes; so records/s and MB/s
are directly comparable, and a broker figure divided by the baseline one says how
much of the Python + aiohttp ceiling the broker keeps.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from broker.bench.runner import Launch, ProcessGroup, RunResult, run_producers
from broker.bench.spec import STAMP, WorkloadSpec
from broker.bench.workloads import ProducerReport, quiet_logging, run_loop
from broker.listening import bind_listener
from broker.record.codec import RecordInput, encode_batch
from producer.batch import estimate_record_bytes

IN_FLIGHT_PER_TASK = 5
APPEND_PATH = "/append"
ECHO_PATH = "/echo"
"""Reads the body and answers ``{}``: the floor of one HTTP round trip through aiohttp (``broker.bench.latency``)."""


def build_app(path: Path) -> web.Application:
    """The append-only server: one open file, one write per request body."""
    app = web.Application(client_max_size=64 << 20)
    sink = open(path, "ab", buffering=0)  # noqa: SIM115 - open for the life of the app, closed on cleanup

    async def append(request: web.Request) -> web.Response:
        sink.write(await request.read())
        return web.json_response({})

    async def close_sink(_: web.Application) -> None:
        sink.close()

    async def ready(_: web.Request) -> web.Response:
        return web.json_response({})

    async def echo(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({})

    app.router.add_post(APPEND_PATH, append)
    app.router.add_post(ECHO_PATH, echo)
    app.router.add_get("/readyz", ready)
    app.on_cleanup.append(close_sink)
    return app


@contextlib.contextmanager
def baseline_server() -> Iterator[str]:
    """A baseline server process on a free loopback port, appending to a temporary file."""
    with tempfile.TemporaryDirectory(prefix="highwater-baseline-") as directory:
        with bind_listener("127.0.0.1", 0, "the baseline server") as listener:
            command = [
                sys.executable,
                "-m",
                "broker.bench.baseline",
                "--fd",
                str(listener.fileno()),
                "--file",
                str(Path(directory) / "appended.bin"),
            ]
            process = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(listener.fileno(),)
            )
            url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        try:
            asyncio.run(_wait_ready(url))
            yield url
        finally:
            process.terminate()
            process.wait(30)


async def _wait_ready(url: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    async with aiohttp.ClientSession() as session:
        while True:
            try:
                async with session.get(f"{url}/readyz") as reply:
                    if reply.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the baseline server at {url} was not ready after {timeout_s} s")
            await asyncio.sleep(0.05)


def batch_body(spec: WorkloadSpec) -> tuple[bytes, int]:
    """A record batch of about ``batch_size`` bytes as the producer would build it, and its record count."""
    value = STAMP.pack(0, 0) + b"v" * (spec.record_size_bytes - STAMP.size)
    records_per_body = max(1, spec.batch_size_bytes // estimate_record_bytes(None, value, []))
    body = encode_batch([RecordInput(None, value, (), None)] * records_per_body)
    return body, records_per_body


async def _post_loop(
    session: aiohttp.ClientSession,
    url: str,
    body: bytes,
    bodies: int | None,
    deadline_ns: int,
    latencies: list[tuple[int, int, int, int]],
    progress: Any,
    records_per_body: int,
) -> int:
    sent = 0
    while sent < bodies if bodies is not None else time.monotonic_ns() < deadline_ns:
        send_ns = time.monotonic_ns()
        async with session.post(url + APPEND_PATH, data=body) as reply:
            await reply.read()
            reply.raise_for_status()
        latencies.append((0, 0, send_ns, time.monotonic_ns()))
        sent += 1
        with progress.get_lock():
            progress.value += records_per_body
    return sent


async def _load(spec: WorkloadSpec, url: str, process_index: int, barrier: Any, progress: Any) -> ProducerReport:
    body, records_per_body = batch_body(spec)
    loops = spec.producers * IN_FLIGHT_PER_TASK
    connector = aiohttp.TCPConnector(limit=loops)
    async with aiohttp.ClientSession(connector=connector) as session:
        barrier.wait()
        started_ns = time.monotonic_ns()
        started_cpu_ns = time.process_time_ns()
        deadline_ns = started_ns + int((spec.duration_s or 0) * 1e9)
        samples: list[tuple[int, int, int, int]] = []
        shares = [_bodies_for_loop(spec, process_index, loop, loops, records_per_body) for loop in range(loops)]
        counts = await asyncio.gather(
            *(
                _post_loop(session, url, body, share, deadline_ns, samples, progress, records_per_body)
                for share in shares
            )
        )
        return ProducerReport(
            sum(counts) * records_per_body,
            started_ns,
            time.monotonic_ns(),
            samples,
            sum(counts),
            time.process_time_ns() - started_cpu_ns,
        )


def _bodies_for_loop(
    spec: WorkloadSpec, process_index: int, loop: int, loops: int, records_per_body: int
) -> int | None:
    if spec.count is None:
        return None
    total_bodies = -(-spec.count // records_per_body)
    share, remainder = divmod(total_bodies, loops * spec.processes)
    return share + (1 if process_index * loops + loop < remainder else 0)


def baseline_process(
    spec: WorkloadSpec, url: str, process_index: int, barrier: Any, progress: Any, results: Any
) -> None:
    quiet_logging()
    try:
        report = run_loop(_load(spec, url, process_index, barrier, progress))
    except Exception as error:  # noqa: BLE001 - the parent must hear of any failure, or it would wait forever
        barrier.abort()
        results.put(("error", process_index, f"baseline process {process_index}: {error!r}"))
        return
    results.put(("producer", process_index, report))


def run_baseline(spec: WorkloadSpec, url: str, quiet: bool = False) -> RunResult:
    """The produce workload of ``spec`` against the baseline server at ``url``; latencies are per request."""
    group = ProcessGroup(spec.processes)
    launches = [
        Launch("producer", baseline_process, (spec, url, index, group.barrier, group.produced, group.results))
        for index in range(spec.processes)
    ]
    return run_producers(spec, group, launches, "baseline", quiet)


def main() -> None:
    parser = argparse.ArgumentParser(description="the append-only aiohttp server of the baseline")
    parser.add_argument("--fd", type=int, required=True, help="an inherited listening socket")
    parser.add_argument("--file", type=Path, required=True)
    args = parser.parse_args()
    try:
        import uvloop
    except ImportError:
        loop = asyncio.new_event_loop()
    else:
        loop = uvloop.new_event_loop()
    listener = socket.socket(fileno=args.fd)
    web.run_app(build_app(args.file), sock=listener, print=None, access_log=None, loop=loop)


if __name__ == "__main__":
    main()
