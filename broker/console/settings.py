"""The console's sampling settings, read from ``HIGHWATER_CONSOLE_*`` environment variables.

They are broker settings in meaning (``console_lag_sample_interval_ms`` …) and are named
so that the same variables keep working once they are fields of
``config.broker.BrokerSettings`` (its prefix is ``HIGHWATER_``, so its field
``console_lag_sample_interval_ms`` reads ``HIGHWATER_CONSOLE_LAG_SAMPLE_INTERVAL_MS``).
Until then they come from the environment only, not from the TOML file or flags.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class ConsoleSettings(BaseSettings):
    """Intervals and ring sizes. Defaults: lag every 5 s for an hour, rates every 5 s for five minutes."""

    model_config = SettingsConfigDict(env_prefix="HIGHWATER_CONSOLE_", extra="ignore")

    lag_sample_interval_ms: int = Field(5000, ge=10, le=3_600_000)
    lag_history_samples: int = Field(720, ge=1, le=100_000)
    activity_sample_interval_ms: int = Field(5000, ge=10, le=3_600_000)
    activity_history_samples: int = Field(60, ge=1, le=10_000)
    isr_events_per_topic: int = Field(200, ge=1, le=100_000)
