"""Cluster-wide dynamic broker configs: topic defaults changed at runtime (Kafka's ``DYNAMIC_DEFAULT_BROKER_CONFIG``).

A broker's topic defaults are its static settings (``[topic_defaults]``) overlaid with
the configs of the cluster record (``/configs/brokers``), which the controller writes
and every broker's metadata watch applies. They are named as Kafka names the broker
configs that hold topic defaults (``log.retention.ms``, ``min.insync.replicas``,
``num.partitions`` ...; ``config_entries.BROKER_CONFIG_NAMES``). Every reader of a
default reads the overlaid one: topic creation on both doors (counts and configs), each
replica's log and replication core for the topics that do not override the config
(``ReplicaManager.apply_topic_record``), and the controller's election rule.

The record also holds the replication throttle rates when they are set cluster-wide
(``throttle_rates``); they are no topic default, so ``overlay`` leaves them out. Topic
defaults are never set per broker: one value for the whole cluster keeps every replica
of a partition on the same rules, whichever broker holds it.

Pure: no asyncio, no I/O. Invariant: a record that ``altered`` returned always overlays
cleanly, so a broker applying it never meets a value it cannot parse.
"""

from __future__ import annotations

from collections.abc import Mapping

from broker.errors import InvalidConfig
from broker.topics.config_entries import BROKER_CONFIG_NAMES_TO_FIELDS
from broker.topics.throttle_rates import RATE_SETTINGS, parse_rate
from config.topic import TopicDefaults, overlay_named, parse_config_value

DYNAMIC_BROKER_CONFIGS = BROKER_CONFIG_NAMES_TO_FIELDS
"""Kafka broker config name -> the ``TopicDefaults`` field it sets cluster-wide: every topic default."""


def dynamic_config_field(name: str) -> str:
    """The field ``name`` sets; ``InvalidConfig`` naming it when it cannot be set cluster-wide."""
    field = DYNAMIC_BROKER_CONFIGS.get(name)
    if field is None:
        known = ", ".join(sorted([*DYNAMIC_BROKER_CONFIGS, *RATE_SETTINGS]))
        raise InvalidConfig(
            f"config {name} cannot be set cluster-wide: it is not a dynamic broker config of highwater "
            f"(dynamic: {known})",
            config=name,
        )
    return field


def overlay(static: TopicDefaults, configs: Mapping[str, str]) -> TopicDefaults:
    """``static`` with the cluster-wide ``configs`` in place; ``InvalidConfig`` naming the first bad one."""
    defaults = {name: value for name, value in configs.items() if name not in RATE_SETTINGS}
    return overlay_named(TopicDefaults, static.model_dump(), defaults, dynamic_config_field)


def altered(static: TopicDefaults, current: Mapping[str, str], changes: Mapping[str, str | None]) -> dict[str, str]:
    """The cluster record's configs after ``changes`` (None resets to the static setting), all or nothing.

    Every name is checked and the result overlaid on ``static`` before it is returned,
    so a refused alter changes nothing.
    """
    result = dict(current)
    for name, value in changes.items():
        if name in RATE_SETTINGS:
            parsed: object = None if value is None else parse_rate(name, value)
        else:
            field = dynamic_config_field(name)
            parsed = None if value is None else parse_config_value(name, field, value)
        if parsed is None:
            result.pop(name, None)
        else:
            result[name] = str(parsed).lower() if isinstance(parsed, bool) else str(parsed)
    overlay(static, result)
    return result
