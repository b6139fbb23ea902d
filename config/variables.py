"""The ``HIGHWATER_*`` environment variables that are not broker settings, named once.

A broker refuses at start any ``HIGHWATER_*`` variable that no highwater component reads
(``config.unknown_names``), since a misspelt one would otherwise be ignored without a
word. It shares its environment with the command-line client and the Python clients, so
their variables must be allowed, and allowed by the very names those components read:
the clients' settings take their prefixes from here, and the CLI and ``ClientSecurity``
their variable names, so the list cannot drift from what is read.
"""

from __future__ import annotations

PREFIX = "HIGHWATER_"
"""Every highwater variable starts with this; a broker setting is ``PREFIX`` + its name."""

PRODUCER_PREFIX = f"{PREFIX}PRODUCER_"
CONSUMER_PREFIX = f"{PREFIX}CONSUMER_"
CLIENT_PREFIXES = (PRODUCER_PREFIX, CONSUMER_PREFIX)
"""The Python clients' settings (``config.client``), one variable per setting after the prefix."""

SERVER = f"{PREFIX}SERVER"
USERNAME = f"{PREFIX}USERNAME"
PASSWORD = f"{PREFIX}PASSWORD"
SSL_CA_FILE = f"{PREFIX}SSL_CA_FILE"
SSL_CERT_FILE = f"{PREFIX}SSL_CERT_FILE"
SSL_KEY_FILE = f"{PREFIX}SSL_KEY_FILE"
CLI_VARIABLES = (SERVER, USERNAME, PASSWORD, SSL_CA_FILE, SSL_CERT_FILE, SSL_KEY_FILE)
"""The ``highwater`` command's own variables: the broker to talk to and the client's credentials."""
