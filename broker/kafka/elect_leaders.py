"""ElectLeaders (43): ``kafka-leader-election`` and the admin clients' ``elect_leaders``, as the controller elects.

ALTER on the cluster (else ``CLUSTER_AUTHORIZATION_FAILED`` for the request), as the
HTTP ``partitions:elect-preferred`` asks.

- PREFERRED (0): the controller's one preferred election (``partitions:elect-preferred``'s)
  on the partitions named, or on every partition when none are. Each partition named
  answers: elected, ``ELECTION_NOT_NEEDED`` when its preferred replica already leads,
  ``PREFERRED_LEADER_NOT_AVAILABLE`` when that replica is not alive and in sync (it is
  never made leader then: that could lose acknowledged records). With none named, the
  answer lists the partitions whose leader moved, as Kafka's does.
- UNCLEAN (1): only where the topic allows it (``unclean.leader.election.enable``; Kafka
  elects regardless, highwater keeps the topic's word: a topic that forbids data loss is
  never given it by one admin call), and there the controller already elects any live
  replica the moment the in-sync ones are gone. So a partition with a leader answers
  ``ELECTION_NOT_NEEDED``, one without ``ELIGIBLE_LEADERS_NOT_AVAILABLE`` (no replica is
  alive), and a topic that does not allow it ``INVALID_REQUEST`` saying so. UNCLEAN
  needs partitions named, as in Kafka.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32

from broker.errors import HighwaterError, UnknownTopicOrPartition
from broker.kafka import authz
from broker.kafka.codec import DecodedRequest
from broker.kafka.context import RequestContext
from broker.kafka.errors import kafka_error_code
from broker.kafka.shapes import NO_THROTTLE, build, shape
from broker.security.acl import AclOperation

API_KEY = 43
PREFERRED = 0
UNCLEAN = 1

Outcome = tuple[ErrorCode, str | None]


async def handle(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    body = request.body
    election_type = int(getattr(body, "election_type", PREFERRED))
    response_class = shape(API_KEY, version, "ElectLeadersResponse")
    asked = (
        None
        if body.topic_partitions is None
        else [(t.topic, int(p)) for t in body.topic_partitions for p in t.partitions]
    )
    refused = authz.cluster_refusal(context.node, AclOperation.ALTER)
    if refused is not None:
        return _response(version, response_class, refused[0], dict.fromkeys(asked or [], refused))
    if election_type not in (PREFERRED, UNCLEAN) or (election_type == UNCLEAN and asked is None):
        message = "election_type must be 0 (preferred) or 1 (unclean), and unclean names its partitions"
        return _response(
            version,
            response_class,
            ErrorCode.invalid_request,
            {tp: (ErrorCode.invalid_request, message) for tp in asked or []},
        )
    outcomes: dict[tuple[str, int], Outcome]
    if election_type == PREFERRED:
        outcomes = await _preferred(context, asked)
    else:
        outcomes = {tp: _unclean(context, *tp) for tp in asked or []}
    return _response(version, response_class, ErrorCode.none, outcomes)


async def _preferred(context: RequestContext, asked: list[tuple[str, int]] | None) -> dict[tuple[str, int], Outcome]:
    gateway = context.node.controller_gateway
    known: list[tuple[str, int]] = []
    outcomes: dict[tuple[str, int], Outcome] = {}
    for tp in asked or []:
        try:
            context.node.catalog.partition_record(*tp)
            known.append(tp)
        except HighwaterError as error:
            outcomes[tp] = (kafka_error_code(error), error.message)
    if asked is not None and not known:
        return outcomes
    try:
        answer = await (
            gateway.elect_preferred_leaders() if asked is None else gateway.elect_preferred_partitions(known)
        )
    except HighwaterError as error:
        return {**outcomes, **{tp: (kafka_error_code(error), error.message) for tp in known}}
    elected = {(record["topic"], record["partition"]) for record in answer["elected"]}
    if asked is None:
        return {tp: (ErrorCode.none, None) for tp in sorted(elected)}
    for tp in known:
        if tp in elected:
            outcomes[tp] = (ErrorCode.none, None)
            continue
        record = context.node.catalog.partition_record(*tp)
        if record.replicas and record.leader == record.replicas[0]:
            outcomes[tp] = (ErrorCode.election_not_needed, f"broker {record.leader}, the preferred replica, leads it")
        else:
            outcomes[tp] = (
                ErrorCode.preferred_leader_not_available,
                f"the preferred replica {record.replicas[0] if record.replicas else -1} is not alive and in sync",
            )
    return outcomes


def _unclean(context: RequestContext, topic: str, partition: int) -> Outcome:
    try:
        record = context.node.catalog.partition_record(topic, partition)
        allowed = context.node.topic_configs.parse(context.node.catalog.topic(topic).configs)
    except UnknownTopicOrPartition as error:
        return kafka_error_code(error), error.message
    if not allowed.unclean_leader_election_enable:
        return (
            ErrorCode.invalid_request,
            f"topic '{topic}' does not allow unclean leader election (unclean.leader.election.enable=false)",
        )
    if record.leader >= 0:
        return ErrorCode.election_not_needed, f"broker {record.leader} leads it"
    return ErrorCode.eligible_leaders_not_available, "no replica of it is alive"


def _response(version: int, response_class: type, code: ErrorCode, outcomes: dict[tuple[str, int], Outcome]) -> Any:
    result_class = shape(API_KEY, version, "ReplicaElectionResult")
    partition_class = shape(API_KEY, version, "PartitionResult")
    topics: dict[str, list[Any]] = {}
    for (topic, partition), (error_code, message) in outcomes.items():
        topics.setdefault(topic, []).append(
            build(partition_class, partition_id=i32(partition), error_code=error_code, error_message=message)
        )
    results = tuple(build(result_class, topic=topic, partition_result=tuple(found)) for topic, found in topics.items())
    return build(response_class, throttle_time=NO_THROTTLE, error_code=code, replica_election_results=results)
