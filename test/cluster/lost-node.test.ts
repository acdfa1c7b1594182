// A node lost for good (SIGKILL, not drained), on a database the nodes share (POSTGRESQL): the
// QoS 1 messages the other nodes sent it before they marked it down wait in the QoS stream on its
// subject. The node adopting its sessions takes those frames once the sessions are here and routes
// them to those sessions only, so a client reconnecting there gets each of them once.
// needs: broker, nats, postgresql
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import mqtt, { type MqttClient } from 'mqtt';

import { startBroker, connect, end, persistent, type TestBroker } from '../helpers/broker.ts';
import { startProcessBroker, tempDir, type ProcessBroker } from '../helpers/process-broker.ts';
import { freePort, TestNats } from '../helpers/nats.ts';
import { waitFor } from '../helpers/wait.ts';
import { pgSchema, type PgSchema } from '../store/databases.ts';

let nats: TestNats;
let db: PgSchema;
let b: TestBroker;
let a: ProcessBroker;

before(async () => {
  nats = await TestNats.start();
  db = await pgSchema('lostnode');
  const store = db.store;
  b = await startBroker({ nodeName: 'lost-b', store, cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` } });
  a = await startProcessBroker({
    nodeName: 'lost-a', dataDir: tempDir(), workers: 2, log: { level: 'info' }, sys: { enabled: false }, admin: { enabled: false },
    mqtt: { host: '127.0.0.1', tcp: { port: await freePort() }, ws: { port: 0 } }, store,
    cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` },
  });
  await waitFor(() => b.cluster!.nodes().some((n) => n.id === 'lost-a' && n.status === 'running'), { message: 'b sees a' });
});

after(async () => {
  await a?.kill();
  await b?.stop();
  await nats?.stop();
  await db?.drop();
});

test('the QoS 1 messages in the stream for a node killed reach its sessions adopted elsewhere, once each', async () => {
  const dev = await connect(a.url, persistent('lost-dev'));
  await dev.subscribeAsync('lost/+/cmd', { qos: 1 });
  const pub = await connect(b.url, { protocolVersion: 5 });
  // a's interest has reached b once a message published on b arrives on a.
  await waitFor(async () => {
    const got = new Promise<boolean>((resolve) => {
      const t = setTimeout(() => resolve(false), 500);
      dev.once('message', () => {
        clearTimeout(t);
        resolve(true);
      });
    });
    pub.publish('lost/probe/cmd', 'probe', { qos: 0 });
    return got;
  }, { message: 'a\'s interest known on b' });
  const lost = new Promise<void>((resolve) => dev.once('close', () => resolve()));
  await a.kill('SIGKILL');
  await lost;
  // Published before b marks a down (3 s): acknowledged once the stream holds them for a.
  const stored = b.cluster!.qos.counters.storedFrames;
  for (let i = 0; i < 5; i++) await pub.publishAsync('lost/1/cmd', `cmd${i}`, { qos: 1 });
  assert.equal(b.cluster!.nodes().find((n) => n.id === 'lost-a')?.status, 'running', 'sent while a was still thought running');
  assert.ok(b.cluster!.qos.counters.storedFrames > stored, 'stored in the stream for a');

  await waitFor(() => b.cluster!.adoption!.adopted === 1, { timeout: 15_000, message: 'b adopts a\'s session' });
  await waitFor(() => b.cluster!.qos.counters.takenOver >= 1, { message: 'b takes a\'s frames' });

  const received: { payload: string; dup: boolean }[] = [];
  const back: MqttClient = mqtt.connect(b.url, { reconnectPeriod: 0, connectTimeout: 5000, ...persistent('lost-dev') });
  back.on('message', (_t, payload, packet) => received.push({ payload: payload.toString(), dup: packet.dup }));
  const ack = await new Promise<{ sessionPresent: boolean }>((resolve, reject) => {
    back.once('connect', resolve);
    back.once('error', reject);
  });
  assert.equal(ack.sessionPresent, true);
  await waitFor(() => received.filter((r) => r.payload.startsWith('cmd')).length >= 5, { message: `the five messages (got ${JSON.stringify(received)})` });
  // Once each: published after the probe, nothing more comes.
  await pub.publishAsync('lost/1/cmd', 'last', { qos: 1 });
  await waitFor(() => received.some((r) => r.payload === 'last'), { message: 'the last message' });
  assert.deepEqual(received.filter((r) => r.payload !== 'probe').map((r) => r.payload), ['cmd0', 'cmd1', 'cmd2', 'cmd3', 'cmd4', 'last']);
  dev.end(true);
  await end(back, pub);
});
