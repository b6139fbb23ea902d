"""The deployment kit (``config/deploy``) read as its runners read it, so tests run what it says.

systemd reads the unit's ``ExecStart``, ``EnvironmentFile`` and ``TimeoutStopSec``; a
container runtime reads the Dockerfile's ``ENTRYPOINT`` and the compose file's services.
The tests take the commands from there, swapping only the install paths (the unit's
``/opt/highwater/.venv/bin/highwater``, the image's ``highwater`` on its PATH, and
``/etc/highwater/cluster.toml``) for this checkout's, so a command that does not run here
would not run there either.
"""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from tests.support.launcher import REPO_ROOT

KIT = REPO_ROOT / "config" / "deploy"
CLUSTER_TOML = KIT / "cluster.toml"
INSTALLED_CONFIG = "/etc/highwater/cluster.toml"
INSTALLED_PROGRAMS = ("/opt/highwater/.venv/bin/highwater", "highwater")


@dataclass(frozen=True)
class SystemdUnit:
    """A unit file's ``[Section]`` ``Key=value`` pairs (each key given once, as in the kit's unit)."""

    sections: dict[str, dict[str, str]]

    @classmethod
    def read(cls, path: Path = KIT / "highwater-broker.service") -> SystemdUnit:
        sections: dict[str, dict[str, str]] = {}
        current: dict[str, str] | None = None
        for raw in path.read_text().splitlines():
            line = raw.strip()
            if not line or line.startswith(("#", ";")):
                continue
            if line.startswith("[") and line.endswith("]"):
                current = sections.setdefault(line[1:-1], {})
                continue
            if current is None or "=" not in line:
                raise ValueError(f"{path.name}: not a unit file line: {raw!r}")
            key, value = line.split("=", 1)
            current[key.strip()] = value.strip()
        return cls(sections)

    @property
    def service(self) -> dict[str, str]:
        return self.sections["Service"]

    @property
    def exec_start(self) -> list[str]:
        return shlex.split(self.service["ExecStart"])

    @property
    def timeout_stop_s(self) -> float:
        value = self.service["TimeoutStopSec"]
        return float(value[:-1]) if value.endswith("s") else float(value)


def environment_file(text: str) -> dict[str, str]:
    """An ``EnvironmentFile``'s ``KEY=value`` lines (comments and blank lines skipped)."""
    variables = {}
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            key, value = line.split("=", 1)
            variables[key.strip()] = value.strip()
    return variables


def dockerfile_entrypoint(path: Path = KIT / "Dockerfile") -> list[str]:
    """The image's ``ENTRYPOINT``, in its exec (JSON array) form."""
    [line] = [line for line in path.read_text().splitlines() if line.startswith("ENTRYPOINT ")]
    return json.loads(line.removeprefix("ENTRYPOINT "))


def compose_services(path: Path = KIT / "compose.yaml") -> dict[str, dict]:
    """The compose file's services, with its YAML anchors and merge keys resolved."""
    return yaml.safe_load(path.read_text())["services"]


def local_argv(argv: list[str]) -> list[str]:
    """``argv`` with the installed program and settings file replaced by this checkout's."""
    program, *arguments = argv
    if program not in INSTALLED_PROGRAMS:
        raise ValueError(f"the kit runs {program!r}, not one of {INSTALLED_PROGRAMS}")
    local = [str(CLUSTER_TOML) if argument == INSTALLED_CONFIG else argument for argument in arguments]
    return [sys.executable, "-m", "broker", *local]
