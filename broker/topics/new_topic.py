"""A request to create a topic, as every door and the controller pass it on.

One value from the door that parsed it (HTTP's ``POST …/topics``, Kafka's
CreateTopics) through the node and the broker-to-broker call to the controller and
its term, so the five fields travel together and no layer reorders them. It is also
the body of the internal ``POST /internal/controller/topics``, validated strictly.

``assignment`` is the creator's replica lists by partition (the first replica of each
is the preferred leader), or None to let the controller place replicas; when given, its
lengths are the counts that count (Kafka's ``replicaAssignment``).
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from config.topic import TopicDefaults


class NewTopic(BaseModel):
    """See the module docstring. The checks belong to whoever acts on it, not to this value."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    partitions_count: int
    replication_factor: int
    configs: dict[str, str] = Field(default_factory=dict)
    assignment: list[list[int]] | None = None

    @classmethod
    def requested(
        cls,
        name: str,
        partitions_count: int | None,
        replication_factor: int | None,
        configs: Mapping[str, str],
        assignment: list[list[int]] | None,
        defaults: TopicDefaults,
    ) -> NewTopic:
        """What a create request means: a count it leaves out is the broker's default (``num.partitions``,
        ``default.replication.factor``), and a manual assignment's lengths override both."""
        if assignment is not None:
            partitions_count, replication_factor = len(assignment), len(assignment[0])
        return cls(
            name=name,
            partitions_count=defaults.partitions if partitions_count is None else partitions_count,
            replication_factor=defaults.replication_factor if replication_factor is None else replication_factor,
            configs=dict(configs),
            assignment=assignment,
        )
