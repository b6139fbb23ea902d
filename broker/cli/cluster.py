"""``highwater cluster id``: the cluster as a whole, for people and for scripts.

``cluster id`` prints the cluster id and nothing else on stdout, so a script can take it
with ``C=$(highwater cluster id)``; everything else (no broker answered, a refusal) is
one line on stderr and exit code 1, never a traceback, so ``set -e`` stops there.
Like every client command it honours ``--server``/``HIGHWATER_SERVER`` and the security
options. It reads ``GET /v3/clusters`` and ``GET /v3/clusters/{cluster_id}`` (the
client's own ``cluster_id()``), which any authenticated principal may call without an
ACL (``broker.server.route_access``).
"""

from __future__ import annotations

import typer

from broker.cli.common import DEFAULT_SERVER, ServerOption, run_client, security_options
from broker.client.admin import AdminClient
from broker.client.security import ClientSecurity

cluster_app = typer.Typer(help="The cluster as a whole: its id.", no_args_is_help=True)


@cluster_app.command("id")
@security_options
def cluster_id(
    server: ServerOption = DEFAULT_SERVER,
    *,
    security: ClientSecurity,
) -> None:
    """Print the cluster id alone on its line: C=$(highwater cluster id)."""
    typer.echo(run_client(server, AdminClient.cluster_id, security))
