"""The connector's security options: the clients' names, checked (files loaded) at ``load()``, and a password
that reaches the executors with the options but never shows in a ``repr``."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from spark_connector.options import OptionError, parse_sink_options, parse_source_options
from tests.support.pki import Pki, make_pki

SERVERS = {"servers": "https://127.0.0.1:9443", "subscribe": "orders"}


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def test_source_takes_the_clients_security_options_and_hides_the_password(pki: Pki) -> None:
    options = parse_source_options(
        {
            **SERVERS,
            "username": "alice",
            "PASSWORD": "s3cret-pw",
            "ssl_ca_file": str(pki.ca_file),
            "ssl_cert_file": str(pki.client_cert),
            "ssl_key_file": str(pki.client_key),
        },
        streaming=False,
    )
    assert options.security.client_options() == {
        "username": "alice",
        "password": "s3cret-pw",
        "ssl_ca_file": pki.ca_file,
        "ssl_cert_file": pki.client_cert,
        "ssl_key_file": pki.client_key,
    }
    assert "s3cret-pw" not in repr(options)
    assert pickle.loads(pickle.dumps(options)).security.password == "s3cret-pw"


def test_sink_takes_the_same_options(pki: Pki) -> None:
    options = parse_sink_options({"servers": SERVERS["servers"], "ssl_ca_file": str(pki.ca_file)})
    assert options.security.ssl_ca_file == pki.ca_file
    assert options.security.username is None


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ({"username": "alice"}, "options 'username' and 'password' go together"),
        ({"password": "s3cret-pw"}, "options 'username' and 'password' go together"),
        ({"username": "al:ice", "password": "s3cret-pw"}, "option 'username' may not contain ':'"),
        ({"ssl_key_file": "/k.pem"}, "TLS options: ssl_key_file needs ssl_cert_file"),
        ({"ssl_ca_file": "/nowhere/ca.pem"}, "TLS options: ssl_ca_file /nowhere/ca.pem: no such file"),
    ],
)
def test_unusable_security_options_fail_at_load_naming_the_option(given: dict[str, str], problem: str) -> None:
    with pytest.raises(OptionError, match=problem) as caught:
        parse_source_options({**SERVERS, **given}, streaming=True)
    assert "s3cret-pw" not in str(caught.value)


def test_an_unreadable_client_key_is_refused(pki: Pki, tmp_path: Path) -> None:
    (tmp_path / "bad.key").write_text("not a key\n")
    options = {**SERVERS, "ssl_cert_file": str(pki.client_cert), "ssl_key_file": str(tmp_path / "bad.key")}
    with pytest.raises(OptionError, match="cannot be loaded"):
        parse_source_options(options, streaming=False)
