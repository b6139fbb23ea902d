"""``highwater users|acls|quotas`` offline (``--metadata``) against a real sqlite store."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from typer.testing import CliRunner

from broker.cluster.security_store import SecurityStore
from broker.cluster.store_url import open_store
from broker.command import app
from broker.security.scram import verify_password
from config import variables

runner = CliRunner()


@pytest.fixture(autouse=True)
def isolated_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No ``HIGHWATER_*`` from the caller's shell; the logging the offline commands configure is undone."""
    for name in list(os.environ):
        if name.startswith(variables.PREFIX):
            monkeypatch.delenv(name)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    structlog.reset_defaults()


@pytest.fixture
def metadata(tmp_path: Path) -> str:
    return f"sqlite://{tmp_path / 'metadata.db'}"


def invoke(*args: str, stdin: str | None = None, env: dict[str, str] | None = None):
    return runner.invoke(app, list(args), input=stdin, env=env)


def stored_users(metadata: str) -> dict:
    async def read() -> dict:
        store = await open_store(metadata)
        try:
            return await SecurityStore(store).users()
        finally:
            await store.close()

    return asyncio.run(read())


def test_user_added_from_stdin_listed_without_secrets_and_deleted(metadata: str) -> None:
    added = invoke("users", "add", "admin", "--password-stdin", "--metadata", metadata, stdin="s3cret pass\n")
    assert added.exit_code == 0, added.output
    assert added.stdout.strip() == "added user admin"
    assert verify_password(stored_users(metadata)["admin"], "s3cret pass")

    replaced = invoke("users", "add", "admin", "--password-stdin", "--metadata", metadata, stdin="other\n")
    assert replaced.stdout.strip() == "replaced the password of user admin"
    assert verify_password(stored_users(metadata)["admin"], "other")

    listed = invoke("users", "list", "--metadata", metadata)
    assert listed.exit_code == 0, listed.output
    assert "admin" in listed.stdout
    assert "SCRAM-SHA-512" in listed.stdout
    assert "4096" in listed.stdout
    credential = stored_users(metadata)["admin"]
    for secret in ("other", credential.salt.hex(), "stored_key", "server_key", "salt"):
        assert secret not in listed.stdout

    deleted = invoke("users", "delete", "admin", "--metadata", metadata)
    assert deleted.exit_code == 0, deleted.output
    assert stored_users(metadata) == {}
    again = invoke("users", "delete", "admin", "--metadata", metadata)
    assert again.exit_code == 1
    assert again.stderr.strip() == "highwater: RESOURCE_NOT_FOUND: no user admin"


def test_password_is_taken_from_stdin_only(metadata: str) -> None:
    without_flag = invoke("users", "add", "bob", "--metadata", metadata, stdin="pw\n")
    assert without_flag.exit_code == 1
    assert "pass --password-stdin" in without_flag.stderr
    as_flag = invoke("users", "add", "bob", "--password", "pw", "--metadata", metadata)
    assert as_flag.exit_code == 2
    empty = invoke("users", "add", "bob", "--password-stdin", "--metadata", metadata, stdin="\n")
    assert empty.exit_code == 1
    assert "no password on stdin" in empty.stderr
    assert stored_users(metadata) == {}


@pytest.mark.parametrize(
    ("name", "message"),
    [("bad/name", "may contain only letters, digits"), ("x" * 256, "at most 255 are allowed")],
)
def test_bad_user_name_is_refused_before_the_password_is_read(metadata: str, name: str, message: str) -> None:
    result = invoke("users", "add", name, "--password-stdin", "--metadata", metadata, stdin="pw\n")
    assert result.exit_code == 1
    assert message in result.stderr
    assert stored_users(metadata) == {}


ACL = (
    "--resource-type",
    "topic",
    "--resource-name",
    "orders",
    "--principal",
    "User:alice",
    "--operation",
    "WRITE",
)


def test_acls_add_list_remove_round_trip(metadata: str) -> None:
    added = invoke("acls", "add", *ACL, "--metadata", metadata)
    assert added.exit_code == 0, added.output
    assert added.stdout.startswith("added ACL")
    duplicate = invoke("acls", "add", *ACL, "--metadata", metadata)
    assert duplicate.stdout.startswith("ACL already present")
    other = ("--resource-type", "GROUP", "--resource-name", "g", "--principal", "User:bob", "--operation", "READ")
    assert invoke("acls", "add", *other, "--permission", "DENY", "--metadata", metadata).exit_code == 0

    everything = invoke("acls", "list", "--metadata", metadata)
    assert everything.exit_code == 0, everything.output
    assert "User:alice" in everything.stdout
    assert "User:bob" in everything.stdout
    alice_only = invoke("acls", "list", "--principal", "User:alice", "--metadata", metadata)
    assert "User:alice" in alice_only.stdout
    assert "User:bob" not in alice_only.stdout
    row = next(line.split() for line in alice_only.stdout.splitlines() if "User:alice" in line)
    assert row == ["TOPIC", "orders", "LITERAL", "User:alice", "*", "WRITE", "ALLOW"]

    removed = invoke("acls", "remove", "--resource-type", "TOPIC", "--metadata", metadata)
    assert removed.exit_code == 0, removed.output
    assert removed.stdout.startswith("removed 1 ACL(s)")
    remaining = invoke("acls", "list", "--metadata", metadata)
    assert "User:alice" not in remaining.stdout
    assert "User:bob" in remaining.stdout


def test_acls_remove_without_a_filter_is_refused(metadata: str) -> None:
    invoke("acls", "add", *ACL, "--metadata", metadata)
    refused = invoke("acls", "remove", "--metadata", metadata)
    assert refused.exit_code == 1
    assert refused.stderr.strip() == (
        "highwater: acls remove needs at least one filter option (--resource-type ANY removes every ACL)"
    )
    assert "User:alice" in invoke("acls", "list", "--metadata", metadata).stdout
    everything = invoke("acls", "remove", "--resource-type", "ANY", "--metadata", metadata)
    assert everything.stdout.startswith("removed 1 ACL(s)")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--operation", "WRTIE"), "operation must be one of ALL, READ, WRITE"),
        (
            ("--resource-type", "QUEUE"),
            "resource_type must be one of TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID (got 'QUEUE')",
        ),
        (("--principal", "alice"), "principal must be User:<name> or User:* (got 'alice')"),
        (("--pattern-type", "MATCH"), "pattern_type must be one of LITERAL, PREFIXED"),
    ],
)
def test_acls_add_refuses_bad_values_naming_the_allowed_ones(metadata: str, args: tuple, message: str) -> None:
    fields = dict(zip(ACL[::2], ACL[1::2]))
    fields.update(zip(args[::2], args[1::2]))
    result = invoke("acls", "add", *(part for item in fields.items() for part in item), "--metadata", metadata)
    assert result.exit_code == 1
    assert message in result.stderr
    assert "User:" not in invoke("acls", "list", "--metadata", metadata).stdout


def test_acls_filter_with_a_bad_value_is_refused(metadata: str) -> None:
    result = invoke("acls", "remove", "--permission", "MAYBE", "--metadata", metadata)
    assert result.exit_code == 1
    assert "permission must be one of ANY, ALLOW, DENY (got 'MAYBE')" in result.stderr


def test_quotas_set_list_remove(metadata: str) -> None:
    first = invoke("quotas", "set", "User:alice", "--producer-byte-rate", "1048576", "--metadata", metadata)
    assert first.exit_code == 0, first.output
    assert first.stdout.strip() == ("set quota of User:alice: producer_byte_rate 1048576, consumer_byte_rate unlimited")
    assert invoke("quotas", "set", "User:bob", "--consumer-byte-rate", "2048", "--metadata", metadata).exit_code == 0

    listed = invoke("quotas", "list", "--metadata", metadata)
    rows = [line.split() for line in listed.stdout.splitlines()[1:] if line.strip()]
    assert rows == [["User:alice", "1048576", "unlimited"], ["User:bob", "unlimited", "2048"]]

    assert invoke("quotas", "remove", "User:alice", "--metadata", metadata).exit_code == 0
    assert "User:alice" not in invoke("quotas", "list", "--metadata", metadata).stdout
    missing = invoke("quotas", "remove", "User:alice", "--metadata", metadata)
    assert missing.exit_code == 1
    assert missing.stderr.strip() == "highwater: RESOURCE_NOT_FOUND: no quota for User:alice"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("User:alice",), "set producer_byte_rate, consumer_byte_rate or both"),
        (("User:alice", "--producer-byte-rate", "0"), "producer_byte_rate must be a positive integer"),
        (("alice", "--producer-byte-rate", "10"), "quota principal must be User:<name> (got 'alice')"),
    ],
)
def test_quotas_set_refuses_bad_input(metadata: str, args: tuple, message: str) -> None:
    result = invoke("quotas", "set", *args, "--metadata", metadata)
    assert result.exit_code == 1
    assert message in result.stderr


def test_exactly_one_of_server_and_metadata(metadata: str) -> None:
    neither = invoke("users", "list")
    assert neither.exit_code == 2
    assert (
        "give exactly one of --server/-s (a running broker) and --metadata (the store); got neither" in neither.stderr
    )
    both = invoke("quotas", "list", "-s", "127.0.0.1:1", "--metadata", metadata)
    assert both.exit_code == 2
    assert "got both" in both.stderr


def test_metadata_flag_wins_over_the_server_from_the_environment(metadata: str) -> None:
    result = invoke("users", "list", "--metadata", metadata, env={variables.SERVER: "127.0.0.1:1"})
    assert result.exit_code == 0, result.output
    assert "USER" in result.stdout


def test_a_malformed_metadata_url_is_a_bad_setting() -> None:
    result = invoke("acls", "list", "--metadata", "sqlite://relative.db")
    assert result.exit_code == 2
    assert "--metadata: invalid metadata store URL 'sqlite://relative.db'" in result.stderr
