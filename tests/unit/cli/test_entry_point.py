"""``highwater`` alone prints the help and exits 0; ``highwater --version`` prints the installed version."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version

from typer.testing import CliRunner

from broker.command import app

runner = CliRunner()


def test_no_arguments_print_the_help_and_exit_0() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "broker"], capture_output=True, text=True, timeout=60, check=False
    )
    assert completed.returncode == 0, completed.stderr
    assert "Usage: highwater [OPTIONS] COMMAND [ARGS]..." in completed.stdout
    for command in ("dev", "cluster", "topics", "groups"):
        assert f" {command} " in completed.stdout
    assert completed.stderr == ""


def test_no_arguments_print_what_help_prints() -> None:
    assert runner.invoke(app, []).stdout == runner.invoke(app, ["--help"]).stdout


def test_version_is_the_installed_packages() -> None:
    result = runner.invoke(app, ["--version"])
    assert (result.exit_code, result.stdout) == (0, f"highwater {version('highwater')}\n")
