// The PULSAR command against a real Pulsar standalone (scripts/ensure-pulsar.sh, WebSocket API on
// 127.0.0.1:8090) with mqtt.js subscribers; records are produced through the WebSocket producer
// endpoint. Messages reach MQTT on the topic the template makes (${shortTopic}, ${key},
// ${value.x}, ${properties.p}) at QoS 1, the lag is the subscription's backlog; stopped and started
// again mid-stream, every message arrives at least once (acknowledged only once published); bad
// config is a 400 naming the field; the token is never answered; a broker that is not there
// gives state reconnecting; a namespace that does not exist fails the command.
// needs: broker, pulsar
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import WebSocket from 'ws';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end } from '../helpers/broker.ts';
import { closedPort, ensurePulsar } from '../helpers/services.ts';
import { waitFor, WAIT_MS } from '../helpers/wait.ts';
import { addCommand, allArrived, collect, runtime, stateOf } from './helpers.ts';

const SERVICE = 'http://127.0.0.1:8090';
const run = `${process.pid}-${Date.now()}`;
let b: AdminBroker;

before(async () => {
  ensurePulsar();
  b = await startAdminBroker();
});
after(() => b.stop());

interface Outgoing {
  body: string;
  key?: string;
  properties?: Record<string, string>;
}

/** Sends `messages` to persistent://public/default/<topic> through the WebSocket producer,
 * waiting for every send's acknowledgement. */
async function produce(topic: string, messages: Outgoing[]): Promise<void> {
  const socket = new WebSocket(`ws://127.0.0.1:8090/ws/v2/producer/persistent/public/default/${topic}`);
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  let acked = 0;
  const all = new Promise<void>((resolve, reject) => {
    socket.on('message', (data) => {
      const answer = JSON.parse(data.toString()) as { result: string; errorMsg?: string };
      if (answer.result !== 'ok') reject(new Error(`pulsar producer: ${data.toString()}`));
      if (++acked === messages.length) resolve();
    });
  });
  messages.forEach((m, i) => socket.send(JSON.stringify({ payload: Buffer.from(m.body).toString('base64'), key: m.key, properties: m.properties, context: String(i) })));
  await all;
  socket.close();
}

test('messages reach MQTT on the topic the template makes, at QoS 1; the lag is the backlog', async () => {
  const topic = `cmd-map-${run}`;
  const sub = await connect(b.url, { clientId: 'pulsar-map-sub' });
  await sub.subscribeAsync('pulsar/#', { qos: 1 });
  const got = collect(sub);
  const c = await addCommand(b, {
    name: 'pulsar-map',
    type: 'PULSAR',
    config: { serviceUrl: SERVICE, topic, subscription: 'spindle', mqttTopic: 'pulsar/${shortTopic}/${key}/${properties.site}/${value.t}', qos: 1 },
  });
  await stateOf(b, c.id, 'running', 3 * WAIT_MS);
  await produce(topic, [
    { key: 'a', body: '{"t":1}', properties: { site: 'north' } },
    { key: 'b', body: '{"t":2}', properties: { site: 'south' } },
  ]);
  await waitFor(() => got.length >= 2, { message: 'two messages published' });
  assert.deepEqual(got.map((m) => [m.topic, m.payload, m.qos]), [
    [`pulsar/${topic}/a/north/1`, '{"t":1}', 1],
    [`pulsar/${topic}/b/south/2`, '{"t":2}', 1],
  ]);
  const rt = await waitFor(async () => {
    const r = await runtime(b, c.id);
    return r.lag === 0 && r;
  }, { message: 'lag 0' });
  assert.equal(rt.received, 2);
  assert.equal(rt.published, 2);
  await b.api('POST', '/command/delete', { body: { id: c.id } });
  await end(sub);
});

test('stopped mid-stream and started again: every message arrives at least once (acknowledged only once published)', async () => {
  const topic = `cmd-stop-${run}`;
  const count = 2000;
  const sub = await connect(b.url, { clientId: 'pulsar-stop-sub' });
  await sub.subscribeAsync('pstream/#', { qos: 1 });
  const got = collect(sub);
  const c = await addCommand(b, { name: 'pulsar-stop', type: 'PULSAR', config: { serviceUrl: SERVICE, topic, subscription: 'spindle', receiverQueueSize: 10, mqttTopic: 'pstream/${shortTopic}' } });
  await stateOf(b, c.id, 'running', 3 * WAIT_MS);
  await produce(topic, [...Array(count).keys()].map((n) => ({ body: JSON.stringify({ n }) })));
  await waitFor(() => got.length >= 50, { message: '50 messages published' });
  const stopped = await b.api('POST', '/command/stop', { body: { id: c.id } });
  assert.equal(stopped.json.data.state, 'stopped');
  const atStop = new Set(got.map((m) => m.payload)).size;
  assert.equal((await b.api('POST', '/command/start', { body: { id: c.id } })).status, 200);
  await allArrived(got, count, b, c.id, 3 * WAIT_MS);
  assert.ok(atStop < count, `stopped mid-stream (${atStop} of ${count} had arrived)`);
  await waitFor(async () => (await runtime(b, c.id)).lag === 0, { message: 'the backlog drained' });
  await b.api('POST', '/command/delete', { body: { id: c.id } });
  await end(sub);
});

test('bad config is a 400 naming the field', async () => {
  const good = { serviceUrl: SERVICE, topic: 't', subscription: 's', mqttTopic: 'x' };
  const cases: [Record<string, unknown>, string][] = [
    [{ ...good, serviceUrl: undefined }, 'config.serviceUrl'],
    [{ ...good, serviceUrl: 'pulsar://127.0.0.1:6650' }, 'config.serviceUrl'],
    [{ ...good, serviceUrl: 'not a url' }, 'config.serviceUrl'],
    [{ ...good, topic: undefined }, 'config.topic'],
    [{ ...good, topic: 'persistent://public/default' }, 'config.topic'],
    [{ ...good, topic: 'a/b' }, 'config.topic'],
    [{ ...good, subscription: '' }, 'config.subscription'],
    [{ ...good, subscriptionType: 'Exclusve' }, 'config.subscriptionType'],
    [{ ...good, receiverQueueSize: 0 }, 'config.receiverQueueSize'],
    [{ ...good, token: 42 }, 'config.token'],
    [{ ...good, queue: 'q' }, 'config.queue'],
  ];
  for (const [config, field] of cases) {
    const r = await b.api('POST', '/command/add', { body: { name: 'pulsar-bad', type: 'PULSAR', config } });
    assert.equal(r.status, 400, `${field}: ${r.text}`);
    assert.equal(r.json.field, field, r.text);
  }
  const q = await b.api('POST', '/command/query', { body: { type: 'PULSAR' } });
  assert.deepEqual(q.json.data, []);
});

test('a broker that is not there: state reconnecting; the token is never answered', async () => {
  const port = await closedPort();
  const token = `tok-${run}`;
  const c = await addCommand(b, { name: 'pulsar-down', type: 'PULSAR', config: { serviceUrl: `http://127.0.0.1:${port}`, topic: 't', subscription: 's', token, connectTimeout: 500, mqttTopic: 'x' } });
  assert.equal('token' in c.config, false);
  const rt = await stateOf(b, c.id, 'reconnecting');
  assert.match(rt.lastError, /pulsar.*(refused|ECONNREFUSED)/i);
  const answers = [
    await b.api('POST', '/command/query', { body: { type: 'PULSAR' } }),
    await b.api('POST', '/command/runtime', { body: { id: c.id } }),
    await b.api('POST', '/command/update', { body: { id: c.id, config: { connectTimeout: 600 } } }),
  ];
  for (const r of answers) {
    assert.equal(r.status, 200, r.text);
    assert.equal(r.text.includes(token), false, r.text);
  }
  await b.api('POST', '/command/delete', { body: { id: c.id } });
});

test('a namespace that does not exist fails the command', async () => {
  const c = await addCommand(b, { name: 'pulsar-nons', type: 'PULSAR', config: { serviceUrl: SERVICE, topic: `persistent://public/missing-${run}/t`, subscription: 's', mqttTopic: 'x' } });
  const rt = await stateOf(b, c.id, 'failed', 3 * WAIT_MS);
  assert.match(rt.lastError, /404/);
  await b.api('POST', '/command/delete', { body: { id: c.id } });
});
