"""highwater settings: pydantic-settings models for the broker, topics and the clients."""

from config.broker import BrokerSettings, load_broker_settings
from config.client import ConsumerSettings, ProducerSettings
from config.errors import ConfigFileError, format_settings_error
from config.topic import TopicConfig, TopicDefaults, parse_topic_configs

__all__ = [
    "BrokerSettings",
    "ConfigFileError",
    "ConsumerSettings",
    "ProducerSettings",
    "TopicConfig",
    "TopicDefaults",
    "format_settings_error",
    "load_broker_settings",
    "parse_topic_configs",
]
