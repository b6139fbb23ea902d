"""A Spark Kafka query's security settings, read as highwater's: so a secured query runs unchanged.

Spark's Kafka source passes ``kafka.``-prefixed settings to its Kafka clients; a secured
query usually carries three of them:

- ``kafka.security.protocol``: ``PLAINTEXT``, ``SSL``, ``SASL_PLAINTEXT`` or ``SASL_SSL``.
  ``SSL`` and ``SASL_SSL`` read a ``host:port`` server as ``https://`` (an explicit
  ``http://`` URL then contradicts it and is refused);
- ``kafka.sasl.mechanism``: ``PLAIN``, ``SCRAM-SHA-256`` or ``SCRAM-SHA-512``, whose user
  and password highwater's HTTP listeners take as Basic credentials (the same users);
  any other mechanism (``GSSAPI``, Kafka's default, or ``OAUTHBEARER``) is refused;
- ``kafka.sasl.jaas.config``: ``<LoginModule> required username="…" password="…";``,
  from which the user and password are taken. Given beside ``username``/``password``,
  the two must agree.

Trust for ``https://`` comes from ``ssl_ca_file`` (PEM) or the system's store; a JKS
truststore has no highwater counterpart.
"""

from __future__ import annotations

import re

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
KAFKA_SECURITY_NAMES = ("kafka.security.protocol", "kafka.sasl.mechanism", "kafka.sasl.jaas.config")
_JAAS_FIELD = re.compile(r'\b(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"')


class KafkaSecurityError(ValueError):
    """Kafka security settings highwater cannot honour; the message names the setting."""


def kafka_security(options: dict[str, str]) -> tuple[dict[str, str], bool]:
    """The ``username``/``password`` the ``kafka.`` security settings of ``options`` give (lower-cased
    names, as Spark hands them), and whether they ask for TLS."""
    protocol = options.get("kafka.security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in SECURITY_PROTOCOLS:
        raise KafkaSecurityError(
            f"option 'kafka.security.protocol' must be one of {', '.join(SECURITY_PROTOCOLS)}, got {protocol!r}"
        )
    sasl = protocol.startswith("SASL_")
    given = [name for name in ("kafka.sasl.mechanism", "kafka.sasl.jaas.config") if name in options]
    if given and not sasl:
        raise KafkaSecurityError(f"option {given[0]!r} needs 'kafka.security.protocol' SASL_PLAINTEXT or SASL_SSL")
    if not sasl:
        return {}, protocol == "SSL"
    mechanism = options.get("kafka.sasl.mechanism", "GSSAPI").strip().upper()
    if mechanism not in SASL_MECHANISMS:
        raise KafkaSecurityError(
            f"option 'kafka.sasl.mechanism' {mechanism!r} is not one highwater takes: "
            f"{', '.join(SASL_MECHANISMS)} (their user and password become HTTP Basic credentials)"
        )
    jaas = options.get("kafka.sasl.jaas.config")
    if jaas is None:
        raise KafkaSecurityError("option 'kafka.sasl.jaas.config' is required with SASL: it names the user")
    fields = {name: value.replace('\\"', '"') for name, value in _JAAS_FIELD.findall(jaas)}
    if set(fields) != {"username", "password"}:
        raise KafkaSecurityError('option \'kafka.sasl.jaas.config\' must give username="…" and password="…"')
    return fields, protocol == "SASL_SSL"
