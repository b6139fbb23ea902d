"""``UnknownTopics``: the topics and partitions a consumer was told to read that the cluster does not have.

A misspelt topic must not read as an empty one. The HTTP API answers it with 404
``UNKNOWN_TOPIC_OR_PARTITION``; librdkafka's consumer delivers "Subscribed topic not
available: <topic>: Broker: Unknown topic or partition" from ``poll``. Here ``getmany``
raises ``UnknownTopic`` (or ``UnknownPartition``, both ``UnknownTopicOrPartition``)
naming what is missing:

    assigned topic 'ordres' does not exist (ordres-0)
    subscribed topic 'ordres' does not exist
    assigned partition orders-7 does not exist: topic 'orders' has partitions 0..2

A topic may also be missing only for a moment: created a moment after ``assign`` or
``subscribe``, or known to one broker a moment before another. So a suspicion never
raises by itself:

* an assigned partition is suspected when its fetcher's metadata lookup says it does
  not exist (the fetcher keeps retrying, as Kafka's does, and clears the suspicion
  once it finds the partition);
* a topic of a literal subscription is suspected until the metadata knows it (a pattern
  subscription is never checked: it matches what exists);

and ``check``, called by ``getmany``, raises only for what a metadata read made during
that poll confirms is missing. Each missing topic or partition is raised once (as
librdkafka reports a missing topic once) until it is seen to exist or the assignment or
subscription changes: a poll loop that catches the error goes on reading the rest.

Cost: with nothing suspected, ``getmany`` reads one attribute and calls nothing; a poll confirming a
suspicion makes one metadata request per suspected topic. Once every subscribed topic
is known, no poll makes a request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from broker.client.http import ClusterClient
from broker.client.library_log import library_logger
from broker.client.types import TopicPartition
from broker.errors import HighwaterError, UnknownPartition, UnknownTopic, UnknownTopicOrPartition

log = library_logger(__name__)

NO_SUCH_TOPIC = -1
"""``_partition_count``'s answer when a broker said there is no such topic."""
NO_ANSWER = -2
"""No broker answered (unreachable, busy): nothing confirmed, a subscribed topic is checked again next poll."""
NOT_TOLD = -3
"""A broker refused to say (not authorized, say): nothing confirmed; that error reaches the caller elsewhere."""


class UnknownTopics:
    """Suspicions (from the fetchers and the subscription), confirmed at poll time; used from one event loop.

    Invariant: a reported item is not suspected again until ``found``, ``assigned`` or
    ``subscribed`` forgets the report.
    """

    def __init__(self, client: ClusterClient) -> None:
        self._client = client
        self._suspected_partitions: set[TopicPartition] = set()
        self._suspected_topics: set[str] = set()
        self._reported: set[TopicPartition | str] = set()

    @property
    def suspected(self) -> bool:
        """Anything to confirm: all ``getmany``'s fast path reads."""
        return bool(self._suspected_partitions or self._suspected_topics)

    # ------------------------------------------------------------------ suspicions

    def suspect(self, tp: TopicPartition) -> bool:
        """A fetcher's lookup said ``tp`` does not exist; True if that is news (wake ``getmany``)."""
        if tp in self._reported or tp in self._suspected_partitions:
            return False
        self._suspected_partitions.add(tp)
        return True

    def found(self, tp: TopicPartition) -> None:
        """A fetcher found ``tp`` in the metadata: were it to vanish again, that would be news."""
        if self._reported or self._suspected_partitions:
            self._suspected_partitions.discard(tp)
            self._reported.discard(tp)

    def assigned(self, partitions: Iterable[TopicPartition]) -> None:
        """The assignment changed: suspicions and reports of partitions no longer assigned are dropped."""
        kept = set(partitions)
        self._suspected_partitions &= kept
        self._reported = {item for item in self._reported if isinstance(item, str) or item in kept}

    def subscribed(self, topics: Iterable[str]) -> None:
        """A new literal subscription (no topics for a pattern or none): topics the metadata does not know are suspected."""
        self._reported = {item for item in self._reported if isinstance(item, TopicPartition)}
        self._suspected_topics = {topic for topic in topics if not self._client.metadata.knows(topic)}

    # ------------------------------------------------------------------ confirmation

    async def check(self) -> None:
        """Raise for every suspicion a fresh metadata read confirms; drop the ones it refutes.

        A read no broker answered confirms nothing: subscribed topics stay suspected for the
        next poll, partitions are suspected again by their fetcher if still missing. A
        refused read (``NOT_TOLD``) drops the suspicion: asking each poll would not change it.
        ``getmany`` calls it only when ``suspected``, so an ordinary poll awaits nothing here.
        """
        partitions, topics = set(self._suspected_partitions), set(self._suspected_topics)
        names = sorted(topics | {tp.topic for tp in partitions})
        counts = dict(zip(names, await asyncio.gather(*map(self._partition_count, names)), strict=True))
        self._suspected_partitions -= partitions
        self._suspected_topics -= {topic for topic in topics if counts[topic] != NO_ANSWER}
        missing_topics = sorted(topic for topic in topics if counts[topic] == NO_SUCH_TOPIC)
        missing_partitions = sorted(
            tp for tp in partitions if counts[tp.topic] == NO_SUCH_TOPIC or 0 <= counts[tp.topic] <= tp.partition
        )
        if missing_topics or missing_partitions:
            self._reported.update(missing_topics)
            self._reported.update(missing_partitions)
            raise _unknown_error(missing_topics, missing_partitions, counts)

    async def _partition_count(self, topic: str) -> int:
        """The topic's partition count as a broker answers now, else ``NO_SUCH_TOPIC``, ``NO_ANSWER`` or ``NOT_TOLD``."""
        try:
            await self._client.refresh_topic(topic)
        except UnknownTopicOrPartition:
            return NO_SUCH_TOPIC
        except HighwaterError as error:
            log.debug("unknown_topic_check_failed topic=%s error=%s", topic, error.name)
            return NO_ANSWER if error.retriable else NOT_TOLD
        return self._client.metadata.partition_count(topic) or 0


def _unknown_error(
    topics: list[str], partitions: list[TopicPartition], counts: dict[str, int]
) -> UnknownTopicOrPartition:
    """One error naming every missing topic and partition: ``UnknownTopic`` if a topic is missing."""
    lines = [_topics_line("subscribed", topics)] if topics else []
    gone = [tp for tp in partitions if counts[tp.topic] == NO_SUCH_TOPIC]
    if gone:
        lines.append(f"{_topics_line('assigned', sorted({tp.topic for tp in gone}))} ({_names(gone)})")
    lines.extend(
        f"assigned partition {tp.topic}-{tp.partition} does not exist: "
        f"topic '{tp.topic}' has partitions 0..{counts[tp.topic] - 1}"
        for tp in partitions
        if tp not in gone
    )
    message = "; ".join(lines)
    log.warning("consumer_unknown_topic_or_partition %s", message)
    error_class = UnknownTopic if topics or gone else UnknownPartition
    every_topic = sorted(set(topics) | {tp.topic for tp in partitions})
    return error_class(message, topics=every_topic, partitions=[f"{tp.topic}-{tp.partition}" for tp in partitions])


def _topics_line(how: str, topics: list[str]) -> str:
    quoted = ", ".join(f"'{topic}'" for topic in topics)
    return f"{how} topic {quoted} does not exist" if len(topics) == 1 else f"{how} topics {quoted} do not exist"


def _names(partitions: Iterable[TopicPartition]) -> str:
    return ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(partitions))
