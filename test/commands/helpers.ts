// What the command tests share: adding a command through the admin API, reading its runtime,
// collecting every MQTT message a subscriber receives, and writing records to the real Kafka and
// RabbitMQ the tests run against (scripts/ensure-kafka.sh, scripts/ensure-rabbitmq.sh).
import assert from 'node:assert/strict';

import amqp from 'amqplib';
import { Kafka, logLevel, Partitioners } from 'kafkajs';
import type { MqttClient } from 'mqtt';

import type { AdminBroker } from '../helpers/admin.ts';
import { waitFor } from '../helpers/wait.ts';

export const KAFKA = '127.0.0.1:9092';
export const RABBITMQ = 'amqp://guest:guest@127.0.0.1:5672/';

export interface Received {
  topic: string;
  payload: string;
  qos: number;
}

/** Every message `client` receives from now on, in order of arrival. */
export function collect(client: MqttClient): Received[] {
  const got: Received[] = [];
  client.on('message', (topic, payload, packet) => got.push({ topic, payload: payload.toString(), qos: packet.qos }));
  return got;
}

export async function addCommand(b: AdminBroker, body: Record<string, unknown>): Promise<{ id: string; state: string; config: Record<string, unknown> }> {
  const r = await b.api('POST', '/command/add', { body });
  assert.equal(r.status, 200, r.text);
  assert.equal(typeof r.json.data.id, 'string');
  return r.json.data;
}

export async function runtime(b: AdminBroker, id: string): Promise<Record<string, any>> {
  const r = await b.api('POST', '/command/runtime', { body: { id } });
  assert.equal(r.status, 200, r.text);
  return r.json.data;
}

/** Waits until the command is in `state`; the failure names its runtime. */
export async function stateOf(b: AdminBroker, id: string, state: string, timeout?: number): Promise<Record<string, any>> {
  let last: Record<string, any> = {};
  try {
    return await waitFor(async () => {
      last = await runtime(b, id);
      return last.state === state && last;
    }, { timeout, interval: 100 });
  } catch (err) {
    throw new Error(`command ${id} not ${state}: ${JSON.stringify(last)}`, { cause: err });
  }
}

/** Waits until `got` holds every n of 0..count-1 (payloads `{"n":...}`), naming what is missing. */
export async function allArrived(got: Received[], count: number, b: AdminBroker, id: string, timeout?: number): Promise<Set<number>> {
  const seen = () => new Set(got.map((m) => (JSON.parse(m.payload) as { n: number }).n));
  try {
    await waitFor(() => seen().size === count, { timeout, interval: 50 });
  } catch (err) {
    const s = seen();
    const missing = [...Array(count).keys()].filter((n) => !s.has(n));
    throw new Error(`${missing.length} of ${count} records never arrived (first: ${missing.slice(0, 10).join(', ')}); runtime ${JSON.stringify(await runtime(b, id))}`, { cause: err });
  }
  return seen();
}

export async function produceKafka(topic: string, records: { key?: string; value: string; headers?: Record<string, string> }[]): Promise<void> {
  const kafka = new Kafka({ clientId: 'spindle-command-test', brokers: [KAFKA], logLevel: logLevel.NOTHING });
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  try {
    for (let i = 0; i < records.length; i += 500) await producer.send({ topic, messages: records.slice(i, i + 500) });
  } finally {
    await producer.disconnect();
  }
}

/** A topic with `partitions` partitions (auto-created topics have one). */
export async function createKafkaTopic(topic: string, partitions: number): Promise<void> {
  const admin = new Kafka({ clientId: 'spindle-command-test', brokers: [KAFKA], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: true });
  } finally {
    await admin.disconnect();
  }
}

/** Publishes to a RabbitMQ exchange ('' : the default exchange, routing key = queue name). */
export async function publishRabbit(exchange: string, messages: { routingKey: string; body: string; headers?: Record<string, string> }[]): Promise<void> {
  const connection = await amqp.connect(RABBITMQ);
  try {
    const channel = await connection.createConfirmChannel();
    for (const m of messages) channel.publish(exchange, m.routingKey, Buffer.from(m.body), { headers: m.headers, persistent: true });
    await channel.waitForConfirms();
  } finally {
    await connection.close();
  }
}

/** Deletes a RabbitMQ queue if it exists (a test starts from an empty one). */
export async function deleteQueue(queue: string): Promise<void> {
  const connection = await amqp.connect(RABBITMQ);
  try {
    const channel = await connection.createChannel();
    await channel.deleteQueue(queue);
  } finally {
    await connection.close();
  }
}
