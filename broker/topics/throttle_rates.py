"""The replication throttle rates as broker configs: their names, values and Kafka's precedence. Pure.

``leader.replication.throttled.rate`` and ``follower.replication.throttled.rate``
(bytes per second, ``broker.replication.throttle``) are the only configs one broker
may set for itself (``/configs/brokers/<id>``): a rate shares out one broker's disk and
network, whereas a topic default set per broker would let replicas of one partition
follow different rules. Both may also be set cluster-wide (``/configs/brokers``) and in
the broker's settings file.

Precedence, Kafka's, highest first: per-broker dynamic, cluster-wide dynamic, the
broker's static setting, Kafka's default (unlimited). ``layers`` lists where a rate is
set in that order, so the one in force is the first and a describe lists the rest as
its synonyms.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from broker.errors import InvalidConfig
from config.broker import UNLIMITED_RATE, BrokerSettings

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
RATE_SETTINGS = {LEADER_RATE: "leader_replication_throttled_rate", FOLLOWER_RATE: "follower_replication_throttled_rate"}
"""Kafka's config name -> the ``BrokerSettings`` field that sets it statically."""


class Layer(enum.Enum):
    """Where a rate is set (``config_entries`` labels each with Kafka's config source)."""

    PER_BROKER = "per-broker dynamic"
    CLUSTER = "cluster-wide dynamic"
    STATIC = "static"
    DEFAULT = "default"


def parse_rate(name: str, value: str) -> int:
    """``value`` as a rate in bytes per second; ``InvalidConfig`` naming ``name`` unless it is one."""
    try:
        rate = int(value)
    except ValueError:
        rate = -1
    if not 0 <= rate <= UNLIMITED_RATE:
        raise InvalidConfig(
            f"invalid config {name}: must be a whole number of bytes per second from 0 to {UNLIMITED_RATE} "
            f"(got {value!r})",
            config=name,
        )
    return rate


def per_broker_altered(current: Mapping[str, str], changes: Mapping[str, str | None]) -> dict[str, str]:
    """One broker's dynamic configs after ``changes`` (None removes one), all or nothing.

    ``InvalidConfig`` names the first config that cannot be set per broker, or whose value is bad.
    """
    result = dict(current)
    for name, value in changes.items():
        if name not in RATE_SETTINGS:
            allowed = " and ".join(RATE_SETTINGS)
            raise InvalidConfig(
                f"config {name} cannot be set for one broker: only {allowed} can; set topic defaults for the "
                "whole cluster instead (/broker-configs, or the broker resource with the empty name)",
                config=name,
            )
        if value is None:
            result.pop(name, None)
        else:
            result[name] = str(parse_rate(name, value))
    return result


def layers(
    name: str, settings: BrokerSettings, cluster_wide: Mapping[str, str], per_broker: Mapping[str, str]
) -> list[tuple[int, Layer]]:
    """Every value of rate ``name`` a broker has, highest precedence first; the first is in force."""
    found = [(int(per_broker[name]), Layer.PER_BROKER)] if name in per_broker else []
    if name in cluster_wide:
        found.append((int(cluster_wide[name]), Layer.CLUSTER))
    static = getattr(settings, RATE_SETTINGS[name])
    found.append((static, Layer.DEFAULT if static == UNLIMITED_RATE else Layer.STATIC))
    return found


def rate_in_force(
    name: str, settings: BrokerSettings, cluster_wide: Mapping[str, str], per_broker: Mapping[str, str]
) -> int:
    """The value of rate ``name`` this broker applies."""
    return layers(name, settings, cluster_wide, per_broker)[0][0]
