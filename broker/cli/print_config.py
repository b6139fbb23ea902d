"""``highwater serve --print-config``: print the effective settings and where each came from.

The layers are read as the settings read them (the flags given, the ``HIGHWATER_*``
environment through pydantic-settings' own source, the ``--config`` document) and
``config.provenance`` writes them out; nothing is started.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer
from pydantic_settings import EnvSettingsSource

from config.broker import BrokerSettings, given_flags, read_toml_file
from config.provenance import Layers, broker_settings_text


def print_effective_settings(settings: BrokerSettings, config_file: Path | None, flags: Mapping[str, Any]) -> None:
    """Print ``settings`` as TOML, each value followed by its source (``flags`` as ``serve`` passed them)."""
    layers = Layers(
        flag=given_flags(flags),
        environment=EnvSettingsSource(BrokerSettings)(),
        file=read_toml_file(config_file) if config_file is not None else {},
    )
    typer.echo(broker_settings_text(settings, layers), nl=False)
