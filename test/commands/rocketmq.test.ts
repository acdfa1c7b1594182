// The ROCKETMQ command against a real RocketMQ 5 (scripts/ensure-rocketmq.sh: topic spindle-test,
// group spindle-test-group) with mqtt.js subscribers; records are produced with the same client's
// Producer. The commands filter on this run's tag, so messages of other runs are not theirs.
// Messages reach MQTT on the topic the template makes (${topic}, ${tag}, ${keys}, ${value.x},
// ${properties.p}) at QoS 1; stopped and started again mid-stream, every message arrives at least
// once (acknowledged only once published: the unacknowledged come back after invisibleDuration);
// bad config is a 400 naming the field; the secretKey is never answered; a proxy that is not
// there gives state reconnecting; a consumer group that does not exist fails the command.
// needs: broker, rocketmq
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { Producer } from 'rocketmq-client-nodejs';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end } from '../helpers/broker.ts';
import { closedPort, ensureRocketMq } from '../helpers/services.ts';
import { waitFor, WAIT_MS } from '../helpers/wait.ts';
import { addCommand, allArrived, collect, runtime, stateOf } from './helpers.ts';

const ENDPOINTS = '127.0.0.1:18081';
const TOPIC = 'spindle-test';
const GROUP = 'spindle-test-group';
const run = `${process.pid}-${Date.now()}`;
/** This run's messages: the tests consume one after the other, with this filter. */
const tag = `run-${run}`;
const quiet = { info() {}, warn() {}, error() {}, debug() {} };
let b: AdminBroker;
let producer: Producer;

before(async () => {
  ensureRocketMq();
  b = await startAdminBroker();
  producer = new Producer({ endpoints: ENDPOINTS, namespace: '', topic: TOPIC, logger: quiet });
  await producer.startup();
});
after(async () => {
  await producer.shutdown();
  await b.stop();
});

interface Outgoing {
  tag: string;
  body: string;
  keys?: string[];
  properties?: Record<string, string>;
}

/** Sends `messages` to the test topic, 20 at a time. */
async function produce(messages: Outgoing[]): Promise<void> {
  for (let i = 0; i < messages.length; i += 20) {
    await Promise.all(
      messages.slice(i, i + 20).map((m) =>
        producer.send({ topic: TOPIC, tag: m.tag, keys: m.keys, body: Buffer.from(m.body), properties: m.properties ? new Map(Object.entries(m.properties)) : undefined }),
      ),
    );
  }
}

test('messages reach MQTT on the topic the template makes, at QoS 1; the tag filters', async () => {
  const sub = await connect(b.url, { clientId: 'rmq-map-sub' });
  await sub.subscribeAsync('rmq/#', { qos: 1 });
  const got = collect(sub);
  const c = await addCommand(b, {
    name: 'rmq-map',
    type: 'ROCKETMQ',
    config: { endpoints: ENDPOINTS, consumerGroup: GROUP, topic: TOPIC, tag, awaitDuration: 5000, mqttTopic: 'rmq/${topic}/${tag}/${keys}/${properties.site}/${value.t}', qos: 1 },
  });
  await stateOf(b, c.id, 'running', 3 * WAIT_MS);
  await produce([
    { tag, keys: ['a'], body: '{"t":1}', properties: { site: 'north' } },
    { tag: `other-${run}`, keys: ['b'], body: '{"t":2}', properties: { site: 'north' } },
    { tag, keys: ['c'], body: '{"t":3}', properties: { site: 'south' } },
  ]);
  await waitFor(() => got.length >= 2, { message: 'two messages published' });
  assert.deepEqual(got.map((m) => [m.topic, m.payload, m.qos]).sort(), [
    [`rmq/${TOPIC}/${tag}/a/north/1`, '{"t":1}', 1],
    [`rmq/${TOPIC}/${tag}/c/south/3`, '{"t":3}', 1],
  ]);
  const rt = await runtime(b, c.id);
  assert.equal(rt.received, 2);
  assert.equal(rt.published, 2);
  assert.equal(rt.lag, null);
  await b.api('POST', '/command/delete', { body: { id: c.id } });
  await end(sub);
});

test('stopped mid-stream and started again: every message arrives at least once (acknowledged only once published)', async () => {
  const count = 600;
  const sub = await connect(b.url, { clientId: 'rmq-stop-sub' });
  await sub.subscribeAsync('rmqstream/#', { qos: 1 });
  const got = collect(sub);
  const c = await addCommand(b, {
    name: 'rmq-stop',
    type: 'ROCKETMQ',
    config: { endpoints: ENDPOINTS, consumerGroup: GROUP, topic: TOPIC, tag, batchSize: 8, awaitDuration: 5000, invisibleDuration: 10_000, mqttTopic: 'rmqstream/${tag}' },
  });
  await stateOf(b, c.id, 'running', 3 * WAIT_MS);
  await produce([...Array(count).keys()].map((n) => ({ tag, body: JSON.stringify({ n }) })));
  await waitFor(() => got.length >= 50, { message: '50 messages published' });
  const stopped = await b.api('POST', '/command/stop', { body: { id: c.id } });
  assert.equal(stopped.json.data.state, 'stopped');
  const atStop = new Set(got.map((m) => m.payload)).size;
  assert.equal((await b.api('POST', '/command/start', { body: { id: c.id } })).status, 200);
  // What was received but not acknowledged at the stop comes back after invisibleDuration (10 s),
  // when the broker's revive service gets to it: up to a minute here.
  await allArrived(got, count, b, c.id, 3 * WAIT_MS + 60_000);
  assert.ok(atStop < count, `stopped mid-stream (${atStop} of ${count} had arrived)`);
  const rt = await runtime(b, c.id);
  assert.ok(rt.published >= count, JSON.stringify(rt));
  await b.api('POST', '/command/delete', { body: { id: c.id } });
  await end(sub);
});

test('bad config is a 400 naming the field', async () => {
  const good = { endpoints: ENDPOINTS, consumerGroup: GROUP, topic: TOPIC, mqttTopic: 'x' };
  const cases: [Record<string, unknown>, string][] = [
    [{ ...good, endpoints: undefined }, 'config.endpoints'],
    [{ ...good, endpoints: 'http://127.0.0.1:18081' }, 'config.endpoints'],
    [{ ...good, endpoints: '127.0.0.1:99999' }, 'config.endpoints'],
    [{ ...good, consumerGroup: undefined }, 'config.consumerGroup'],
    [{ ...good, topic: 'a b' }, 'config.topic'],
    [{ ...good, tag: ' ' }, 'config.tag'],
    [{ ...good, batchSize: 0 }, 'config.batchSize'],
    [{ ...good, batchSize: 33 }, 'config.batchSize'],
    [{ ...good, invisibleDuration: 500 }, 'config.invisibleDuration'],
    [{ ...good, awaitDuration: 'long' }, 'config.awaitDuration'],
    [{ ...good, accessKey: 'ak' }, 'config.secretKey'],
    [{ ...good, tls: 'yes' }, 'config.tls'],
    [{ ...good, groupId: 'g' }, 'config.groupId'],
    [{ ...good, mqttTopic: undefined }, 'config.mqttTopic'],
  ];
  for (const [config, field] of cases) {
    const r = await b.api('POST', '/command/add', { body: { name: 'rmq-bad', type: 'ROCKETMQ', config } });
    assert.equal(r.status, 400, `${field}: ${r.text}`);
    assert.equal(r.json.field, field, r.text);
  }
  const q = await b.api('POST', '/command/query', { body: { type: 'ROCKETMQ' } });
  assert.deepEqual(q.json.data, []);
});

test('a proxy that is not there: state reconnecting, counted; the secretKey is never answered', async () => {
  const port = await closedPort();
  const secret = `s3cret-${run}`;
  const c = await addCommand(b, {
    name: 'rmq-down',
    type: 'ROCKETMQ',
    config: { endpoints: `127.0.0.1:${port}`, consumerGroup: GROUP, topic: TOPIC, accessKey: 'ak', secretKey: secret, requestTimeout: 1000, mqttTopic: 'x' },
  });
  assert.equal(c.config.accessKey, 'ak');
  assert.equal('secretKey' in c.config, false);
  const rt = await stateOf(b, c.id, 'reconnecting', 3 * WAIT_MS);
  assert.match(rt.lastError, /rocketmq/);
  assert.equal(rt.lastError.includes(secret), false);
  const answers = [
    await b.api('POST', '/command/query', { body: { type: 'ROCKETMQ' } }),
    await b.api('POST', '/command/runtime', { body: { id: c.id } }),
    await b.api('POST', '/command/update', { body: { id: c.id, config: { requestTimeout: 1500 } } }),
  ];
  for (const r of answers) {
    assert.equal(r.status, 200, r.text);
    assert.equal(r.text.includes(secret), false, r.text);
  }
  await b.api('POST', '/command/delete', { body: { id: c.id } });
});

test('a consumer group that does not exist fails the command, saying the group must exist', async () => {
  const c = await addCommand(b, {
    name: 'rmq-nogroup',
    type: 'ROCKETMQ',
    config: { endpoints: ENDPOINTS, consumerGroup: `missing-${run}`, topic: TOPIC, startupTimeout: 5000, mqttTopic: 'x' },
  });
  const rt = await stateOf(b, c.id, 'failed', 3 * WAIT_MS);
  assert.match(rt.lastError, /consumer group "missing-[0-9-]+" must exist/);
  await b.api('POST', '/command/delete', { body: { id: c.id } });
});
