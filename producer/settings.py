"""The producer's settings: ``config.client.ProducerSettings`` and the time bound of back-pressure.

``max_queue_ms`` lives here until it joins ``config.client.ProducerSettings``; the
environment prefix (``HIGHWATER_PRODUCER_``) and every other rule are inherited.
"""

from __future__ import annotations

from pydantic import Field

from config.client import ProducerSettings as BaseProducerSettings


class ProducerSettings(BaseProducerSettings):
    max_queue_ms: int | None = Field(
        100,
        ge=0,
        description=(
            "send() also waits while its partition's oldest unacknowledged batch is older than linger_ms plus this: "
            "under sustained overload records wait about this long for their acknowledgement, not "
            "seconds; None: only buffer_memory bounds what is outstanding"
        ),
    )
