// NodeHandover unit tests on the in-memory engine (no sockets, no cluster): the other nodes are a
// fake NodeClaims, the shared store a fake loadStored. A session another node gives up continues
// here under this node's handle; one its node left in the store is loaded from there; nodes that
// do not answer leave the client id claimed here alone; and a client id another node claims
// leaves this node whole (its connection taken over with 0x8E, its state answered).
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';

import { startEngine, type Engine, type EngineOptions, type FakeClient } from '../../helpers/engine.ts';
import { Session } from '../../../src/engine/session/session.ts';
import { exportState, LOAD_FROM_STORE } from '../../../src/engine/session/handover.ts';
import type { FromNode, NodeClaims } from '../../../src/engine/session/node-handover.ts';

const limits = { maxQueued: 10, dropPolicy: 'drop-newest' as const };
/** The subscription options byte for QoS 1. */
const QOS1 = 1;

let engine: Engine | null = null;
afterEach(() => {
  engine?.close();
  engine = null;
});

function start(answer: (clientId: string, resume: boolean) => Promise<FromNode>, options: EngineOptions = {}): { e: Engine; asked: [string, boolean][] } {
  const asked: [string, boolean][] = [];
  const nodes: NodeClaims = {
    enabled: true,
    claim: (clientId, resume) => {
      asked.push([clientId, resume]);
      return answer(clientId, resume);
    },
  };
  const e = (engine = startEngine({ workers: 2, nodes: () => nodes, ...options }));
  return { e, asked };
}

async function connect(c: FakeClient, clientId: string, clean: boolean): Promise<FakeClient> {
  await c.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 5, clientId, clean, keepalive: 60, properties: { sessionExpiryInterval: 300 } });
  return c;
}

/** A session as another node held it: handle `handle` there, one subscription to `filter`. */
function elsewhere(clientId: string, handle: number, filter: string): Session {
  const s = new Session(handle, clientId, limits);
  s.expiryInterval = 300;
  s.subscriptions.set(filter, { filter, options: QOS1, subscriptionId: 0 });
  return s;
}

async function published(e: Engine, topic: string, text: string): Promise<void> {
  const pub = await connect(e.client(0), `pub-${text}`, true);
  await pub.send({ cmd: 'publish', topic, payload: Buffer.from(text), qos: 1, messageId: 1 });
  await e.settle();
}

function payloads(c: FakeClient): string[] {
  return c.packets('publish').map((p) => (p as { payload: Buffer }).payload.toString());
}

test('a session another node gives up continues here: present, under this node\'s handle, its subscriptions routed here', async () => {
  const remote = exportState(elsewhere('n', 0xfff0, 'n/#'));
  const { e, asked } = start(async (clientId) => (clientId === 'n' ? remote : null));
  const c = await connect(e.client(1), 'n', false);
  assert.deepEqual(asked, [['n', true]]);
  assert.equal(c.packets('connack')[0].sessionPresent, true);
  const session = e.workers[1].sessions.byClientId.get('n');
  assert.ok(session);
  assert.notEqual(session.handle, 0xfff0, 'the handle is this node\'s');
  assert.deepEqual([...session.subscriptions.keys()], ['n/#']);
  await published(e, 'n/1', 'here');
  assert.deepEqual(payloads(c), ['here']);
});

test('a session its node left in the shared store is loaded from there; not found there, a new one starts', async () => {
  const loaded: string[] = [];
  const { e } = start(async () => LOAD_FROM_STORE, {
    loadStored: async (clientId, handle) => {
      loaded.push(clientId);
      return clientId === 'kept' ? elsewhere(clientId, handle, 'k/#') : null;
    },
  });
  const kept = await connect(e.client(0), 'kept', false);
  const lost = await connect(e.client(1), 'lost', false);
  assert.deepEqual(loaded, ['kept', 'lost']);
  assert.equal(kept.packets('connack')[0].sessionPresent, true);
  assert.equal(lost.packets('connack')[0].sessionPresent, false);
  await published(e, 'k/1', 'stored');
  assert.deepEqual(payloads(kept), ['stored']);
});

test('nodes that do not answer: the client id is claimed here alone, as a new session', async () => {
  const { e } = start(async () => {
    throw new Error('no answer from the main thread');
  });
  const c = await connect(e.client(0), 'alone', false);
  assert.equal(c.packets('connack')[0].sessionPresent, false);
  assert.equal(c.isClosed(), false);
  assert.equal(e.workers[0].sessions.known('alone'), true);
});

test('another node claims a client id held here: its connection is taken over (0x8E), its state answered, nothing left here', async () => {
  const { e } = start(async () => null);
  const c = await connect(e.client(1), 'r', false);
  await c.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'r/#', qos: 1 }] });
  // Asked on worker 0 (the main thread picks any worker); the session is on worker 1.
  const state = await e.workers[0].sessions.releaseToNode('r', true);
  assert.deepEqual(state?.subscriptions.map((s) => s.filter), ['r/#']);
  assert.equal((c.packets('disconnect')[0] as { reasonCode?: number }).reasonCode, 0x8e);
  await e.settle();
  assert.equal(e.workers[0].sessions.known('r'), false);
  assert.equal(e.workers.reduce((n, w) => n + w.sessions.size, 0), 0);
  assert.equal(e.workers.reduce((n, w) => n + w.stats.sessions, 0), 0);
});

test('another node claims with Clean Start: no state answered, the session ends here', async () => {
  const { e } = start(async () => null);
  const c = await connect(e.client(0), 'cs', false);
  assert.equal(await e.workers[0].sessions.releaseToNode('cs', false), null);
  assert.equal(c.isClosed(), true);
  assert.equal(e.workers[0].sessions.known('cs'), false);
  assert.equal(e.workers[0].sessions.size, 0);
});

test('another node claims a client id nobody holds here: nothing is claimed, null', async () => {
  const { e } = start(async () => null);
  assert.equal(await e.workers[0].sessions.releaseToNode('nobody', true), null);
  assert.equal(e.workers[0].sessions.known('nobody'), false);
});
