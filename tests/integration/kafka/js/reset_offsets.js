// kafkajs's group tools around admin.resetOffsets({earliest: true}), which commits a literal -2.
// Usage: node reset_offsets.js <bootstrap> <topic> <group> <step> [count]
//   produce <count>: send <count> records to partition 0
//   consume <count>: a fromBeginning group member reads <count> records, commits after them, leaves
//   reset: resetOffsets to earliest, then the offsets fetchOffsets answers
// Prints one JSON line: {"ok": true, ...} or {"ok": false, "error": ...}.
const { Kafka, logLevel } = require("kafkajs");

const TIMEOUT_MS = 30000;

async function produce(kafka, topic, count) {
  const producer = kafka.producer();
  await producer.connect();
  try {
    const messages = Array.from({ length: count }, (_, i) => ({ value: `kjs-${i}`, partition: 0 }));
    await producer.send({ topic, acks: -1, messages });
  } finally {
    await producer.disconnect();
  }
  return { sent: count };
}

async function consume(kafka, topic, groupId, count) {
  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 500 });
  await consumer.connect();
  const values = [];
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    let offsets = null;
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`read ${values.length} of ${count} records`)), TIMEOUT_MS);
      consumer
        .run({
          autoCommit: false,
          eachMessage: async ({ partition, message }) => {
            values.push(message.value.toString());
            if (values.length === count) {
              offsets = [{ topic, partition, offset: (BigInt(message.offset) + 1n).toString() }];
              clearTimeout(timer);
              resolve();
            }
          },
        })
        .catch(reject);
    });
    await consumer.commitOffsets(offsets);
  } finally {
    await consumer.disconnect();
  }
  return { values };
}

async function reset(kafka, topic, groupId) {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.resetOffsets({ groupId, topic, earliest: true });
    const [fetched] = await admin.fetchOffsets({ groupId, topics: [topic] });
    return { offsets: fetched.partitions.map(({ partition, offset }) => [partition, offset]) };
  } finally {
    await admin.disconnect();
  }
}

async function main() {
  const [bootstrap, topic, groupId, step, count] = process.argv.slice(2);
  const kafka = new Kafka({ clientId: "highwater-test", brokers: bootstrap.split(","), logLevel: logLevel.NOTHING });
  const steps = {
    produce: () => produce(kafka, topic, Number(count)),
    consume: () => consume(kafka, topic, groupId, Number(count)),
    reset: () => reset(kafka, topic, groupId),
  };
  const answer = await steps[step]();
  console.log(JSON.stringify({ ok: true, ...answer }));
}

main().catch((error) => {
  console.log(JSON.stringify({ ok: false, error: `${error.name}: ${error.message}` }));
  process.exit(1);
});
