"""The deployment kit's files agree with the broker and with each other.

The host tier starts real brokers from the systemd unit and ``cluster.toml``
(``tests/hosts/test_deployment_kit.py``); no container runtime runs here, so the
Dockerfile and the compose file are held to the same command and settings: the image's
entrypoint is the unit's command, and each broker service's environment, with
``cluster.toml``, is settings the broker accepts (``highwater serve --print-config``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib

import pytest

from broker.node.broker_node import CONTROLLED_SHUTDOWN_TIMEOUT_S
from tests.hosts.kit import (
    CLUSTER_TOML,
    KIT,
    SystemdUnit,
    compose_services,
    dockerfile_entrypoint,
    environment_file,
    local_argv,
)
from tests.support.launcher import REPO_ROOT

SESSION_TIMEOUT_S = tomllib.loads(CLUSTER_TOML.read_text())["broker_session_timeout_ms"] / 1000
BROKER_SERVICES = ("broker-1", "broker-2", "broker-3")


def _print_config(variables: dict[str, str]) -> str:
    """``highwater serve --print-config`` as the unit runs it, with ``variables`` in its environment."""
    argv = [*local_argv(SystemdUnit.read().exec_start), "--print-config"]
    clean = {key: value for key, value in os.environ.items() if not key.startswith("HIGHWATER_")}
    done = subprocess.run(
        argv,
        check=False,
        env={**clean, "PYTHONPATH": str(REPO_ROOT), **variables},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_unit_waits_out_a_controlled_shutdown_and_a_deregistration_before_it_kills() -> None:
    """A SIGKILL in the middle of a stop leaves every partition the broker led leaderless
    for a whole session; the unit must give the broker's own bounds room."""
    unit = SystemdUnit.read()
    assert unit.service["KillSignal"] == "SIGTERM"
    assert unit.timeout_stop_s >= CONTROLLED_SHUTDOWN_TIMEOUT_S + SESSION_TIMEOUT_S + 10


def test_the_image_runs_the_units_command() -> None:
    assert local_argv(dockerfile_entrypoint()) == local_argv(SystemdUnit.read().exec_start)


def test_the_example_host_environment_with_the_cluster_file_is_a_valid_broker() -> None:
    variables = environment_file((KIT / "broker.env.example").read_text())
    printed = _print_config(variables)
    assert "node_id = 1  # environment" in printed
    assert 'authentication = "basic"  # file' in printed
    assert "kafka_listener_tls = true  # file" in printed


@pytest.mark.parametrize("service", BROKER_SERVICES)
def test_each_compose_broker_is_a_valid_broker_of_its_own(service: str) -> None:
    services = compose_services()
    variables = {key: str(value) for key, value in services[service]["environment"].items()}
    printed = _print_config(variables)
    assert f"node_id = {service.removeprefix('broker-')}  # environment" in printed
    assert f'advertised_url = "https://{service}.highwater.internal:9092"  # environment' in printed
    assert f'inter_broker_url = "https://{service}.highwater.internal:9092"  # environment' in printed
    assert services[service]["stop_grace_period"] == f"{SystemdUnit.read().timeout_stop_s:.0f}s"


def test_the_compose_brokers_and_etcd_members_form_one_cluster() -> None:
    services = compose_services()
    node_ids = {services[name]["environment"]["HIGHWATER_NODE_ID"] for name in BROKER_SERVICES}
    assert node_ids == {"1", "2", "3"}
    endpoints = tomllib.loads(CLUSTER_TOML.read_text())["metadata_store"].removeprefix("etcd://").split(",")
    members = [name for name in services if name.startswith("etcd-")]
    assert sorted(endpoints) == sorted(f"{services[name]['hostname']}:2379" for name in members)
    for name in members:
        environment = services[name]["environment"]
        assert environment["ETCD_PRE_VOTE"] == "true", f"{name} runs without pre-vote"
        assert environment["ETCD_NAME"] == name
        assert name in environment["ETCD_INITIAL_CLUSTER"]


def test_a_program_the_kit_does_not_install_is_refused() -> None:
    with pytest.raises(ValueError, match="the kit runs '/usr/bin/kafka'"):
        local_argv(["/usr/bin/kafka", "serve"])
    assert local_argv(["highwater", "serve", "--config", "/etc/highwater/cluster.toml"]) == [
        sys.executable,
        "-m",
        "broker",
        "serve",
        "--config",
        str(CLUSTER_TOML),
    ]
