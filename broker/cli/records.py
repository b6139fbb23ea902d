"""``highwater produce`` and ``highwater consume``: records from stdin, records to stdout.

``produce`` sends one record per input line in ``records:batch`` requests of up to
``--batch-size`` entries, one request at a time so the records of a partition keep
their input order. ``consume`` reads partitions from a starting offset; without
``--follow`` it stops at the high watermark each partition had when it started
(records above it did not exist yet), with ``--follow`` it long-polls for more.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Annotated, Literal, TextIO

import typer
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from broker.acks import Acks
from broker.cli.common import (
    DEFAULT_SERVER,
    ServerOption,
    fail,
    run_client,
    security_options,
    stderr_console,
)
from broker.client.admin import AdminClient
from broker.client.security import ClientSecurity

MAX_BATCH_ENTRIES = 1000
FOLLOW_POLL_MS = 1000
READ_CHUNK_RECORDS = 1000


@dataclass
class ProduceSummary:
    records: int = 0
    failures: int = 0
    partitions: set[int] = field(default_factory=set)
    first_failure: str | None = None


def read_entries(
    lines: Iterable[str], key: str | None, key_separator: str | None, partition: int | None
) -> Iterator[dict]:
    """One ``records:batch`` entry per line (newline removed), keyed by ``--key`` or the separator."""
    for line in lines:
        value = line.rstrip("\r\n")
        record_key = key
        if key_separator is not None and key_separator in value:
            record_key, value = value.split(key_separator, 1)
        entry: dict = {"value": {"type": "STRING", "data": value}}
        if record_key is not None:
            entry["key"] = {"type": "STRING", "data": record_key}
        if partition is not None:
            entry["partition_id"] = partition
        yield entry


def batched(entries: Iterator[dict], size: int) -> Iterator[list[dict]]:
    batch: list[dict] = []
    for entry in entries:
        batch.append(entry)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _record_result(summary: ProduceSummary, result: dict) -> None:
    for success in result.get("successes", []):
        summary.records += 1
        summary.partitions.add(success.get("partition_id"))
    for failure in result.get("failures", []):
        summary.failures += 1
        if summary.first_failure is None:
            summary.first_failure = f"{failure.get('error_code')}: {failure.get('message')}"


async def produce_lines(
    client: AdminClient, topic: str, batches: Iterator[list[dict]], acks: Acks, progress: Progress | None
) -> ProduceSummary:
    summary = ProduceSummary()
    task = progress.add_task(f"producing to {topic}", total=None) if progress else None
    for batch in batches:
        _record_result(summary, await client.produce_batch(topic, batch, acks))
        if progress is not None and task is not None:
            progress.update(task, completed=summary.records + summary.failures)
    return summary


@security_options
def produce(
    topic: str,
    key: Annotated[str | None, typer.Option("--key", "-k", help="Key of every record.")] = None,
    key_separator: Annotated[
        str | None, typer.Option("--key-separator", help="Split each line at the first SEP into key and value.")
    ] = None,
    acks: Annotated[str, typer.Option("--acks", "-a", help="0, 1 or all.")] = "all",
    partition: Annotated[int | None, typer.Option("--partition", "-p", min=0, help="Default: by key hash.")] = None,
    batch_size: Annotated[
        int, typer.Option("--batch-size", min=1, max=MAX_BATCH_ENTRIES, help="Records per request.")
    ] = MAX_BATCH_ENTRIES,
    server: ServerOption = DEFAULT_SERVER,
    *,
    security: ClientSecurity,
) -> None:
    """Produce one record per line of stdin and print a summary.

    Typed input (stdin is a terminal) is sent line by line; piped input in batches.
    """
    try:
        required_acks = Acks(acks)
    except ValueError:
        raise fail(f"--acks must be 0, 1 or all (got {acks!r})") from None
    per_request = 1 if sys.stdin.isatty() else batch_size
    batches = batched(read_entries(sys.stdin, key, key_separator, partition), per_request)
    progress = _progress_display() if sys.stderr.isatty() else None

    async def action(client: AdminClient) -> ProduceSummary:
        if progress is None:
            return await produce_lines(client, topic, batches, required_acks, None)
        with progress:
            return await produce_lines(client, topic, batches, required_acks, progress)

    summary = run_client(server, action, security)
    stderr_console.print(summary_line(topic, summary), markup=False)
    if summary.failures:
        raise typer.Exit(1)


def _progress_display() -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TextColumn("{task.completed} records"),
        TimeElapsedColumn(),
        console=stderr_console,
        transient=True,
    )


def summary_line(topic: str, summary: ProduceSummary) -> str:
    partitions = ",".join(str(p) for p in sorted(p for p in summary.partitions if p is not None))
    line = f"produced {summary.records} record(s) to {topic}"
    if partitions:
        line += f" (partitions {partitions})"
    if summary.failures:
        line += f", {summary.failures} failed; first failure {summary.first_failure}"
    return line


@dataclass
class ConsumeState:
    remaining: int | None
    out: TextIO
    print_offsets: bool
    done: asyncio.Event = field(default_factory=asyncio.Event)


def _text(value: object) -> str:
    """A key or value as one line of text.

    The broker renders them as REST Proxy ``{type, data}`` objects: STRING prints as
    is, JSON as compact JSON, BINARY (bytes that are not UTF-8) as its base64 text.
    A missing one (a null value, Kafka's tombstone) prints as ``null``.
    """
    if isinstance(value, dict) and "data" in value:
        value = value["data"] if value.get("type") in ("STRING", "BINARY") else json.dumps(value["data"])
    if value is None:
        return "null"
    return value if isinstance(value, str) else json.dumps(value)


def _emit(state: ConsumeState, records: list[dict]) -> None:
    lines = []
    for record in records:
        if state.remaining is not None:
            if state.remaining <= 0:
                break
            state.remaining -= 1
        value = _text(record.get("value"))
        if state.print_offsets:
            key = record.get("key")
            key_text = "" if key is None else _text(key)
            lines.append(f"{record['partition_id']}\t{record['offset']}\t{key_text}\t{value}")
        else:
            lines.append(value)
    if lines:
        state.out.write("\n".join(lines) + "\n")
        state.out.flush()
    if state.remaining is not None and state.remaining <= 0:
        state.done.set()


async def consume_partition(
    client: AdminClient, topic: str, partition: int, offset: int, end_offset: int | None, state: ConsumeState
) -> None:
    """Read ``partition`` from ``offset`` until ``end_offset`` (None: forever, long-polling).

    The first read is always sent, so an offset outside the partition's range gets the
    broker's OFFSET_OUT_OF_RANGE answer instead of silence. A bounded read that makes
    no progress stops rather than spinning.
    """
    following = end_offset is None
    while not state.done.is_set():
        wanted = READ_CHUNK_RECORDS if state.remaining is None else min(READ_CHUNK_RECORDS, state.remaining)
        body = await client.read_records(topic, partition, offset, wanted, FOLLOW_POLL_MS if following else 0)
        _emit(state, body.get("data", []))
        next_offset = int(body["next_offset"])
        if end_offset is not None and (next_offset == offset or next_offset >= end_offset):
            return
        offset = next_offset


def start_offset(partition: dict, start: Literal["beginning", "end"] | int) -> int:
    if start == "beginning":
        return int(partition["log_start_offset"])
    if start == "end":
        return int(partition["high_watermark"])
    return start


async def consume_topic(
    client: AdminClient,
    topic: str,
    partition: int | None,
    start: Literal["beginning", "end"] | int,
    follow: bool,
    state: ConsumeState,
) -> None:
    partitions = await client.list_partitions(topic)
    if partition is not None:
        partitions = [p for p in partitions if p["partition_id"] == partition]
        if not partitions:
            raise fail(f"topic {topic} has no partition {partition}")
    readers = set()
    for p in partitions:
        end_offset = None if follow else int(p["high_watermark"])
        reader = consume_partition(client, topic, p["partition_id"], start_offset(p, start), end_offset, state)
        readers.add(asyncio.create_task(reader))
    stopper = asyncio.create_task(state.done.wait())
    try:
        while readers:
            done, _ = await asyncio.wait(readers | {stopper}, return_when=asyncio.FIRST_COMPLETED)
            if stopper in done:
                return
            for task in done:
                task.result()
            readers -= done
    finally:
        for pending in [*readers, stopper]:
            pending.cancel()


@security_options
def consume(
    topic: str,
    from_beginning: Annotated[bool, typer.Option("--from-beginning", help="Start at the log start offset.")] = False,
    offset: Annotated[int | None, typer.Option("--offset", "-o", min=0, help="Start at this offset.")] = None,
    partition: Annotated[int | None, typer.Option("--partition", "-p", min=0, help="Default: every partition.")] = None,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep waiting for new records.")] = False,
    max_records: Annotated[int | None, typer.Option("--max-records", "-n", min=1, help="Stop after N records.")] = None,
    print_offsets: Annotated[
        bool, typer.Option("--print-offsets", help="Print partition, offset, key and value, tab-separated.")
    ] = False,
    server: ServerOption = DEFAULT_SERVER,
    *,
    security: ClientSecurity,
) -> None:
    """Print records' values one per line (by default only those produced from now on).

    Without --follow it stops at the high watermark each partition had when it started.
    """
    if from_beginning and offset is not None:
        raise fail("give either --from-beginning or --offset, not both")
    start: Literal["beginning", "end"] | int = "beginning" if from_beginning else "end" if offset is None else offset

    async def action(client: AdminClient) -> None:
        state = ConsumeState(remaining=max_records, out=sys.stdout, print_offsets=print_offsets)
        await consume_topic(client, topic, partition, start, follow, state)

    try:
        run_client(server, action, security)
    except KeyboardInterrupt:
        raise typer.Exit(0) from None
    except BrokenPipeError:
        raise typer.Exit(0) from None
