"""The console's sampling settings: the ``[console]`` table of a broker's settings.

Layered like every broker setting (``config.broker``): the TOML table ``[console]``, or
``HIGHWATER_CONSOLE__<FIELD>`` in the environment (``HIGHWATER_CONSOLE__LAG_SAMPLE_INTERVAL_MS``).
The samplers run on these timers whether or not anyone looks, so a viewer never makes
a broker do sampling work; the ring sizes bound the memory they keep.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ConsoleSettings(BaseModel):
    """Intervals and ring sizes. Defaults: lag every 5 s for an hour, rates every 5 s for five minutes."""

    model_config = ConfigDict(extra="forbid")

    lag_sample_interval_ms: int = Field(
        5000, ge=10, le=3_600_000, description="how often the group coordinator samples each group's lag"
    )
    lag_history_samples: int = Field(
        720, ge=1, le=100_000, description="lag samples kept per group for the lag-over-time chart"
    )
    activity_sample_interval_ms: int = Field(
        5000, ge=10, le=3_600_000, description="how often produce and fetch counters become per-topic rates"
    )
    activity_history_samples: int = Field(
        60, ge=1, le=10_000, description="rate samples kept per topic for the sparklines"
    )
    isr_events_per_topic: int = Field(
        200, ge=1, le=100_000, description="ISR shrinks, expands and leader changes remembered per topic"
    )
