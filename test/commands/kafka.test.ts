// The KAFKA command against a real Kafka (scripts/ensure-kafka.sh) with mqtt.js subscribers: records
// reach MQTT on the topic the template makes (${key}, ${value.x}, ${headers.h}) at the configured
// QoS; a record whose topic comes out invalid is counted and skipped; stopped and started again
// mid-stream, or with its broker's only worker killed mid-stream, every record arrives at least
// once (offsets are committed only after the broker has the records); lag comes back to 0; a
// server that is not there gives state reconnecting, counted.
// needs: broker, kafka
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end } from '../helpers/broker.ts';
import { closedPort, ensureKafka } from '../helpers/services.ts';
import { waitFor, WAIT_MS } from '../helpers/wait.ts';
import { KAFKA, addCommand, allArrived, collect, createKafkaTopic, produceKafka, runtime, stateOf } from './helpers.ts';

let b: AdminBroker;
const run = `${process.pid}-${Date.now()}`;

before(async () => {
  ensureKafka();
  // No WebSocket listener: a terminated worker with one open aborts the process (as in worker-crash.test.ts).
  b = await startAdminBroker({ workers: 1, mqtt: { ws: { enabled: false } } });
});
after(() => b.stop());

test('records reach MQTT on the topic the template makes, at QoS 1, the value as payload; an invalid topic is counted, not published', async () => {
  const topic = `cmd-kafka-map-${run}`;
  const sub = await connect(b.url, { clientId: 'kafka-map-sub' });
  await sub.subscribeAsync('plant/#', { qos: 1 });
  const got = collect(sub);
  await produceKafka(topic, [
    { key: 'dev1', value: '{"site":"north","t":21.5}', headers: { unit: 'C' } },
    { key: 'dev2', value: '{"site":"south","t":19}', headers: { unit: 'F' } },
    // '+' in the key makes the topic a filter, not a name: counted as failed (reason topic).
    { key: 'bad+key', value: '{"site":"west"}' },
    { key: 'dev3', value: 'not json' },
  ]);
  const c = await addCommand(b, {
    name: 'kafka-map',
    type: 'KAFKA',
    config: { bootstrapServers: KAFKA, topic, fromBeginning: true, mqttTopic: 'plant/${value.site}/${key}/${headers.unit}', qos: 1 },
  });
  await waitFor(() => got.length >= 3, { message: 'three records published' });
  assert.deepEqual(got.map((m) => [m.topic, m.payload, m.qos]), [
    ['plant/north/dev1/C', '{"site":"north","t":21.5}', 1],
    ['plant/south/dev2/F', '{"site":"south","t":19}', 1],
    // Not JSON: ${value.site} is empty, the level stays (an empty level is a valid topic).
    ['plant//dev3/', 'not json', 1],
  ]);
  const rt = await waitFor(async () => {
    const r = await runtime(b, c.id);
    return r.received === 4 && r.lag === 0 && r;
  }, { message: 'runtime counts 4 received and lag 0' });
  assert.equal(rt.state, 'running');
  assert.equal(rt.published, 3);
  assert.deepEqual(rt.failed, { topic: 1, too_large: 0 });
  assert.match(rt.lastError, /plant\/west\/bad\+key/);
  const metrics = await b.api('GET', '/prometheus');
  assert.match(metrics.text, new RegExp(`spindle_command_published_total\\{command="${c.id}",type="KAFKA"\\} 3`));
  assert.match(metrics.text, new RegExp(`spindle_command_failed_total\\{command="${c.id}",type="KAFKA",reason="topic"\\} 1`));
  assert.match(metrics.text, new RegExp(`spindle_command_state\\{command="${c.id}",type="KAFKA",state="running"\\} 1`));
  assert.match(metrics.text, new RegExp(`spindle_command_lag\\{command="${c.id}",type="KAFKA"\\} 0`));
  await b.api('POST', '/command/delete', { body: { id: c.id } });
  await end(sub);
});

test('stopped mid-stream and started again: every record arrives at least once, and the group resumes from its committed offsets', async () => {
  const topic = `cmd-kafka-stop-${run}`;
  const count = 3000;
  await createKafkaTopic(topic, 3);
  await produceKafka(topic, [...Array(count).keys()].map((n) => ({ key: `k${n % 7}`, value: JSON.stringify({ n }) })));
  const sub = await connect(b.url, { clientId: 'kafka-stop-sub' });
  await sub.subscribeAsync('stream/#', { qos: 1 });
  const got = collect(sub);
  const c = await addCommand(b, { name: 'kafka-stop', type: 'KAFKA', config: { bootstrapServers: KAFKA, topic, fromBeginning: true, batchSize: 10, mqttTopic: 'stream/${partition}' } });
  await waitFor(() => got.length >= 100, { message: '100 records published' });
  const stopped = await b.api('POST', '/command/stop', { body: { id: c.id } });
  assert.equal(stopped.status, 200, stopped.text);
  assert.equal(stopped.json.data.state, 'stopped');
  assert.equal(stopped.json.data.enabled, false);
  const atStop = got.length;
  const before = await runtime(b, c.id);
  const started = await b.api('POST', '/command/start', { body: { id: c.id } });
  assert.equal(started.status, 200, started.text);
  await allArrived(got, count, b, c.id, 3 * WAIT_MS);
  const rt = await waitFor(async () => {
    const r = await runtime(b, c.id);
    return r.lag === 0 && r;
  }, { message: 'lag back to 0' });
  // Resumed from the committed offsets, not from the beginning: at most a batch per partition again.
  assert.ok(rt.received - before.received <= count - atStop + 3 * 500, `received ${rt.received - before.received} after the restart, ${count - atStop} were left`);
  assert.ok(atStop < count, `stopped mid-stream (${atStop} of ${count} had arrived)`);
  await b.api('POST', '/command/delete', { body: { id: c.id } });
  await end(sub);
});

test("the broker's only worker killed mid-stream: the batch is sent again once it is back, every record arrives at least once", async () => {
  const topic = `cmd-kafka-crash-${run}`;
  const count = 2000;
  await produceKafka(topic, [...Array(count).keys()].map((n) => ({ value: JSON.stringify({ n }) })));
  // A persistent session: what is published while the worker is down waits in the store for it.
  const sub = await connect(b.url, { clientId: 'kafka-crash-sub', clean: false, reconnectPeriod: 200 });
  await sub.subscribeAsync('crash/#', { qos: 1 });
  const got = collect(sub);
  const c = await addCommand(b, { name: 'kafka-crash', type: 'KAFKA', config: { bootstrapServers: KAFKA, topic, fromBeginning: true, batchSize: 5, mqttTopic: 'crash/${offset}' } });
  await waitFor(() => got.length >= 50, { message: '50 records published' });
  await b.supervisor.workers[0]!.terminate();
  await allArrived(got, count, b, c.id, 3 * WAIT_MS);
  const rt = await runtime(b, c.id);
  assert.ok(rt.publishRetries > 0, `the broker refused a batch while its worker was down: ${JSON.stringify(rt)}`);
  await b.api('POST', '/command/delete', { body: { id: c.id } });
  await end(sub);
});

test('a Kafka that is not there: state reconnecting with the error, reconnects counted', async () => {
  const port = await closedPort();
  const c = await addCommand(b, { name: 'kafka-down', type: 'KAFKA', config: { bootstrapServers: `127.0.0.1:${port}`, topic: 'x', mqttTopic: 'x', connectTimeout: 500 } });
  const rt = await stateOf(b, c.id, 'reconnecting');
  assert.match(rt.lastError, /refused|ECONNREFUSED|Connection/i);
  await waitFor(async () => (await runtime(b, c.id)).reconnects >= 2, { message: 'a second reconnect' });
  const del = await b.api('POST', '/command/delete', { body: { id: c.id } });
  assert.equal(del.status, 200, del.text);
});
