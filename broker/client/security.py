"""``ClientSecurity``: the security options every highwater client takes, under one set of names.

``username``/``password`` (HTTP Basic) and ``ssl_ca_file``/``ssl_cert_file``/``ssl_key_file``
(TLS), exactly the keyword arguments of ``ClusterClient``, so the CLI, the benchmarks and
the Spark connector carry one frozen, picklable value across processes and hand it over
with ``client_options()``. The password is kept out of ``repr``; it reaches only the
client that sends it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from config.variables import PASSWORD, SSL_CA_FILE, SSL_CERT_FILE, SSL_KEY_FILE, USERNAME


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ssl_ca_file: Path | None = None
    ssl_cert_file: Path | None = None
    ssl_key_file: Path | None = None

    @classmethod
    def from_environment(
        cls,
        environ: Mapping[str, str] = os.environ,
        *,
        username: str | None = None,
        ssl_ca_file: Path | None = None,
        ssl_cert_file: Path | None = None,
        ssl_key_file: Path | None = None,
    ) -> ClientSecurity:
        """The values given, each falling back to ``HIGHWATER_<NAME>``; the password only from the environment.

        Each variable is named in ``config.variables``, the list a broker allows in its environment.
        """

        def path(variable: str) -> Path | None:
            value = environ.get(variable)
            return Path(value) if value else None

        return cls(
            username=username or environ.get(USERNAME) or None,
            password=environ.get(PASSWORD) or None,
            ssl_ca_file=ssl_ca_file or path(SSL_CA_FILE),
            ssl_cert_file=ssl_cert_file or path(SSL_CERT_FILE),
            ssl_key_file=ssl_key_file or path(SSL_KEY_FILE),
        )

    @property
    def uses_tls_files(self) -> bool:
        return any((self.ssl_ca_file, self.ssl_cert_file, self.ssl_key_file))

    def client_options(self) -> dict[str, Any]:
        """The ``ClusterClient``/``Producer``/``Consumer`` keyword arguments (same names)."""
        return {
            "username": self.username,
            "password": self.password,
            "ssl_ca_file": self.ssl_ca_file,
            "ssl_cert_file": self.ssl_cert_file,
            "ssl_key_file": self.ssl_key_file,
        }
