"""Who may call each route: the whole access policy of the HTTP API in one table.

Every route the app registers has exactly one entry here (``create_app`` refuses to
start otherwise), so a new route cannot ship without saying which principal may use
it. An entry says who gets in at all (``anyone``, any ``authenticated`` principal,
or ``brokers`` only) and which ACL checks the security middleware makes before the
handler runs; ``in_handler`` names what the handler checks itself because it needs
the body or filters what it answers (listings show only what the principal may
DESCRIBE, as Kafka's do).

The operations are Kafka's: produce is WRITE on the topic, read is READ, create is
CREATE (on the cluster or the topic), delete is DELETE, a group's commits and
membership are READ on the group, describing a group or its lag is DESCRIBE, and
changing ACLs, users or leadership is ALTER on the cluster. With
``authentication = "none"`` only the ``brokers`` rule applies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from broker.security.acl import AclOperation, ResourceType

Who = Literal["anyone", "authenticated", "brokers"]

CLUSTER = "/v3/clusters/{cluster_id}"
TOPICS = CLUSTER + "/topics"
TOPIC = TOPICS + "/{topic_name}"
PARTITION = TOPIC + "/partitions/{partition_id}"
GROUPS = CLUSTER + "/consumer-groups"
GROUP = GROUPS + "/{consumer_group_id}"
MEMBER = GROUP + "/consumers/{consumer_id}"
TRANSACTION = CLUSTER + "/transactions/{transactional_id}"
V2_GROUP = "/consumers/{consumer_group_id}"
V2_INSTANCE = V2_GROUP + "/instances/{consumer_id}"


@dataclass(frozen=True, slots=True)
class Check:
    """``operation`` on the resource a path parameter names (``name_param``), or on the cluster when None.

    ``hidden_as_missing``: a principal that may not even DESCRIBE the resource is told it
    does not exist, as Kafka answers a topic delete (no existence leak).
    """

    resource_type: ResourceType
    operation: AclOperation
    name_param: str | None
    hidden_as_missing: bool = False


@dataclass(frozen=True, slots=True)
class Access:
    who: Who
    checks: tuple[Check, ...] = ()
    in_handler: str | None = None


def topic(operation: AclOperation, *, hidden_as_missing: bool = False) -> Check:
    return Check(ResourceType.TOPIC, operation, "topic_name", hidden_as_missing)


def group(operation: AclOperation) -> Check:
    return Check(ResourceType.GROUP, operation, "consumer_group_id")


def transactional_id(operation: AclOperation) -> Check:
    return Check(ResourceType.TRANSACTIONAL_ID, operation, "transactional_id")


def cluster(operation: AclOperation) -> Check:
    return Check(ResourceType.CLUSTER, operation, None)


def authorized(*checks: Check, in_handler: str | None = None) -> Access:
    return Access("authenticated", checks, in_handler)


ANYONE = Access("anyone")
AUTHENTICATED = Access("authenticated")
BROKERS = Access("brokers")
READ, WRITE, DESCRIBE = AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE

ROUTE_ACCESS: dict[tuple[str, str], Access] = {
    ("GET", "/healthz"): ANYONE,
    ("GET", "/readyz"): ANYONE,
    ("GET", "/openapi.json"): ANYONE,
    ("GET", "/metrics"): authorized(cluster(DESCRIBE)),
    ("GET", "/v3/clusters"): AUTHENTICATED,
    ("GET", CLUSTER): AUTHENTICATED,
    ("GET", CLUSTER + "/brokers"): AUTHENTICATED,
    ("GET", CLUSTER + "/brokers/{broker_id}"): AUTHENTICATED,
    ("GET", TOPICS): authorized(in_handler="lists only the topics the principal may DESCRIBE"),
    ("POST", TOPICS): authorized(in_handler="CREATE on the cluster or on the topic named in the body"),
    ("GET", TOPIC): authorized(topic(DESCRIBE)),
    ("DELETE", TOPIC): authorized(topic(AclOperation.DELETE, hidden_as_missing=True)),
    ("GET", TOPIC + "/partitions"): authorized(topic(DESCRIBE)),
    ("GET", PARTITION): authorized(topic(DESCRIBE)),
    ("GET", PARTITION + "/offset"): authorized(topic(DESCRIBE)),
    ("POST", CLUSTER + "/partitions:elect-preferred"): authorized(cluster(AclOperation.ALTER)),
    ("POST", TOPIC + "/records"): authorized(topic(WRITE)),
    ("POST", TOPIC + "/records:batch"): authorized(topic(WRITE)),
    ("POST", PARTITION + "/batches"): authorized(
        topic(WRITE), in_handler="WRITE on the TRANSACTIONAL_ID a transactional batch names"
    ),
    ("GET", PARTITION + "/records"): authorized(topic(READ)),
    ("POST", PARTITION + "/records:delete"): authorized(topic(AclOperation.DELETE)),
    ("POST", CLUSTER + "/producer-ids"): authorized(
        in_handler="WRITE on some topic (Kafka's idempotent producer rule, authorizeByResourceType)"
    ),
    ("POST", MEMBER + ":heartbeat"): authorized(group(READ), in_handler="DESCRIBE on every subscribed topic"),
    ("DELETE", MEMBER): authorized(group(READ)),
    ("GET", GROUP + "/consumers"): authorized(group(DESCRIBE)),
    ("GET", MEMBER): authorized(group(DESCRIBE)),
    ("GET", GROUP): authorized(group(DESCRIBE)),
    ("DELETE", GROUP): authorized(group(AclOperation.DELETE)),
    ("POST", GROUP + "/offsets"): authorized(
        group(READ), in_handler="READ on every topic committed to; WRITE on the TRANSACTIONAL_ID a commit names"
    ),
    ("POST", TRANSACTION + "/producer-id"): authorized(transactional_id(WRITE)),
    ("POST", TRANSACTION + "/partitions"): authorized(transactional_id(WRITE), in_handler="WRITE on every topic added"),
    ("POST", TRANSACTION + "/consumer-groups"): authorized(transactional_id(WRITE), in_handler="READ on the group"),
    ("POST", TRANSACTION + ":commit"): authorized(transactional_id(WRITE)),
    ("POST", TRANSACTION + ":abort"): authorized(transactional_id(WRITE)),
    ("GET", TRANSACTION): authorized(transactional_id(DESCRIBE)),
    ("GET", CLUSTER + "/transactions"): authorized(in_handler="lists only the ids the principal may DESCRIBE"),
    ("GET", "/internal/transactions"): BROKERS,
    ("GET", GROUP + "/offsets"): authorized(group(DESCRIBE), in_handler="only topics the principal may DESCRIBE"),
    ("GET", GROUP + "/lags"): authorized(group(DESCRIBE), in_handler="only topics the principal may DESCRIBE"),
    ("GET", GROUP + "/lags/{topic_name}/partitions/{partition_id}"): authorized(group(DESCRIBE), topic(DESCRIBE)),
    ("GET", GROUP + "/lag-summary"): authorized(group(DESCRIBE), in_handler="only topics the principal may DESCRIBE"),
    ("GET", GROUPS): authorized(in_handler="lists only the groups the principal may DESCRIBE"),
    ("GET", CLUSTER + "/acls"): authorized(cluster(DESCRIBE)),
    ("POST", CLUSTER + "/acls"): authorized(cluster(AclOperation.ALTER)),
    ("DELETE", CLUSTER + "/acls"): authorized(cluster(AclOperation.ALTER)),
    ("GET", CLUSTER + "/users"): authorized(cluster(DESCRIBE)),
    ("POST", CLUSTER + "/users"): authorized(cluster(AclOperation.ALTER)),
    ("DELETE", CLUSTER + "/users/{user_name}"): authorized(cluster(AclOperation.ALTER)),
    ("GET", CLUSTER + "/quotas"): authorized(cluster(AclOperation.DESCRIBE_CONFIGS)),
    ("POST", CLUSTER + "/quotas"): authorized(cluster(AclOperation.ALTER_CONFIGS)),
    ("DELETE", CLUSTER + "/quotas/{principal}"): authorized(cluster(AclOperation.ALTER_CONFIGS)),
    ("GET", TOPICS + "/-/configs"): authorized(in_handler="only the topics the principal may DESCRIBE_CONFIGS"),
    ("GET", TOPIC + "/configs"): authorized(topic(AclOperation.DESCRIBE_CONFIGS)),
    ("GET", TOPIC + "/configs/{name}"): authorized(topic(AclOperation.DESCRIBE_CONFIGS)),
    ("PUT", TOPIC + "/configs/{name}"): authorized(topic(AclOperation.ALTER_CONFIGS)),
    ("DELETE", TOPIC + "/configs/{name}"): authorized(topic(AclOperation.ALTER_CONFIGS)),
    ("POST", TOPIC + "/configs:alter"): authorized(topic(AclOperation.ALTER_CONFIGS)),
    ("PATCH", TOPIC): authorized(topic(AclOperation.ALTER)),
    ("GET", PARTITION + "/replicas"): authorized(topic(DESCRIBE)),
    ("GET", PARTITION + "/replicas/{broker_id}"): authorized(topic(DESCRIBE)),
    ("GET", CLUSTER + "/brokers/{broker_id}/partition-replicas"): authorized(
        in_handler="only replicas of topics the principal may DESCRIBE"
    ),
    ("GET", TOPICS + "/-/partitions/-/reassignment"): authorized(cluster(DESCRIBE)),
    ("GET", TOPIC + "/partitions/-/reassignment"): authorized(topic(DESCRIBE)),
    ("GET", PARTITION + "/reassignment"): authorized(topic(DESCRIBE)),
    ("POST", TOPICS + "/-/partitions/-/reassignment:alter"): authorized(cluster(AclOperation.ALTER)),
    ("POST", CLUSTER + "/brokers:drain"): authorized(cluster(AclOperation.ALTER)),
    ("GET", CLUSTER + "/brokers/{broker_id}/log-dirs"): authorized(cluster(AclOperation.DESCRIBE)),
    ("POST", CLUSTER + "/brokers:undrain"): authorized(cluster(AclOperation.ALTER)),
    ("POST", CLUSTER + "/brokers:balance"): authorized(cluster(AclOperation.ALTER)),
    ("GET", MEMBER + "/assignments"): authorized(group(DESCRIBE), in_handler="only topics the principal may DESCRIBE"),
    ("GET", MEMBER + "/assignments/{topic_name}/partitions/{partition_id}"): authorized(
        group(DESCRIBE), topic(DESCRIBE)
    ),
    ("GET", CLUSTER + "/brokers/-/configs"): authorized(cluster(AclOperation.DESCRIBE_CONFIGS)),
    ("GET", CLUSTER + "/brokers/{broker_id}/configs"): authorized(cluster(AclOperation.DESCRIBE_CONFIGS)),
    ("GET", CLUSTER + "/brokers/{broker_id}/configs/{name}"): authorized(cluster(AclOperation.DESCRIBE_CONFIGS)),
    ("PUT", CLUSTER + "/brokers/{broker_id}/configs/{name}"): authorized(cluster(AclOperation.ALTER_CONFIGS)),
    ("DELETE", CLUSTER + "/brokers/{broker_id}/configs/{name}"): authorized(cluster(AclOperation.ALTER_CONFIGS)),
    ("POST", CLUSTER + "/brokers/{broker_id}/configs:alter"): authorized(cluster(AclOperation.ALTER_CONFIGS)),
    ("GET", CLUSTER + "/broker-configs"): authorized(cluster(AclOperation.DESCRIBE_CONFIGS)),
    ("GET", CLUSTER + "/broker-configs/{name}"): authorized(cluster(AclOperation.DESCRIBE_CONFIGS)),
    ("PUT", CLUSTER + "/broker-configs/{name}"): authorized(cluster(AclOperation.ALTER_CONFIGS)),
    ("DELETE", CLUSTER + "/broker-configs/{name}"): authorized(cluster(AclOperation.ALTER_CONFIGS)),
    ("POST", CLUSTER + "/broker-configs:alter"): authorized(cluster(AclOperation.ALTER_CONFIGS)),
    ("POST", CLUSTER + "/acls:batch"): authorized(cluster(AclOperation.ALTER)),
    ("POST", "/internal/fetch"): BROKERS,
    ("GET", "/internal/replication/stream"): BROKERS,
    ("POST", "/internal/controller/topics"): BROKERS,
    ("DELETE", "/internal/controller/topics/{topic}"): BROKERS,
    ("POST", "/internal/controller/controlled-shutdown/{broker_id}"): BROKERS,
    ("POST", "/internal/controller/elect-preferred"): BROKERS,
    ("POST", "/internal/controller/reassignments"): BROKERS,
    ("POST", "/internal/controller/drain/{broker_id}"): BROKERS,
    ("POST", "/internal/controller/undrain/{broker_id}"): BROKERS,
    ("POST", "/internal/controller/balance"): BROKERS,
    ("GET", "/internal/partitions/{topic}"): BROKERS,
    ("GET", "/internal/groups"): BROKERS,
    ("POST", "/internal/controller/groups/offsets-topic"): BROKERS,
    ("POST", "/internal/controller/transactions/state-topic"): BROKERS,
    ("POST", "/internal/txn-markers"): BROKERS,
    ("POST", "/internal/txn-verify"): BROKERS,
    ("POST", "/internal/txn-confirm"): BROKERS,
    ("GET", GROUP + "/lag-history"): authorized(group(DESCRIBE), in_handler="only topics the principal may DESCRIBE"),
    ("GET", TOPIC + "/isr-events"): authorized(topic(DESCRIBE)),
    ("GET", CLUSTER + "/activity"): authorized(cluster(DESCRIBE), in_handler="only topics the principal may DESCRIBE"),
    ("GET", TOPIC + "/replica-offsets"): authorized(topic(DESCRIBE)),
    ("GET", "/internal/console/activity"): BROKERS,
    ("GET", "/internal/console/replica-offsets/{topic}"): BROKERS,
    ("GET", CLUSTER + "/replica-offsets"): authorized(in_handler="only topics the principal may DESCRIBE"),
    ("GET", "/internal/console/replica-offsets"): BROKERS,
    ("GET", "/"): ANYONE,
    ("GET", "/console/"): ANYONE,
    ("GET", "/console"): ANYONE,
    ("GET", "/console/{path}"): ANYONE,
    ("POST", "/internal/controller/topics/{topic}/configs"): BROKERS,
    ("POST", "/internal/controller/topics/{topic}/partitions"): BROKERS,
    ("POST", "/internal/controller/broker-configs"): BROKERS,
    ("POST", "/internal/controller/brokers/{broker_id}/configs"): BROKERS,
    ("POST", V2_GROUP): authorized(group(READ)),
    ("DELETE", V2_INSTANCE): authorized(group(READ)),
    ("POST", V2_INSTANCE + "/subscription"): authorized(group(READ), in_handler="READ on every subscribed topic"),
    ("GET", V2_INSTANCE + "/subscription"): authorized(group(READ)),
    ("DELETE", V2_INSTANCE + "/subscription"): authorized(group(READ)),
    ("POST", V2_INSTANCE + "/assignments"): authorized(group(READ), in_handler="READ on every assigned topic"),
    ("GET", V2_INSTANCE + "/assignments"): authorized(group(READ)),
    ("POST", V2_INSTANCE + "/positions"): authorized(group(READ), in_handler="READ on every topic sought"),
    ("POST", V2_INSTANCE + "/positions/beginning"): authorized(group(READ), in_handler="READ on every topic sought"),
    ("POST", V2_INSTANCE + "/positions/end"): authorized(group(READ), in_handler="READ on every topic sought"),
    ("GET", V2_INSTANCE + "/records"): authorized(group(READ), in_handler="READ on every topic read"),
    ("POST", V2_INSTANCE + "/offsets"): authorized(group(READ), in_handler="READ on every topic committed to"),
    ("GET", V2_INSTANCE + "/offsets"): authorized(group(READ), in_handler="READ on every topic asked about"),
}
