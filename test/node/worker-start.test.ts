// needs: broker
// A worker opens its listeners only once every feature's state is on it (src/node, Supervisor
// onWorkerStart): the first message a worker accepts, right after the broker starts and right
// after a worker was restarted, already meets the stored republish rule, the log topic and the
// MQTT bridge (WebSocket off in the restart test: terminate() with a uWS listener open aborts the
// process, see worker-crash.test.ts). Before, the features were installed once the worker reported its listeners open:
// a stored rule missed the first message after a start in 2 of 3 tries from outside.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

import mqtt, { type MqttClient } from 'mqtt';

import { connect, end, nextMessages, startBroker, type TestBroker } from '../helpers/broker.ts';
import { startAdminBroker } from '../helpers/admin.ts';
import { freePort, startProcessBroker, tempDir } from '../helpers/process-broker.ts';
import { ownChild } from '../helpers/children.ts';
import { SPINDLE_BIN, spindleEnv } from '../helpers/spindle-bin.ts';
import { waitFor, WAIT_MS } from '../helpers/wait.ts';

const PASSWORD = 'start-test-password';
const RULE = { id: 'first', name: 'first', sql: 'SELECT * FROM "in/#"', actions: [{ type: 'republish', config: { topic: 'ruled/out', payload: '${payload}', qos: 1 } }] };

function bridgeTo(remote: TestBroker) {
  return [{ name: 'up', url: remote.url, reconnectPeriod: 100, forwards: [{ filter: 'in/#', qos: 1, remotePrefix: 'site/' }] }];
}

async function api(adminPort: number, p: string, body: unknown): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${adminPort}${p}`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 200, `${p}: ${await res.text()}`);
}

/** Connects as soon as the port accepts (tries every 10 ms), as a device that was waiting would. */
async function connectWhenOpen(url: string, clientId: string, output: string[]): Promise<MqttClient> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    try {
      return await connect(url, { clientId, connectTimeout: 1000 });
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`never connected: ${(err as Error).message}\n${output.join('\n')}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}

test('the first message after a start meets the stored rule, the log topic and the bridge', async () => {
  const remote = await startBroker();
  const dataDir = tempDir();
  const port = await freePort();
  const adminPort = await freePort();
  const config = {
    dataDir,
    workers: 2,
    log: { level: 'info' },
    sys: { enabled: false },
    mqtt: { host: '127.0.0.1', tcp: { port }, ws: { enabled: false } },
    admin: { enabled: true, host: '127.0.0.1', port: adminPort, password: PASSWORD },
    bridges: bridgeTo(remote),
  };
  const remoteSub = await connect(remote.url, { clientId: 'start-remote-sub' });
  await remoteSub.subscribeAsync('site/#', { qos: 1 });
  // The first run stores the rule and the log topic (LOCAL store in dataDir).
  const first = await startProcessBroker(config);
  await api(adminPort, '/rule/add', RULE);
  await api(adminPort, '/api/log/topic/add', { topic: 'in/#', level: 'WARN' });
  assert.equal(await first.kill('SIGTERM'), 0);

  const file = path.join(dataDir, 'spindle.json');
  writeFileSync(file, JSON.stringify(config));
  const output: string[] = [];
  const child = ownChild(spawn(SPINDLE_BIN, ['--config', file], { env: spindleEnv(), stdio: ['ignore', 'pipe', 'pipe'] }));
  const collect = (b: Buffer) => output.push(...b.toString().split('\n').filter(Boolean));
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const url = `mqtt://127.0.0.1:${port}`;
  try {
    const sub = await connectWhenOpen(url, 'start-sub', output);
    await sub.subscribeAsync('ruled/out', { qos: 1 });
    const pub = await connect(url, { clientId: 'start-pub' });
    const ruled = nextMessages(sub, 1);
    const bridged = nextMessages(remoteSub, 1);
    await pub.publishAsync('in/first', 'the first message', { qos: 1 });
    assert.equal((await ruled)[0].payload, 'the first message', 'the rule republished the first message');
    const [atRemote] = await bridged;
    assert.equal(atRemote.topic, 'site/in/first', 'the bridge forwarded the first message');
    await waitFor(() => output.some((l) => l.includes('message on a log topic') && l.includes('in/first')), { message: () => `no log topic line for the first message:\n${output.join('\n')}` });
    await end(sub, pub);
  } finally {
    await new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
    await end(remoteSub);
    await remote.stop();
  }
});

test('after a worker dies, the first message its replacement accepts meets the rule, the log topic and the bridge', async () => {
  const remote = await startBroker();
  const b = await startAdminBroker({ workers: 1, mqtt: { ws: { enabled: false } }, log: { level: 'info' }, bridges: bridgeTo(remote) });
  const lines: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    lines.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString());
    return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stdout.write;
  const remoteSub = await connect(remote.url, { clientId: 'restart-remote-sub' });
  try {
    assert.equal((await b.api('POST', '/rule/add', { body: RULE })).status, 200);
    assert.equal((await b.api('POST', '/api/log/topic/add', { body: { topic: 'in/#', level: 'WARN' } })).status, 200);
    await remoteSub.subscribeAsync('site/#', { qos: 1 });
    // Clients that reconnect at once (every 20 ms) when their connection drops.
    const sub = mqtt.connect(b.url, { clientId: 'restart-sub', reconnectPeriod: 20, clean: false, protocolVersion: 5, properties: { sessionExpiryInterval: 600 } });
    const pub = mqtt.connect(b.url, { clientId: 'restart-pub', reconnectPeriod: 20 });
    await Promise.all([sub, pub].map((c) => new Promise((resolve) => c.once('connect', resolve))));
    await sub.subscribeAsync('ruled/out', { qos: 1 });
    // The publisher sends as soon as it is connected again: its first message on the new worker.
    const reconnected = new Promise<void>((resolve) => pub.once('connect', () => {
      pub.publish('in/again', 'first on the new worker', { qos: 1 });
      resolve();
    }));
    const subBack = new Promise((resolve) => sub.once('connect', resolve));
    const ruled = nextMessages(sub, 1, WAIT_MS * 2);
    const bridged = nextMessages(remoteSub, 1, WAIT_MS * 2);
    await b.supervisor.workers[0]!.terminate();
    await waitFor(() => Promise.race([Promise.all([reconnected, subBack]).then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 200))]), { message: () => `the clients did not reconnect: ${JSON.stringify(b.supervisor.workerStates())}` });
    // QoS 1 both ways: the subscriber's persistent session keeps what the rule republished while
    // the subscriber itself may still be reconnecting.
    const [r, f] = await Promise.allSettled([ruled, bridged]);
    assert.equal(r.status === 'fulfilled' && r.value[0].payload, 'first on the new worker', `the rule republished it (${r.status === 'rejected' ? r.reason : 'ok'})`);
    assert.equal(f.status === 'fulfilled' && f.value[0].topic, 'site/in/again', `the bridge forwarded it (${f.status === 'rejected' ? f.reason : 'ok'})`);
    await waitFor(() => lines.join('').includes('in/again'), { message: 'no log topic line for the first message on the new worker' });
    await end(sub, pub);
  } finally {
    process.stdout.write = write;
    await end(remoteSub);
    await b.stop();
    await remote.stop();
  }
});

test('with the admin API off, stored rules and proxy subscriptions run (the features do not depend on HTTP)', async () => {
  const dataDir = tempDir();
  const withAdmin = await startAdminBroker({ dataDir });
  assert.equal((await withAdmin.api('POST', '/rule/add', { body: RULE })).status, 200);
  assert.equal((await withAdmin.api('POST', '/mqtt/proxy/subscribe/add', { body: { topic: 'proxied/#', qos: 1 } })).status, 200);
  await withAdmin.stop();
  const b = await startBroker({ dataDir, admin: { enabled: false } });
  try {
    assert.equal(b.admin, null);
    const sub = await connect(b.url);
    await sub.subscribeAsync('ruled/out', { qos: 1 });
    const pub = await connect(b.url);
    const got = nextMessages(sub, 1);
    await pub.publishAsync('in/x', 'no admin', { qos: 1 });
    assert.equal((await got)[0].payload, 'no admin');
    // The subscriber never subscribed to proxied/#: the stored proxy subscription did.
    const proxied = nextMessages(sub, 1);
    await pub.publishAsync('proxied/y', 'by proxy', { qos: 1 });
    assert.equal((await proxied)[0].topic, 'proxied/y');
    await end(sub, pub);
  } finally {
    await b.stop();
  }
});
