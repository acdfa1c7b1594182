// SessionTable unit tests on the in-memory engine (no sockets, no sleeps): claims of one client
// id chained across workers, the session handed over whole, takeover before CONNACK, Clean Start,
// wills, the QoS 0 / resume race, and when `open` answers at once or waits (OpenResult).
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';

import { startEngine, engineConfig, type Engine, type FakeClient } from '../helpers/engine.ts';

let engine: Engine | null = null;
afterEach(() => {
  engine?.close();
  engine = null;
});

function connectPacket(clientId: string, clean: boolean, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { cmd: 'connect', protocolId: 'MQTT', protocolVersion: 5, clientId, clean, keepalive: 60, properties: clean ? {} : { sessionExpiryInterval: 300 }, ...extra };
}

async function connected(c: FakeClient, clientId: string, clean = false, extra: Record<string, unknown> = {}): Promise<FakeClient> {
  await c.send(connectPacket(clientId, clean, extra));
  return c;
}

function sessionsOf(e: Engine, clientId: string) {
  return e.workers.flatMap((w) => [...w.sessions.all()].filter((s) => s.clientId === clientId));
}

test('a second connection on another worker takes the session over whole: CONNACK present, DISCONNECT 0x8E to the first, subscriptions route to the new worker', async () => {
  const e = (engine = startEngine({ workers: 2 }));
  const first = await connected(e.client(0), 'c');
  await first.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'x/#', qos: 1 }] });
  const second = await connected(e.client(1), 'c');
  assert.equal(second.packets('connack')[0].sessionPresent, true);
  assert.deepEqual(first.received.map((p) => p.cmd), ['connack', 'suback', 'disconnect']);
  assert.equal((first.packets('disconnect')[0] as { reasonCode?: number }).reasonCode, 0x8e);
  assert.equal(sessionsOf(e, 'c').length, 1);
  assert.equal(e.workers[1].sessions.byClientId.has('c'), true);
  const pub = await connected(e.client(0), 'pub', true);
  await pub.send({ cmd: 'publish', topic: 'x/1', payload: Buffer.from('m'), qos: 1, messageId: 7 });
  await e.settle();
  assert.deepEqual(second.packets('publish').map((p) => (p as { payload: Buffer }).payload.toString()), ['m']);
  assert.equal(first.packets('publish').length, 0);
});

test('connections racing for one client id across workers: each gets CONNACK before it is taken over, the last one holds the one session, nothing is left behind', async () => {
  const e = (engine = startEngine({ workers: 3 }));
  const base = await connected(e.client(0), 'race');
  await base.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'r/#', qos: 1 }] });
  const clients: FakeClient[] = [];
  const started: Promise<void>[] = [];
  for (let i = 0; i < 12; i++) {
    const c = e.client(i % 3);
    clients.push(c);
    // Every other one resumes; the others start clean. None waits for the one before.
    started.push(c.send(connectPacket('race', i % 4 === 3)));
  }
  await Promise.all(started);
  await e.settle();
  for (const [i, c] of clients.entries()) {
    const cmds = c.received.map((p) => p.cmd);
    assert.equal(cmds[0], 'connack', `client ${i} got ${cmds} first`);
    if (i < clients.length - 1) assert.deepEqual(cmds, ['connack', 'disconnect'], `client ${i}`);
  }
  const last = clients[clients.length - 1];
  assert.equal(last.isClosed(), false);
  const sessions = sessionsOf(e, 'race');
  assert.equal(sessions.length, 1, 'one session for the client id');
  assert.equal(sessions[0].connection, last);
  assert.equal(e.workers.reduce((n, w) => n + w.stats.sessions, 0), 1, 'sessions counted once');
  // The last claim (i = 11, resume) continued whatever the claims before it left.
  const pub = await connected(e.client(1), 'pub', true);
  await pub.send({ cmd: 'publish', topic: 'r/1', payload: Buffer.from('once'), qos: 1, messageId: 1 });
  await e.settle();
  const deliveries = e.workers.reduce((n, w) => n + w.stats.messagesSent, 0);
  assert.ok(deliveries <= 1, `delivered ${deliveries} times`);
});

test('a persistent session is never discarded by a race: resumed claims all see session present', async () => {
  const e = (engine = startEngine({ workers: 2 }));
  await connected(e.client(0), 'keep');
  const clients = [e.client(1), e.client(0), e.client(1), e.client(0)];
  await Promise.all(clients.map((c) => c.send(connectPacket('keep', false))));
  await e.settle();
  assert.deepEqual(clients.map((c) => c.packets('connack')[0].sessionPresent), [true, true, true, true]);
});

test('Clean Start ends the old session where it was: present 0, its subscriptions leave the routing core', async () => {
  const e = (engine = startEngine({ workers: 2 }));
  const first = await connected(e.client(0), 'cs');
  await first.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'cs/#', qos: 1 }] });
  const second = await connected(e.client(1), 'cs', true);
  assert.equal(second.packets('connack')[0].sessionPresent, false);
  const pub = await connected(e.client(0), 'pub', true);
  await pub.send({ cmd: 'publish', topic: 'cs/1', payload: Buffer.from('m'), qos: 1, messageId: 1 });
  await e.settle();
  assert.equal((pub.packets('puback')[0] as { reasonCode?: number }).reasonCode, 0x10, 'no matching subscribers');
});

test('queued and in-flight messages travel with the session to another worker; in-flight ones are resent with DUP', async () => {
  const e = (engine = startEngine({ workers: 2 }));
  const first = await connected(e.client(0), 'q');
  await first.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'q/#', qos: 1 }] });
  const pub = await connected(e.client(0), 'pub', true);
  await pub.send({ cmd: 'publish', topic: 'q/1', payload: Buffer.from('a'), qos: 1, messageId: 1 });
  const sent = first.packets('publish')[0] as { messageId: number };
  const second = await connected(e.client(1), 'q');
  const again = second.packets('publish') as { dup: boolean; messageId: number; payload: Buffer }[];
  assert.deepEqual(again.map((p) => [p.dup, p.messageId, p.payload.toString()]), [[true, sent.messageId, 'a']]);
});

test('QoS 0 routed while the session was offline is not delivered when the client is back before it arrives', async () => {
  const e = (engine = startEngine({ workers: 2 }));
  const sub = await connected(e.client(0), 'offline');
  await sub.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'o/#', qos: 1 }] });
  sub.close('normal');
  const pub = await connected(e.client(1), 'pub', true);
  // Routed now (to worker 0, in a batch not yet delivered), then the client comes back on worker 1.
  await pub.send(
    { cmd: 'publish', topic: 'o/1', payload: Buffer.from('q1'), qos: 1, messageId: 1 },
    { cmd: 'publish', topic: 'o/0', payload: Buffer.from('q0'), qos: 0 },
  );
  const back = await connected(e.client(1), 'offline');
  await e.settle();
  assert.deepEqual(back.packets('publish').map((p) => (p as { payload: Buffer }).payload.toString()), ['q1']);
  assert.equal(e.workers.reduce((n, w) => n + w.stats.dropped.qos0Offline, 0), 1);
});

test('a new connection within the will delay cancels the will, with Clean Start too [MQTT-3.1.2-8]', async () => {
  for (const clean of [false, true]) {
    const e = startEngine({ workers: 2 });
    try {
      const watcher = await connected(e.client(1), 'watch', true);
      await watcher.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'w/#', qos: 0 }] });
      const first = await connected(e.client(0), 'willer', false, { will: { topic: 'w/x', payload: Buffer.from('gone'), qos: 0, retain: false, properties: { willDelayInterval: 60 } } });
      await connected(e.client(1), 'willer', clean);
      assert.equal(first.isClosed(), true);
      await e.settle();
      assert.equal(watcher.packets('publish').length, 0, `clean ${clean}`);
    } finally {
      e.close();
    }
  }
});

test('a will without delay goes out when its connection is taken over [MQTT-3.1.4-3]', async () => {
  const e = (engine = startEngine({ workers: 2 }));
  const watcher = await connected(e.client(1), 'watch', true);
  await watcher.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'w/#', qos: 0 }] });
  await connected(e.client(0), 'willer', false, { will: { topic: 'w/x', payload: Buffer.from('gone'), qos: 0, retain: false } });
  await connected(e.client(1), 'willer', false);
  await e.settle();
  assert.deepEqual(watcher.packets('publish').map((p) => (p as { topic: string }).topic), ['w/x']);
});

test('a session with expiry 0 ends with its connection: released from the registry and the routing core', async () => {
  const e = (engine = startEngine({ workers: 1, config: engineConfig() }));
  const c = await connected(e.client(0), 'brief', true);
  await c.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'b/#', qos: 0 }] });
  assert.equal(e.workers[0].sessions.known('brief'), true);
  c.close('normal');
  assert.equal(e.workers[0].sessions.known('brief'), false);
  assert.equal(e.workers[0].sessions.size, 0);
});

test('open answers an Opening at once for a client id nobody holds, and a PendingOpening when a claim holds it', async () => {
  const e = (engine = startEngine({ workers: 2 }));
  const sessions = e.workers[0].sessions;
  const first = e.client(0);
  const opening = sessions.open(first, 'fast', undefined, false, 300);
  assert.equal(opening instanceof Promise, false, 'the common CONNECT stays synchronous');
  if (opening instanceof Promise) return;
  assert.equal(opening.present, false);
  opening.attach();
  const pending = e.workers[1].sessions.open(e.client(1), 'fast', undefined, false, 300);
  assert.equal(pending instanceof Promise, true);
  const taken = await pending;
  assert.equal(taken?.present, true);
  assert.equal(taken?.session.handle, opening.session.handle);
});

test('open waits (a PendingOpening) whenever the nodes of a cluster are asked first', async () => {
  const e = (engine = startEngine({ nodes: () => ({ enabled: true, claim: async () => null }) }));
  const pending = e.workers[0].sessions.open(e.client(0), 'clustered', undefined, true, 0);
  assert.equal(pending instanceof Promise, true);
  assert.equal((await pending)?.present, false);
});
