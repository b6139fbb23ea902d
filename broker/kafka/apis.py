"""The one table of the Kafka APIs this listener serves: key, versions, handler.

ApiVersions advertises exactly these ranges and the dispatcher refuses everything
outside them, so the two can never disagree. Versions are those librdkafka 2.x,
kafka-python and aiokafka negotiate, capped where a later version needs something
highwater does not have: topic ids (Fetch 13+, Produce 13), ListOffsets' tiered
storage offset (9+), and the lowest versions are the lowest kio generates. AlterConfigs
(0-2) and IncrementalAlterConfigs (0-1) are served at every version kio has, which are
Kafka's, flexible ones included.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from broker.kafka import (
    acls,
    admin,
    alter_configs,
    api_versions,
    authn,
    client_quotas,
    consumer_groups,
    create_partitions,
    delete_records,
    describe_configs,
    describe_log_dirs,
    describe_topic_partitions,
    elect_leaders,
    fetch,
    group_admin,
    group_offsets,
    groups,
    metadata,
    offsets,
    produce,
    producer_ids,
    reassignments,
    scram_admin,
    transaction_admin,
    transactions,
)
from broker.kafka.context import Handler, VersionRange


@dataclass(frozen=True)
class Api:
    key: int
    name: str
    versions: VersionRange
    handler: Handler


API_TABLE: tuple[Api, ...] = (
    Api(0, "Produce", VersionRange(3, 10), produce.handle),
    Api(1, "Fetch", VersionRange(4, 12), fetch.handle),
    Api(2, "ListOffsets", VersionRange(1, 8), offsets.list_offsets),
    Api(3, "Metadata", VersionRange(0, 12), metadata.handle),
    Api(75, "DescribeTopicPartitions", VersionRange(0, 0), describe_topic_partitions.handle),
    Api(17, "SaslHandshake", VersionRange(0, 1), authn.handshake),
    Api(18, "ApiVersions", VersionRange(0, 3), api_versions.handle),
    Api(23, "OffsetForLeaderEpoch", VersionRange(2, 4), offsets.offset_for_leader_epoch),
    Api(19, "CreateTopics", VersionRange(2, 7), admin.create_topics),
    Api(20, "DeleteTopics", VersionRange(1, 6), admin.delete_topics),
    Api(21, "DeleteRecords", VersionRange(0, 2), delete_records.handle),
    Api(37, "CreatePartitions", VersionRange(0, 3), create_partitions.handle),
    Api(22, "InitProducerId", VersionRange(0, 4), producer_ids.handle),
    Api(32, "DescribeConfigs", VersionRange(1, 4), describe_configs.handle),
    Api(33, "AlterConfigs", VersionRange(0, 2), alter_configs.alter_configs),
    Api(44, "IncrementalAlterConfigs", VersionRange(0, 1), alter_configs.incremental_alter_configs),
    Api(45, "AlterPartitionReassignments", VersionRange(0, 1), reassignments.alter_partition_reassignments),
    Api(46, "ListPartitionReassignments", VersionRange(0, 0), reassignments.list_partition_reassignments),
    Api(60, "DescribeCluster", VersionRange(0, 2), admin.describe_cluster),
    Api(35, "DescribeLogDirs", VersionRange(1, 4), describe_log_dirs.handle),
    Api(43, "ElectLeaders", VersionRange(0, 2), elect_leaders.handle),
    Api(36, "SaslAuthenticate", VersionRange(0, 2), authn.authenticate),
    # Security admin (broker.kafka.acls, broker.kafka.scram_admin, broker.kafka.client_quotas)
    Api(29, "DescribeAcls", VersionRange(1, 3), acls.describe_acls),
    Api(30, "CreateAcls", VersionRange(1, 3), acls.create_acls),
    Api(31, "DeleteAcls", VersionRange(1, 3), acls.delete_acls),
    Api(50, "DescribeUserScramCredentials", VersionRange(0, 0), scram_admin.describe),
    Api(51, "AlterUserScramCredentials", VersionRange(0, 0), scram_admin.alter),
    Api(48, "DescribeClientQuotas", VersionRange(0, 1), client_quotas.describe),
    Api(49, "AlterClientQuotas", VersionRange(0, 1), client_quotas.alter),
    # Consumer groups, classic protocol (broker.kafka.groups, broker.kafka.group_offsets)
    Api(8, "OffsetCommit", VersionRange(2, 9), group_offsets.offset_commit),
    Api(9, "OffsetFetch", VersionRange(1, 7), group_offsets.offset_fetch),
    Api(10, "FindCoordinator", VersionRange(0, 4), groups.find_coordinator),
    Api(11, "JoinGroup", VersionRange(0, 9), groups.join_group),
    Api(12, "Heartbeat", VersionRange(0, 4), groups.heartbeat),
    Api(13, "LeaveGroup", VersionRange(0, 5), groups.leave_group),
    Api(14, "SyncGroup", VersionRange(0, 5), groups.sync_group),
    Api(15, "DescribeGroups", VersionRange(0, 5), group_offsets.describe_groups),
    Api(16, "ListGroups", VersionRange(0, 5), group_offsets.list_groups),
    Api(42, "DeleteGroups", VersionRange(0, 2), group_admin.delete_groups),
    Api(47, "OffsetDelete", VersionRange(0, 0), group_admin.offset_delete),
    # Consumer groups, KIP-848's consumer protocol (broker.kafka.consumer_groups)
    Api(68, "ConsumerGroupHeartbeat", VersionRange(0, 1), consumer_groups.heartbeat),
    Api(69, "ConsumerGroupDescribe", VersionRange(0, 1), consumer_groups.describe),
    # Transactions (broker.kafka.transactions)
    Api(24, "AddPartitionsToTxn", VersionRange(0, 3), transactions.add_partitions_to_txn),
    Api(25, "AddOffsetsToTxn", VersionRange(0, 3), transactions.add_offsets_to_txn),
    Api(26, "EndTxn", VersionRange(0, 3), transactions.end_txn),
    Api(28, "TxnOffsetCommit", VersionRange(0, 3), transactions.txn_offset_commit),
    Api(61, "DescribeProducers", VersionRange(0, 0), transaction_admin.describe_producers),
    Api(65, "DescribeTransactions", VersionRange(0, 0), transaction_admin.describe_transactions),
    Api(66, "ListTransactions", VersionRange(0, 1), transaction_admin.list_transactions),
)

APIS: Mapping[int, Api] = MappingProxyType({api.key: api for api in API_TABLE})
SUPPORTED: Mapping[int, VersionRange] = MappingProxyType({api.key: api.versions for api in API_TABLE})
