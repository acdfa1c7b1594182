// A worker thread that dies is restarted by the supervisor: new clients connect and pub/sub
// works across both workers again, and the clients of the dead worker can reconnect.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import type { MqttClient } from 'mqtt';

import { startBroker, connect, nextMessages, end, type TestBroker } from '../helpers/broker.ts';
import { RawClient } from '../helpers/raw-client.ts';
import { waitFor, WAIT_MS } from '../helpers/wait.ts';

let broker: TestBroker;
before(async () => { broker = await startBroker({ mqtt: { ws: { enabled: false } } }); });
after(async () => { await broker.stop(); });

async function workersReady(b: TestBroker, count: number): Promise<void> {
  await waitFor(async () => (await b.supervisor.collectStats(WAIT_MS)).length >= count, { interval: 50, message: `${count} workers answering` });
}

test('a terminated worker is restarted; its clients reconnect and pub/sub works across both workers again', async () => {
  // Raw clients spread over both workers; find which one each is on from the counters.
  // The kernel spreads connections by a hash of their ports: connect until both workers have some.
  const clients: RawClient[] = [];
  let counts: number[] = [];
  while (clients.length < 8 || !(counts[0] > 0 && counts[1] > 0)) {
    assert.ok(clients.length < 64, `64 connections all on one worker: ${counts}`);
    clients.push((await RawClient.connect(broker.url, { protocolVersion: 4, clientId: `crash-${clients.length}` })).client);
    counts = (await broker.supervisor.collectStats(WAIT_MS)).map((s) => s.connectionsCurrent);
  }

  const dead = broker.supervisor.workers[0]!;
  await dead.terminate();
  // The dead worker's connections are gone; the others stay.
  await waitFor(() => clients.filter((c) => c.closed).length >= counts[0], { message: `the ${counts[0]} connections of the dead worker to close` });
  const lost = clients.filter((c) => c.closed);
  assert.equal(lost.length, counts[0]);
  for (const c of clients.filter((x) => !x.closed)) {
    c.send({ cmd: 'pingreq' });
    await c.next('pingresp');
  }

  await workersReady(broker, 2);
  assert.notEqual(broker.supervisor.workers[0], dead);

  // The clients of the dead worker reconnect with the same ids.
  for (let i = 0; i < clients.length; i++) {
    if (!clients[i].closed) continue;
    const { client, connack } = await RawClient.connect(broker.url, { protocolVersion: 4, clientId: `crash-${i}` });
    assert.equal(connack.returnCode, 0);
    clients[i] = client;
  }

  // Fresh subscribers and publishers land on both workers; every subscriber gets every message.
  const subs: MqttClient[] = [];
  let after: number[] = [];
  while (subs.length < 6 || !(after[0] > 0 && after[1] > 0)) {
    assert.ok(subs.length < 64, `no connection on one of the workers after the restart: ${after}`);
    const s = await connect(broker.url, { protocolVersion: 5, clientId: `after-sub-${subs.length}` });
    await s.subscribeAsync('after/crash', { qos: 1 });
    subs.push(s);
    after = (await broker.supervisor.collectStats(WAIT_MS)).map((x) => x.connectionsCurrent);
  }
  const pubs = await Promise.all([0, 1, 2, 3].map((i) => connect(broker.url, { protocolVersion: 4, clientId: `after-pub-${i}` })));
  const waits = subs.map((s) => nextMessages(s, pubs.length));
  for (const [i, p] of pubs.entries()) await p.publishAsync('after/crash', `from ${i}`, { qos: 1 });
  for (const got of await Promise.all(waits)) assert.deepEqual(got.map((g) => g.payload).sort(), pubs.map((_, i) => `from ${i}`));
  for (const c of clients) c.destroy();
  await end(...subs, ...pubs);
});

test('a worker that crashes on an uncaught exception with WebSocket clients connected is restarted; the process survives', async () => {
  const wsBroker = await startBroker();
  try {
    // WebSocket and TCP clients on both workers.
    const wss: MqttClient[] = [];
    let counts: number[] = [];
    while (wss.length < 6 || !(counts[0] > 0 && counts[1] > 0)) {
      assert.ok(wss.length < 64, `64 connections all on one worker: ${counts}`);
      wss.push(await connect(wsBroker.wsUrl, { protocolVersion: 4, clientId: `wsc-${wss.length}` }));
      counts = (await wsBroker.supervisor.collectStats(WAIT_MS)).map((s) => s.connectionsCurrent);
    }
    const dead = wsBroker.supervisor.workers[0]!;
    const exited = new Promise<number>((resolve) => dead.once('exit', resolve));
    // A message the worker's handler throws on: an uncaught exception in the worker thread.
    dead.postMessage({ t: 'publish', message: null });
    assert.equal(await exited, 1);
    await workersReady(wsBroker, 2);
    // Both listeners work again: a WebSocket client and a TCP client exchange a message.
    const ws = await connect(wsBroker.wsUrl, { protocolVersion: 5, clientId: 'ws-after' });
    const tcp = await connect(wsBroker.url, { protocolVersion: 5, clientId: 'tcp-after' });
    await ws.subscribeAsync('crash/ws', { qos: 1 });
    const w = nextMessages(ws, 1);
    await tcp.publishAsync('crash/ws', 'still here', { qos: 1 });
    assert.equal((await w)[0].payload, 'still here');
    await end(ws, tcp, ...wss.filter((c) => c.connected));
  } finally {
    await wsBroker.stop();
  }
});
