"""Resolving a topic's configs: Kafka-named strings -> ``TopicConfig`` -> ``LogConfig``.

Topic records keep only the configs their creator gave; everything else comes from
the broker's ``topic_defaults``, so changing a default reaches every topic that did
not override it, as in Kafka.
"""

from __future__ import annotations

from broker.storage import LogConfig
from config.topic import TopicConfig, TopicDefaults, parse_topic_configs, topic_config_strings


class TopicConfigs:
    """The broker's defaults and the conversions every topic config goes through."""

    def __init__(self, defaults: TopicDefaults) -> None:
        self.defaults = defaults
        self._default_config = defaults.topic_config()

    def parse(self, configs: dict[str, str]) -> TopicConfig:
        """Raise ``InvalidConfig`` naming the first bad config."""
        return parse_topic_configs(configs, self._default_config)

    def effective(self, configs: dict[str, str]) -> dict[str, str]:
        return topic_config_strings(self.parse(configs))

    def log_config(self, configs: dict[str, str]) -> LogConfig:
        config = self.parse(configs)
        return LogConfig(
            segment_bytes=config.segment_bytes,
            segment_ms=config.segment_ms,
            index_interval_bytes=config.index_interval_bytes,
            retention_ms=config.retention_ms,
            retention_bytes=config.retention_bytes,
            max_message_bytes=config.max_message_bytes,
            flush_policy=config.flush_policy,
            flush_interval_ms=config.flush_interval_ms,
            cleanup_policy=config.cleanup_policy,
            delete_retention_ms=config.delete_retention_ms,
        )
