"""The ``highwater`` command: run a broker or a local cluster, and talk to one.

* ``highwater serve`` runs one broker. Settings come from flags > ``HIGHWATER_*``
  environment > ``--config`` TOML file > defaults; a bad one, or a ``HIGHWATER_*``
  variable nothing reads, stops the process before anything starts, with one line on
  stderr and exit code 2. ``--print-config`` prints them, each with its source, and exits.
* ``highwater dev`` runs a local cluster of broker processes (see ``broker.cli.dev``).
* ``highwater`` alone prints the help (exit code 0); ``highwater --version`` prints
  ``highwater <version>`` from the installed package's metadata.
* ``highwater topics ...``, ``partitions elect-preferred``, ``cluster id``, ``produce`` and ``consume`` are
  clients of the REST API of any broker (``--server``/``HIGHWATER_SERVER``); they fail
  with one line and exit code 1.
* ``highwater users|acls|quotas ...`` manage security through a broker (``--server``) or
  offline, straight in the metadata store (``--metadata``), to create the first admin.

Heavy modules (the broker itself) are imported inside the commands that need them, so
the client commands start fast and do not depend on the server code.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from broker.cli.acls import acls_app
from broker.cli.brokers import brokers_app
from broker.cli.cluster import cluster_app
from broker.cli.common import EXIT_BAD_SETTINGS, fail
from broker.cli.groups import groups_app
from broker.cli.partitions import partitions_app
from broker.cli.quotas import quotas_app
from broker.cli.records import consume, produce
from broker.cli.topics import topics_app
from broker.cli.transactions import transactions_app
from broker.cli.users import users_app
from broker.tls import TlsFileError, anonymous_listener_refusal
from config.broker import BrokerSettings, load_broker_settings
from config.errors import SettingsRefused, format_settings_error

DEV_DIRECTORY = Path(".highwater-dev")
PACKAGE = "highwater"

app = typer.Typer(
    name="highwater",
    help="highwater: a Kafka-style partitioned, replicated message broker over HTTP.",
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(cluster_app, name="cluster")
app.add_typer(brokers_app, name="brokers")
app.add_typer(topics_app, name="topics")
app.add_typer(partitions_app, name="partitions")
app.add_typer(groups_app, name="groups")
app.add_typer(transactions_app, name="transactions")
app.add_typer(users_app, name="users")
app.add_typer(acls_app, name="acls")
app.add_typer(quotas_app, name="quotas")
app.command("produce")(produce)
app.command("consume")(consume)


def installed_version() -> str:
    """The installed package's version (its metadata), ``unknown`` when run from sources never installed."""
    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        return "unknown"


def _print_version(requested: bool) -> None:
    if requested:
        typer.echo(f"highwater {installed_version()}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def highwater(
    context: typer.Context,
    show_version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """highwater: a Kafka-style partitioned, replicated message broker over HTTP.

    Without a command it prints this help and exits 0: asking what the tool does is not an error.
    """
    if context.invoked_subcommand is None:
        typer.echo(context.get_help())
        raise typer.Exit()


def settings_or_exit(config_file: Path | None, **flags: object) -> BrokerSettings:
    """Load the layered settings, or stop with one line naming the bad setting (exit code 2)."""
    try:
        return load_broker_settings(config_file, **flags)
    except SettingsRefused as error:
        raise fail(str(error), EXIT_BAD_SETTINGS) from None
    except ValidationError as error:
        message = format_settings_error(error).removeprefix("highwater: ")
        raise fail(message, EXIT_BAD_SETTINGS) from None


@app.command()
def serve(
    config: Annotated[Path | None, typer.Option("--config", help="TOML settings file.")] = None,
    node_id: Annotated[int | None, typer.Option("--node-id", help="Broker id, unique in the cluster.")] = None,
    host: Annotated[str | None, typer.Option("--host", help="Address to listen on.")] = None,
    port: Annotated[int | None, typer.Option("--port", help="Port to listen on; 0 picks a free one.")] = None,
    data_dir: Annotated[Path | None, typer.Option("--data-dir", help="Directory for logs and checkpoints.")] = None,
    metadata: Annotated[
        str | None, typer.Option("--metadata", help="Metadata store: sqlite:///abs/file.db or etcd://host:port,...")
    ] = None,
    advertised_url: Annotated[
        str | None, typer.Option("--advertised-url", help="URL other brokers and clients use for this one.")
    ] = None,
    inter_broker_url: Annotated[
        str | None, typer.Option("--inter-broker-url", help="URL other brokers use for this one; default advertised.")
    ] = None,
    log_level: Annotated[str | None, typer.Option("--log-level", help="debug, info, warning, error.")] = None,
    allow_anonymous: Annotated[
        bool,
        typer.Option(
            "--allow-anonymous",
            help="Listen on a non-loopback address although security.authentication is 'none'.",
        ),
    ] = False,
    print_config: Annotated[
        bool,
        typer.Option("--print-config", help="Print the effective settings, each with where it came from, and exit."),
    ] = False,
) -> None:
    """Run one broker until SIGTERM or Ctrl-C.

    Without authentication it listens only on loopback unless --allow-anonymous (or
    allow_anonymous = true) says anonymous clients from elsewhere are intended.
    """
    flags = {
        "node_id": node_id,
        "host": host,
        "port": port,
        "data_dir": data_dir,
        "metadata_store": metadata,
        "advertised_url": advertised_url,
        "inter_broker_url": inter_broker_url,
        "log_level": log_level,
        "allow_anonymous": allow_anonymous or None,
    }
    settings = settings_or_exit(config, **flags)
    if print_config:
        from broker.cli.print_config import print_effective_settings

        print_effective_settings(settings, config, flags)
        raise typer.Exit()
    refusal = anonymous_listener_refusal(settings.host, settings.security.authentication, settings.allow_anonymous)
    if refusal is not None:
        raise fail(refusal, EXIT_BAD_SETTINGS)
    from broker.logging_setup import configure_logging

    configure_logging(settings.log_level, settings.log_format)
    from broker.cluster.membership import DuplicateBrokerId
    from broker.listening import ListenerUnavailable
    from broker.main import run_broker
    from broker.node.meta_properties import DataDirMismatch

    try:
        run_broker(settings)
    except (DuplicateBrokerId, DataDirMismatch) as error:
        raise fail(str(error)) from None
    except TlsFileError as error:
        raise fail(str(error), EXIT_BAD_SETTINGS) from None
    except ListenerUnavailable as error:
        raise fail(error.message) from None


@app.command()
def dev(
    brokers: Annotated[int, typer.Option("--brokers", "-n", min=1, max=9, help="How many brokers.")] = 3,
    directory: Annotated[Path, typer.Option("--dir", help="Data, logs and the metadata store.")] = DEV_DIRECTORY,
    base_port: Annotated[
        int, typer.Option("--base-port", min=1, max=65535, help="Broker i listens on base+i-1.")
    ] = 9092,
    kafka_base_port: Annotated[
        int | None,
        typer.Option(
            "--kafka-base-port",
            min=1,
            max=65535,
            help="Broker i's Kafka listener is on this + i - 1 (default: base port + 10000).",
        ),
    ] = None,
    tls: Annotated[
        bool, typer.Option("--tls", help="Serve HTTPS with a throwaway CA (DIR/tls/ca.pem; pip install trustme).")
    ] = False,
) -> None:
    """Run a local cluster of broker processes with a demo topic; Ctrl-C stops it."""
    from broker.cli.dev import run_dev_cluster
    from broker.cli.dev_ports import PortUnavailable
    from broker.cli.throwaway_tls import TrustmeMissing

    try:
        code = run_dev_cluster(brokers, directory, base_port, tls, kafka_base_port)
    except PortUnavailable as error:
        raise fail(str(error)) from None
    except TrustmeMissing as error:
        raise fail(str(error), EXIT_BAD_SETTINGS) from None
    except RuntimeError as error:
        raise fail(f"{error}; the brokers' logs are {directory}/broker-N.log") from None
    raise typer.Exit(code)
