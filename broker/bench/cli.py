"""``highwater bench``: throughput and latency of a cluster, measured with the client libraries.

    highwater bench produce --spawn 3 --replication-factor 3 --acks all --count 500000
    highwater bench e2e --server http://127.0.0.1:9092 --duration-s 30 --target-rate 20000
    highwater bench produce --spawn 1 --baseline --json results.json
    highwater bench produce --spawn 3 --replication-factor 3 --load raw    (the broker's capacity)
    highwater bench --baseline          (the aiohttp reference alone)
    highwater bench latency --spawn 3 --replication-factor 3 --acks all   (next to an aiohttp echo)
    highwater bench scale --spawn 3 --plot-dir docs/      (cost against partitions and connections)

``--server URL`` measures a running cluster; ``--spawn N`` starts N brokers for the run
and stops them after. Each repeat writes to a fresh topic. ``--baseline`` adds the
reference run (``broker.bench.baseline``) so figures show as a ratio of it. ``--load raw``
posts pre-encoded batches of ``--batch-records`` (``broker.bench.raw_load``) instead of
going through the producer library; ``--load kafka`` produces through librdkafka over the
brokers' Kafka listeners (``broker.bench.kafka_load``; spawned brokers get one on a free
port). The "client CPU µs/record" column shows what the load generator spent per record.

Security: ``--username`` (password from ``HIGHWATER_PASSWORD``) and ``--ssl-ca-file``/
``--ssl-cert-file``/``--ssl-key-file`` reach a secured ``--server``, as in every client
command. ``--spawn N --tls`` serves the spawned brokers over TLS with a throwaway CA
(``broker.cli.throwaway_tls``), so a TLS run and a plain run differ by TLS alone. Spawned brokers
run without authentication (they listen on loopback only).
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from broker.acks import Acks
from broker.bench.invocation import Invocation, run_once, spawned_or_given
from broker.bench.peers_command import peers_command
from broker.bench.spec import KINDS, LOADS, SpecError, WorkloadSpec, acks_option
from broker.cli.common import (
    EXIT_BAD_SETTINGS,
    SslCaFileOption,
    SslCertFileOption,
    SslKeyFileOption,
    UsernameOption,
    client_security,
    fail,
    server_url_option,
)

if TYPE_CHECKING:
    from broker.bench.runner import RunResult

console = Console(width=None if sys.stdout.isatty() else 160)
BASELINE_NAME = "baseline: aiohttp append"
BASELINE_DURATION_S = 3.0
"""The baseline sends for this long (or the run's --duration-s): a --count worth of records takes it a blink."""

bench_app = typer.Typer(
    help="Measure throughput and latency (produce, consume, end to end).",
    no_args_is_help=False,
    invoke_without_command=True,
)

Server = Annotated[
    str | None,
    typer.Option("--server", help="A broker of a running cluster: host:port or URL.", callback=server_url_option),
]
Spawn = Annotated[int, typer.Option("--spawn", min=0, max=9, help="Start this many brokers for the run.")]
RecordSize = Annotated[int, typer.Option("--record-size", help="Bytes of each record value.")]
Count = Annotated[int | None, typer.Option("--count", help="Records in all (default 200000 without --duration-s).")]
Duration = Annotated[float | None, typer.Option("--duration-s", help="Send for this long instead of --count.")]
Partitions = Annotated[int, typer.Option("--partitions", help="Partitions of the benchmark topic.")]
Replication = Annotated[int, typer.Option("--replication-factor", help="Replicas of each partition.")]
MinIsr = Annotated[int | None, typer.Option("--min-insync-replicas", help="Default: min(2, replication factor).")]
AcksOption = Annotated[str, typer.Option("--acks", help="0, 1 or all.")]
BatchSize = Annotated[int, typer.Option("--batch-size", help="Producer batch_size in bytes.")]
Linger = Annotated[int, typer.Option("--linger-ms", help="Producer linger_ms.")]
Producers = Annotated[int, typer.Option("--producers", help="Producer tasks per process.")]
Processes = Annotated[int, typer.Option("--processes", help="Load-generator processes (consumers for consume).")]
Compression = Annotated[str, typer.Option("--compression", help="none, gzip, lz4 or zstd.")]
TargetRate = Annotated[float, typer.Option("--target-rate", help="Records/s over the run; 0 = unlimited.")]
Load = Annotated[
    str,
    typer.Option(
        "--load",
        help=f"{', '.join(LOADS)}: Producer.send per record, Producer.send_many, pre-encoded batches "
        "posted to the binary produce endpoint (the broker's capacity, no producer library), or librdkafka "
        "(confluent-kafka) over the brokers' Kafka listeners.",
    ),
]
BatchRecords = Annotated[int, typer.Option("--batch-records", help="Records per pre-encoded batch of --load raw.")]
Repeat = Annotated[int, typer.Option("--repeat", min=1, help="Runs; the median is reported with min and max.")]
Baseline = Annotated[bool, typer.Option("--baseline", help="Also run the aiohttp append-only reference.")]
JsonFile = Annotated[Path | None, typer.Option("--json", help="Write every figure to this JSON file.")]
Quiet = Annotated[bool, typer.Option("--quiet", help="No progress bar.")]
Tls = Annotated[bool, typer.Option("--tls", help="With --spawn: serve the brokers over TLS (a throwaway CA).")]
BasicAuth = Annotated[
    bool,
    typer.Option("--basic-auth", help="With --spawn: brokers authenticate every request (a throwaway super user)."),
]


def _workload_command(kind: str) -> Callable[..., None]:
    def command(
        server: Server = None,
        spawn: Spawn = 0,
        record_size: RecordSize = 100,
        count: Count = None,
        duration_s: Duration = None,
        partitions: Partitions = 6,
        replication_factor: Replication = 1,
        min_insync_replicas: MinIsr = None,
        acks: AcksOption = Acks.ALL.value,
        batch_size: BatchSize = 256 * 1024,
        linger_ms: Linger = 5,
        producers: Producers = 4,
        processes: Processes = 1,
        compression: Compression = "none",
        target_rate: TargetRate = 0.0,
        load: Load = "send",
        batch_records: BatchRecords = 1000,
        repeat: Repeat = 1,
        baseline: Baseline = False,
        json_file: JsonFile = None,
        quiet: Quiet = False,
        tls: Tls = False,
        basic_auth: BasicAuth = False,
        username: UsernameOption = None,
        ssl_ca_file: SslCaFileOption = None,
        ssl_cert_file: SslCertFileOption = None,
        ssl_key_file: SslKeyFileOption = None,
    ) -> None:
        try:
            required_acks = acks_option(acks)
        except SpecError as error:
            raise fail(str(error), EXIT_BAD_SETTINGS) from None
        spec = WorkloadSpec(
            kind=kind,
            record_size_bytes=record_size,
            count=count if count is not None or duration_s is not None else 200_000,
            duration_s=duration_s,
            partitions=partitions,
            replication_factor=replication_factor,
            min_insync_replicas=min_insync_replicas or min(2, replication_factor),
            acks=required_acks,
            batch_size_bytes=batch_size,
            linger_ms=linger_ms,
            producers=producers,
            processes=processes,
            compression=compression,
            target_rate=target_rate,
            load=load,
            batch_records=batch_records,
        )
        security = client_security(username, ssl_ca_file, ssl_cert_file, ssl_key_file)
        execute(spec, Invocation(server, spawn, repeat, baseline, json_file, quiet, tls, security, basic_auth))

    command.__doc__ = {
        "produce": "Producer throughput and acknowledgement latency.",
        "consume": "Fill a topic, then measure consumers reading it from offset 0.",
        "e2e": "Producers and a consumer at once: latency from send to the consumer seeing it (through the HW).",
    }[kind]
    return command


for _kind in KINDS:
    bench_app.command(_kind)(_workload_command(_kind))


@bench_app.callback()
def bench(context: typer.Context, baseline: Baseline = False, quiet: Quiet = False) -> None:
    """Measure throughput and latency; ``highwater bench --baseline`` runs the aiohttp reference alone."""
    if context.invoked_subcommand is None:
        if not baseline:
            console.print(context.get_help())
            raise typer.Exit(0)
        execute(None, Invocation(None, 0, 1, True, None, quiet))


@bench_app.command("baseline")
def baseline_command(
    record_size: RecordSize = 100,
    count: Count = None,
    duration_s: Duration = None,
    batch_size: BatchSize = 256 * 1024,
    producers: Producers = 4,
    processes: Processes = 1,
    repeat: Repeat = 1,
    json_file: JsonFile = None,
    quiet: Quiet = False,
) -> None:
    """The produce workload against an aiohttp server that only appends bodies to a file."""
    spec = WorkloadSpec(
        kind="produce",
        record_size_bytes=record_size,
        count=count if count is not None or duration_s is not None else 200_000,
        duration_s=duration_s,
        batch_size_bytes=batch_size,
        producers=producers,
        processes=processes,
    )
    execute(spec, Invocation(None, 0, repeat, True, json_file, quiet), broker_run=False)


@bench_app.command("latency")
def latency_command(
    server: Server = None,
    spawn: Spawn = 0,
    record_size: RecordSize = 100,
    count: Annotated[int, typer.Option("--count", help="Requests of each of the two runs.")] = 2000,
    target_rate: Annotated[float, typer.Option("--target-rate", help="Requests/s of each run.")] = 200.0,
    partitions: Annotated[int, typer.Option("--partitions", help="Partitions of the benchmark topic.")] = 1,
    replication_factor: Replication = 1,
    min_insync_replicas: MinIsr = None,
    acks: AcksOption = Acks.ALL.value,
    load: Load = "send",
    json_file: JsonFile = None,
    quiet: Quiet = False,
) -> None:
    """Lone-request latency (one request at a time, paced) next to an aiohttp echo round trip of the same body.

    The echo (``broker.bench.latency``) runs first against an aiohttp server on loopback, then
    the broker run; p50/p99/p99.9 of both and their ratio are printed, with the target for
    acks=all RF 3 (p50 at most 2.3× the echo's).
    """
    from broker.bench import latency
    from broker.bench.baseline import baseline_server
    from broker.bench.workloads import quiet_logging

    quiet_logging()
    try:
        spec = latency.lone_request_spec(
            WorkloadSpec(
                kind="produce",
                record_size_bytes=record_size,
                count=count,
                partitions=partitions,
                replication_factor=replication_factor,
                min_insync_replicas=min_insync_replicas or min(2, replication_factor),
                acks=acks_option(acks),
                target_rate=target_rate,
                load=load,
            )
        )
        spec.validate(brokers=spawn or None)
        if bool(server) == bool(spawn):
            raise SpecError("give exactly one of --server URL and --spawn N")
    except SpecError as error:
        raise fail(str(error), EXIT_BAD_SETTINGS) from None
    invocation = Invocation(server, spawn, 1, False, json_file, quiet)
    with baseline_server() as url:
        echo = latency.run_echo(spec, url, quiet).produce_ack
    with spawned_or_given(invocation) as target:
        broker, cpu_us = latency.run_brokers(dataclasses.replace(spec, security=target.security), target, quiet)
    if echo is None or broker is None:
        raise fail("a run measured no latency", EXIT_BAD_SETTINGS)
    name = f"{scenario_name(spec)} lone"
    console.print(latency.comparison_table(name, broker, echo))
    console.print(latency.verdict(broker, echo))
    if cpu_us:
        console.print(latency.cpu_line(cpu_us))
    if json_file is not None:
        document = latency.comparison_document(name, spec, broker, echo, cpu_us)
        json_file.write_text(json.dumps(document, indent=2) + "\n")


@bench_app.command("transactions")
def transactions_command(
    server: Server = None,
    spawn: Spawn = 0,
    record_size: RecordSize = 100,
    count: Annotated[int, typer.Option("--count", help="Records of each of the two runs.")] = 100_000,
    per_transaction: Annotated[
        int, typer.Option("--per-transaction", help="Records committed by each transaction.", min=1)
    ] = 1_000,
    partitions: Annotated[int, typer.Option("--partitions", help="Partitions of the benchmark topic.")] = 3,
    replication_factor: Replication = 1,
    min_insync_replicas: MinIsr = None,
    client: Annotated[
        str, typer.Option("--client", help="kafka (librdkafka, Kafka listeners) or http (highwater's producer).")
    ] = "kafka",
    json_file: JsonFile = None,
    quiet: Quiet = False,
) -> None:
    """Transactional produce next to idempotent produce on the same topic, and the commit latency.

    ``broker.bench.transactions`` says what each run does. With ``--client kafka`` the
    brokers need Kafka listeners: ``--spawn N`` starts them so, a ``--server`` must have them.
    """
    from broker.bench import transactions
    from broker.bench.cluster import prepare_topic
    from broker.bench.kafka_load import kafka_bootstrap
    from broker.bench.workloads import quiet_logging

    quiet_logging()
    if bool(server) == bool(spawn):
        raise fail("give exactly one of --server URL and --spawn N", EXIT_BAD_SETTINGS)
    if client not in ("kafka", "http"):
        raise fail(f"--client must be kafka or http, not {client!r}", EXIT_BAD_SETTINGS)
    min_isr = min_insync_replicas or min(2, replication_factor)
    invocation = Invocation(server, spawn, 1, False, json_file, quiet)
    with spawned_or_given(invocation, kafka=client == "kafka") as target:
        urls, security = target.urls, target.security
        topic = asyncio.run(prepare_topic(urls[0], partitions, replication_factor, min_isr, security=security))
        try:
            if client == "kafka":
                bootstrap = asyncio.run(kafka_bootstrap(urls))
                figures = transactions.run(bootstrap, topic, partitions, count, record_size, per_transaction)
            else:
                figures = asyncio.run(
                    transactions.run_http(
                        urls, topic, partitions, count, record_size, per_transaction, security.client_options()
                    )
                )
        except RuntimeError as error:
            raise fail(str(error), EXIT_BAD_SETTINGS) from None
    table = Table(
        title=f"transactions ({client}): {count} records of {record_size} B, {per_transaction} per transaction"
    )
    for column in ("idempotent rec/s", "transactional rec/s", "ratio", "commits", "commit p50 ms", "commit p99 ms"):
        table.add_column(column, justify="right")
    table.add_row(
        f"{figures.idempotent_records_per_s:,.0f}",
        f"{figures.transactional_records_per_s:,.0f}",
        f"{figures.ratio:.2f}",
        str(figures.transactions),
        f"{figures.commit_p50_ms:.2f}",
        f"{figures.commit_p99_ms:.2f}",
    )
    console.print(table)
    if json_file is not None:
        document = transactions.figures_document(
            figures,
            count=count,
            record_size=record_size,
            per_transaction=per_transaction,
            partitions=partitions,
            replication_factor=replication_factor,
            client=client,
        )
        json_file.write_text(json.dumps(document, indent=2) + "\n")


@bench_app.command("scale")
def scale_command(
    spawn: Annotated[
        int, typer.Option("--spawn", min=1, max=9, help="Start this many brokers (RSS is read from their pids).")
    ] = 3,
    partitions: Annotated[
        str, typer.Option("--partitions", help="Steps: partitions of one topic, ascending.")
    ] = "1,10,100,1000,10000",
    connections: Annotated[
        str, typer.Option("--connections", help="Steps: concurrent producer connections, ascending.")
    ] = "1,10,100,1000",
    fixed_partitions: Annotated[
        int, typer.Option("--fixed-partitions", help="Partitions during the connections sweep.")
    ] = 6,
    fixed_connections: Annotated[
        int, typer.Option("--fixed-connections", help="Connections during the partitions sweep.")
    ] = 4,
    duration_s: Annotated[float, typer.Option("--duration-s", help="Raw produce time of each step.")] = 3.0,
    record_size: RecordSize = 100,
    batch_records: BatchRecords = 1000,
    replication_factor: Replication = 3,
    min_insync_replicas: MinIsr = None,
    acks: AcksOption = Acks.ALL.value,
    json_file: JsonFile = None,
    plot_dir: Annotated[Path | None, typer.Option("--plot-dir", help="Write PNG plots (matplotlib) here.")] = None,
    metadata: Annotated[
        int | None,
        typer.Option(
            "--metadata",
            min=1,
            help="Instead of the sweeps: create, idle CPU, controller failover and restart at this many partitions.",
        ),
    ] = None,
    idle_s: Annotated[
        float, typer.Option("--idle-s", min=1.0, help="With --metadata: how long idle CPU is read.")
    ] = 10.0,
    quiet: Quiet = False,
) -> None:
    """How throughput, ack latency and broker RSS grow with partitions and with connections (raw produce steps).

    Every step is a --duration-s raw produce (``broker.bench.scale``) after its topic has a leader
    and a full ISR on every partition; the brokers' VmRSS is read at the end of each step.
    With --metadata N, the cluster's metadata targets at N partitions instead (``broker.bench.metadata_scale``).
    """
    from broker.bench import scale
    from broker.bench.cluster import spawned_cluster
    from broker.bench.scale_plan import MAX_CONNECTIONS, MAX_PARTITIONS, parse_steps
    from broker.bench.workloads import quiet_logging

    quiet_logging()
    if metadata is not None:
        _metadata_targets(spawn, metadata, replication_factor, idle_s, json_file, quiet)
        return
    try:
        spec = WorkloadSpec(
            kind="produce",
            record_size_bytes=record_size,
            count=None,
            duration_s=duration_s,
            partitions=fixed_partitions,
            replication_factor=replication_factor,
            min_insync_replicas=min_insync_replicas or min(2, replication_factor),
            acks=acks_option(acks),
            producers=fixed_connections,
            load="raw",
            batch_records=batch_records,
        ).validate(brokers=spawn)
        plan = scale.ScalePlan(
            spec,
            parse_steps("--partitions", partitions, MAX_PARTITIONS),
            parse_steps("--connections", connections, MAX_CONNECTIONS),
            fixed_partitions,
            fixed_connections,
        )
        if plot_dir is not None and importlib.util.find_spec("matplotlib") is None:
            raise SpecError("--plot-dir draws with matplotlib: pip install -e '.[bench]'")
        scale.ensure_open_files(plan, spawn)
    except SpecError as error:
        raise fail(str(error), EXIT_BAD_SETTINGS) from None
    with spawned_cluster(spawn) as brokers:
        steps = scale.run_scale(plan, brokers, console, quiet)
    console.print(scale.scale_table(steps))
    for line in scale.growth_lines(steps):
        console.print(line)
    if json_file is not None:
        document = scale.scale_document(plan, steps, f"{spawn} spawned brokers")
        json_file.write_text(json.dumps(document, indent=2) + "\n")
    if plot_dir is not None:
        for path in scale.write_plots(steps, plot_dir):
            console.print(f"wrote {path}")


def _metadata_targets(
    spawn: int, partitions: int, replication_factor: int, idle_s: float, json_file: Path | None, quiet: bool
) -> None:
    from broker.bench import metadata_scale, scale
    from broker.bench.cluster import spawned_brokers
    from broker.bench.scale_plan import MAX_PARTITIONS

    try:
        if partitions > MAX_PARTITIONS:
            raise SpecError(f"--metadata is at most {MAX_PARTITIONS:,} partitions, got {partitions:,}")
        if not 2 <= replication_factor <= spawn:
            raise SpecError(
                f"--metadata kills a broker: --replication-factor must be 2 to --spawn ({spawn}), got {replication_factor}"
            )
        spec = WorkloadSpec(kind="produce", partitions=1, replication_factor=replication_factor)
        scale.ensure_open_files(scale.ScalePlan(spec, (partitions,), (1,), 0, 1), spawn)
    except SpecError as error:
        raise fail(str(error), EXIT_BAD_SETTINGS) from None
    shown = Console(quiet=True) if quiet else console
    with spawned_brokers(spawn) as spawned, shown.status("starting") as status:
        figures = metadata_scale.run_metadata(spawned, partitions, replication_factor, idle_s, status.update)
    console.print(metadata_scale.figures_table(figures))
    for line in metadata_scale.detail_lines(figures):
        console.print(line)
    if json_file is not None:
        json_file.write_text(json.dumps(metadata_scale.metadata_document(figures), indent=2) + "\n")


if importlib.util.find_spec("broker.bench.spark") is not None:

    @bench_app.command("spark", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def spark_command(context: typer.Context) -> None:
        """Rows/s of the Spark source next to an in-memory Python source (options of broker.bench.spark)."""
        from broker.bench import spark

        sys.argv = ["highwater bench spark", *context.args]
        spark.main()


def execute(spec: WorkloadSpec | None, invocation: Invocation, broker_run: bool = True) -> None:
    """Validate, run the baseline (if asked) and the workload, then print and save the results.

    The measuring modules are imported here, not at the top, so ``highwater`` starts fast.
    """
    from broker.bench.report import ScenarioSummary, results_document, results_table, summarize
    from broker.bench.workloads import quiet_logging

    quiet_logging()
    spec = spec or WorkloadSpec(kind="produce")
    try:
        spec.validate(brokers=invocation.spawn or None)
        if broker_run and bool(invocation.server) == bool(invocation.spawn):
            raise SpecError("give exactly one of --server URL and --spawn N")
        check_security(invocation)
        check_kafka_load(spec, invocation)
    except SpecError as error:
        raise fail(str(error), EXIT_BAD_SETTINGS) from None
    summaries: list[ScenarioSummary] = []
    baseline = None
    if invocation.baseline:
        baseline = summarize(BASELINE_NAME, spec, _repeat_baseline(spec, invocation))
        summaries.append(baseline)
    target = "baseline only"
    if broker_run and (invocation.server or invocation.spawn):
        with spawned_or_given(invocation, kafka=spec.load == "kafka") as brokers:
            urls, security = brokers.urls, brokers.security
            target = invocation.server or f"{invocation.spawn} spawned{_secured_as(invocation)} brokers"
            secured = dataclasses.replace(spec, security=security)
            runs = [run_once(secured, urls, invocation.quiet) for _ in range(invocation.repeat)]
        summaries.append(summarize(scenario_name(spec), spec, runs))
    console.print(results_table(summaries, baseline))
    if invocation.json_file is not None:
        document = results_document(summaries, baseline, target)
        invocation.json_file.write_text(json.dumps(document, indent=2) + "\n")


def check_security(invocation: Invocation) -> None:
    """``--tls`` and ``--basic-auth`` secure spawned brokers with throwaway credentials, so they go with
    ``--spawn`` and without the ``--ssl-*`` files or ``--username`` a ``--server`` run takes instead."""
    if invocation.basic_auth and invocation.server:
        raise SpecError("--basic-auth secures spawned brokers; for --server give --username and HIGHWATER_PASSWORD")
    if invocation.basic_auth and invocation.security.username:
        raise SpecError("--basic-auth makes its own user for the spawned brokers; --username applies to --server")
    if not invocation.tls:
        return
    if invocation.server:
        raise SpecError("--tls serves spawned brokers over TLS; for --server give --ssl-ca-file (and a https URL)")
    if invocation.security.uses_tls_files:
        raise SpecError("--tls makes its own CA for the spawned brokers; --ssl-* files apply to --server")


def check_kafka_load(spec: WorkloadSpec, invocation: Invocation) -> None:
    """``--load kafka`` speaks plaintext Kafka without SASL, and needs confluent-kafka installed."""
    if spec.load != "kafka":
        return
    if invocation.tls or invocation.basic_auth or invocation.security.username or invocation.security.uses_tls_files:
        raise SpecError("--load kafka connects without TLS or SASL: drop --tls, --basic-auth, --username, --ssl-*")
    if importlib.util.find_spec("confluent_kafka") is None:
        raise SpecError("--load kafka produces through confluent-kafka: pip install confluent-kafka")


def scenario_name(spec: WorkloadSpec) -> str:
    """``produce 100 B RF3 acks=all``, plus the non-default knobs that change the meaning of the figures."""
    name = f"{spec.kind} {spec.record_size_bytes} B RF{spec.replication_factor} acks={spec.acks.value}"
    if spec.compression != "none":
        name += f" {spec.compression}"
    if spec.target_rate:
        name += f" @{spec.target_rate:,.0f}/s"
    if spec.load != "send":
        name += f" {spec.load}"
    return name


def _repeat_baseline(spec: WorkloadSpec, invocation: Invocation) -> list[RunResult]:
    from broker.bench.baseline import baseline_server, run_baseline

    timed = dataclasses.replace(spec, count=None, duration_s=spec.duration_s or BASELINE_DURATION_S)
    with baseline_server() as url:
        return [run_baseline(timed, url, invocation.quiet) for _ in range(invocation.repeat)]


def _secured_as(invocation: Invocation) -> str:
    return "".join((" TLS" if invocation.tls else "", " basic-auth" if invocation.basic_auth else ""))


bench_app.command("peers")(peers_command)
