// The RABBITMQ command against a real RabbitMQ (scripts/ensure-rabbitmq.sh) with mqtt.js
// subscribers: deliveries reach MQTT on the topic the template makes (${routingKey},
// ${headers.h}, ${value.x}); stopped and started again mid-stream every message arrives at least
// once (acknowledged only once the broker has it); RabbitMQ stopped and started: state
// reconnecting, then running again with nothing lost; a queue that does not exist fails the
// command until it is started again; a command survives a broker restart.
// needs: broker, rabbitmq
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end } from '../helpers/broker.ts';
import { ensureRabbitMq, stopRabbitMq } from '../helpers/services.ts';
import { waitFor, WAIT_MS } from '../helpers/wait.ts';
import { RABBITMQ, addCommand, allArrived, collect, deleteQueue, publishRabbit, runtime, stateOf } from './helpers.ts';

const dataDir = mkdtempSync(path.join(tmpdir(), 'spindle-commands-'));
const run = `${process.pid}-${Date.now()}`;
let b: AdminBroker;

before(async () => {
  ensureRabbitMq();
  b = await startAdminBroker({ dataDir });
});
after(async () => {
  await b.stop();
  ensureRabbitMq();
});

test('deliveries reach MQTT on the topic the template makes, at QoS 1; the queue is declared and bound to the exchange', async () => {
  const queue = `cmd-map-${run}`;
  const exchange = `cmd-ex-${run}`;
  const sub = await connect(b.url, { clientId: 'rabbit-map-sub' });
  await sub.subscribeAsync('rabbit/#', { qos: 1 });
  const got = collect(sub);
  const c = await addCommand(b, {
    name: 'rabbit-map',
    type: 'RABBITMQ',
    config: { url: RABBITMQ, queue, exchange, routingKey: 'sensor.#', declare: true, mqttTopic: 'rabbit/${routingKey}/${headers.site}/${value.t}', qos: 1 },
  });
  await stateOf(b, c.id, 'running');
  await publishRabbit(exchange, [
    { routingKey: 'sensor.a', body: '{"t":1}', headers: { site: 'north' } },
    { routingKey: 'other.b', body: '{"t":2}', headers: { site: 'north' } },
    { routingKey: 'sensor.c', body: '{"t":3}', headers: { site: 'south' } },
  ]);
  await waitFor(() => got.length >= 2, { message: 'two deliveries published' });
  assert.deepEqual(got.map((m) => [m.topic, m.payload, m.qos]), [
    ['rabbit/sensor.a/north/1', '{"t":1}', 1],
    ['rabbit/sensor.c/south/3', '{"t":3}', 1],
  ]);
  const rt = await waitFor(async () => {
    const r = await runtime(b, c.id);
    return r.lag === 0 && r;
  }, { message: 'lag 0' });
  assert.equal(rt.received, 2);
  assert.equal(rt.published, 2);
  await b.api('POST', '/command/delete', { body: { id: c.id } });
  await deleteQueue(queue);
  await end(sub);
});

test('stopped mid-stream and started again: every message arrives at least once (acknowledged only once published)', async () => {
  const queue = `cmd-stop-${run}`;
  const count = 3000;
  const sub = await connect(b.url, { clientId: 'rabbit-stop-sub' });
  await sub.subscribeAsync('rstream/#', { qos: 1 });
  const got = collect(sub);
  const c = await addCommand(b, { name: 'rabbit-stop', type: 'RABBITMQ', config: { url: RABBITMQ, queue, declare: true, prefetch: 10, mqttTopic: 'rstream/${routingKey}' } });
  await stateOf(b, c.id, 'running');
  await publishRabbit('', [...Array(count).keys()].map((n) => ({ routingKey: queue, body: JSON.stringify({ n }) })));
  await waitFor(() => got.length >= 100, { message: '100 messages published' });
  const stopped = await b.api('POST', '/command/stop', { body: { id: c.id } });
  assert.equal(stopped.json.data.state, 'stopped');
  const atStop = got.length;
  assert.equal((await b.api('POST', '/command/start', { body: { id: c.id } })).status, 200);
  await allArrived(got, count, b, c.id, 3 * WAIT_MS);
  assert.ok(atStop < count, `stopped mid-stream (${atStop} of ${count} had arrived)`);
  await waitFor(async () => (await runtime(b, c.id)).lag === 0, { message: 'the queue drained' });
  await b.api('POST', '/command/delete', { body: { id: c.id } });
  await deleteQueue(queue);
  await end(sub);
});

test('RabbitMQ stopped: state reconnecting; started again: running again, and messages queued before it reconnected arrive', async () => {
  const queue = `cmd-down-${run}`;
  const sub = await connect(b.url, { clientId: 'rabbit-down-sub' });
  await sub.subscribeAsync('rdown/#', { qos: 1 });
  const got = collect(sub);
  const c = await addCommand(b, { name: 'rabbit-down', type: 'RABBITMQ', config: { url: RABBITMQ, queue, declare: true, heartbeat: 5, mqttTopic: 'rdown/x' } });
  await stateOf(b, c.id, 'running');
  await publishRabbit('', [{ routingKey: queue, body: JSON.stringify({ n: 0 }) }]);
  await allArrived(got, 1, b, c.id);
  stopRabbitMq();
  const down = await stateOf(b, c.id, 'reconnecting');
  assert.match(down.lastError, /rabbitmq/);
  ensureRabbitMq();
  await publishRabbit('', [1, 2, 3].map((n) => ({ routingKey: queue, body: JSON.stringify({ n }) })));
  const up = await stateOf(b, c.id, 'running', 3 * WAIT_MS);
  assert.ok(up.reconnects >= 1, JSON.stringify(up));
  await allArrived(got, 4, b, c.id, 3 * WAIT_MS);
  await b.api('POST', '/command/delete', { body: { id: c.id } });
  await deleteQueue(queue);
  await end(sub);
});

test('a queue that does not exist (declare off) fails the command; started again once it exists, it runs', async () => {
  const queue = `cmd-missing-${run}`;
  const c = await addCommand(b, { name: 'rabbit-missing', type: 'RABBITMQ', config: { url: RABBITMQ, queue, mqttTopic: 'rmissing' } });
  const failed = await stateOf(b, c.id, 'failed');
  assert.match(failed.lastError, /404|NOT_FOUND/);
  const updated = await b.api('POST', '/command/update', { body: { id: c.id, config: { declare: true } } });
  assert.equal(updated.status, 200, updated.text);
  await stateOf(b, c.id, 'running');
  await b.api('POST', '/command/delete', { body: { id: c.id } });
  await deleteQueue(queue);
});

test('commands are kept in the store: after a broker restart an enabled one runs again, a stopped one stays stopped', async () => {
  const queue = `cmd-kept-${run}`;
  const kept = await addCommand(b, { name: 'rabbit-kept', type: 'RABBITMQ', config: { url: RABBITMQ, queue, declare: true, mqttTopic: 'rkept/${routingKey}' } });
  const idle = await addCommand(b, { name: 'rabbit-idle', type: 'RABBITMQ', enabled: false, config: { url: RABBITMQ, queue: `${queue}-idle`, declare: true, mqttTopic: 'ridle' } });
  await stateOf(b, kept.id, 'running');
  await b.stop();
  // Queued while the broker is down: delivered once the command runs again.
  await publishRabbit('', [{ routingKey: queue, body: JSON.stringify({ n: 0 }) }]);
  b = await startAdminBroker({ dataDir });
  const sub = await connect(b.url, { clientId: 'rabbit-kept-sub' });
  await sub.subscribeAsync('rkept/#', { qos: 1 });
  const got = collect(sub);
  // Arrived before the subscription, maybe: publish one more, which cannot have.
  await stateOf(b, kept.id, 'running');
  await publishRabbit('', [{ routingKey: queue, body: JSON.stringify({ n: 1 }) }]);
  await waitFor(() => got.some((m) => m.payload === '{"n":1}'), { message: 'a message after the restart' });
  assert.equal(got[0].topic, `rkept/${queue}`);
  assert.equal((await runtime(b, kept.id)).published >= 1, true);
  assert.equal((await runtime(b, idle.id)).state, 'stopped');
  const q = await b.api('POST', '/command/query', { body: { type: 'RABBITMQ' } });
  assert.deepEqual(q.json.data.map((x: { name: string; enabled: boolean }) => [x.name, x.enabled]), [['rabbit-kept', true], ['rabbit-idle', false]]);
  await b.api('POST', '/command/delete', { body: { id: kept.id } });
  await b.api('POST', '/command/delete', { body: { id: idle.id } });
  await deleteQueue(queue);
  await deleteQueue(`${queue}-idle`);
  await end(sub);
});
