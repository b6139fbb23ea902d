// kafkajs against highwater: producers (acks -1, 1 and 0; idempotent; gzip), a group consumer, and the admin calls.
// Usage: node matrix.js <bootstrap> <prefix>; prints one JSON line of what each step saw, or {"ok": false, "error"}.
const {
  Kafka,
  logLevel,
  CompressionTypes,
  AclResourceTypes,
  AclOperationTypes,
  AclPermissionTypes,
  ResourcePatternTypes,
} = require("kafkajs");

const TIMEOUT_MS = 30000;

async function produceEveryWay(kafka, topic) {
  const plain = kafka.producer({ allowAutoTopicCreation: false });
  const idempotent = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await Promise.all([plain.connect(), idempotent.connect()]);
  try {
    for (const acks of [-1, 1, 0]) {
      await plain.send({ topic, acks, messages: [{ key: `k${acks}`, value: `acks${acks}` }] });
    }
    await plain.send({ topic, compression: CompressionTypes.GZIP, messages: [{ value: "gzip-1" }, { value: "gzip-2" }] });
    await idempotent.send({ topic, acks: -1, messages: [{ value: "idem-1" }, { value: "idem-2" }] });
  } finally {
    await Promise.all([plain.disconnect(), idempotent.disconnect()]);
  }
}

async function consumeInGroup(kafka, topic, groupId, count) {
  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 500 });
  await consumer.connect();
  const values = [];
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`read ${values.length} of ${count}`)), TIMEOUT_MS);
      consumer
        .run({
          eachMessage: async ({ message }) => {
            values.push(message.value.toString());
            if (values.length === count) {
              clearTimeout(timer);
              resolve();
            }
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
  return values.sort();
}

async function partitionsOnceKnown(admin, topic, count) {
  // The broker that grew the topic answered once it knew; the one asked next may learn it a moment later.
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    const found = (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0].partitions.length;
    if (found === count || Date.now() > deadline) return found;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function adminCalls(admin, topic, groupId) {
  const seen = {};
  await admin.createPartitions({ topicPartitions: [{ topic, count: 3 }] });
  seen.partitions = await partitionsOnceKnown(admin, topic, 3);
  seen.groupOffsets = (await admin.fetchOffsets({ groupId, topics: [topic] }))[0].partitions
    .filter((p) => p.partition === 0)
    .map((p) => p.offset);
  seen.groupsListed = (await admin.listGroups()).groups.some((g) => g.groupId === groupId);
  await admin.deleteGroups([groupId]);
  seen.groupsAfterDelete = (await admin.listGroups()).groups.some((g) => g.groupId === groupId);
  const acl = {
    resourceType: AclResourceTypes.TOPIC,
    resourceName: topic,
    resourcePatternType: ResourcePatternTypes.LITERAL,
    principal: "User:kafkajs-reader",
    host: "*",
    operation: AclOperationTypes.READ,
    permissionType: AclPermissionTypes.ALLOW,
  };
  await admin.createAcls({ acl: [acl] });
  const described = await admin.describeAcls({
    resourceType: AclResourceTypes.TOPIC,
    resourceName: topic,
    resourcePatternType: ResourcePatternTypes.LITERAL,
    operation: AclOperationTypes.ANY,
    permissionType: AclPermissionTypes.ANY,
  });
  seen.aclPrincipals = described.resources.flatMap((r) => r.acls.map((a) => a.principal));
  const deleted = await admin.deleteAcls({ filters: [{ ...acl, operation: AclOperationTypes.ANY }] });
  seen.aclsDeleted = deleted.filterResponses[0].matchingAcls.length;
  seen.reassignments = (await admin.listPartitionReassignments({})).topics.length;
  seen.clusterBrokers = (await admin.describeCluster()).brokers.length;
  return seen;
}

async function main() {
  const [bootstrap, prefix] = process.argv.slice(2);
  const kafka = new Kafka({ clientId: "highwater-matrix", brokers: bootstrap.split(","), logLevel: logLevel.NOTHING });
  const topic = `${prefix}-topic`;
  const groupId = `${prefix}-group`;
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 3, configEntries: [{ name: "min.insync.replicas", value: "2" }] }] });
    await produceEveryWay(kafka, topic);
    const consumed = await consumeInGroup(kafka, topic, groupId, 7);
    const seen = await adminCalls(admin, topic, groupId);
    console.log(JSON.stringify({ ok: true, consumed, ...seen }));
  } finally {
    await admin.disconnect();
  }
}

main().catch((error) => {
  console.log(JSON.stringify({ ok: false, error: `${error.name}: ${error.message}` }));
  process.exit(1);
});
