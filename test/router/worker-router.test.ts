// WorkerRouter unit tests against an in-memory RouterHost (no sockets, no workers): local
// deliveries and per-worker batches, the match memory and its invalidation, No Local, the
// retained side of a publish and on subscribe, forwarding for sessions that moved, and the
// routing clock.
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';

import { Router, RetainedStore, NO_PUBLISHER, TAP_WORKER } from '../../src/native/index.ts';
import { WorkerRouter, type RouterHost } from '../../src/router/worker-router.ts';
import type { Delivery } from '../../src/router/delivery.ts';
import { readBatch } from '../../src/router/batch.ts';
import { routedBefore, type Message } from '../../src/broker/message.ts';

interface FakeHost extends RouterHost {
  delivered: { handle: number; topic: string; qos: number; retain: boolean; ids: number[] | null }[];
  batches: { worker: number; deliveries: { session: number; topic: string; qos: number; seq: number | undefined }[] }[];
  owned: Set<number>;
  moved: Map<number, number>;
  noLocal: Set<number>;
  drops: number;
  rules: { rule: number; topic: string; publisher: number }[];
}

const names: string[] = [];
afterEach(() => {
  for (const n of names.splice(0)) {
    Router.close(n);
    RetainedStore.close(n);
  }
});

function setup(workerId = 0, shared = new SharedArrayBuffer(8), name = `wr-${randomUUID()}`): { router: WorkerRouter; host: FakeHost; shared: SharedArrayBuffer; name: string } {
  names.push(name);
  const host: FakeHost = {
    workerId,
    delivered: [],
    batches: [],
    owned: new Set(),
    moved: new Map(),
    noLocal: new Set(),
    drops: 0,
    rules: [],
    tapMatched(rule: number, m: Message, publisher: number) { this.rules.push({ rule, topic: m.topic, publisher }); },
    deliverLocal(handle: number, d: Delivery) {
      if (!this.owned.has(handle)) return false;
      this.delivered.push({ handle, topic: d.message.topic, qos: d.qos, retain: d.retain, ids: d.subscriptionIds });
      return true;
    },
    storedLocally: () => undefined,
    mayHaveNoLocal(handle: number) { return this.noLocal.has(handle); },
    movedTo(handle: number) { return this.moved.get(handle); },
    sendBatch(worker: number, buffer: ArrayBuffer, length: number) {
      const deliveries: { session: number; topic: string; qos: number; seq: number | undefined }[] = [];
      readBatch(buffer, length, (m, session, qos) => deliveries.push({ session, topic: m.topic, qos, seq: m.seq }));
      this.batches.push({ worker, deliveries });
    },
    dropped() { this.drops++; },
  };
  const router = new WorkerRouter(host, Router.open(name), RetainedStore.open(name), shared);
  return { router, host, shared, name };
}

function message(topic: string, qos: 0 | 1 | 2 = 0, retain = false, payload = 'p'): Message {
  return { topic, topicBytes: Buffer.from(topic), payload: Buffer.from(payload), qos, retain, props: null, expiresAt: 0, receivedAt: Date.now() };
}

const flushed = () => new Promise<void>((r) => setImmediate(r));

test('a publish goes to local sessions now and to other workers in one batch per worker per tick, with the lower QoS', async () => {
  const { router, host } = setup(0);
  host.owned.add(1);
  router.subscribe('a/#', 1, 1, 0);
  router.router.subscribe('a/+', 2, 1, 2, 0); // session 2 on worker 1, QoS 2
  router.router.subscribe('a/b', 3, 1, 0, 0); // session 3 on worker 1, QoS 0
  assert.equal(router.publish(message('a/b', 2), NO_PUBLISHER, 0), 3);
  assert.deepEqual(host.delivered, [{ handle: 1, topic: 'a/b', qos: 1, retain: false, ids: null }]);
  assert.equal(host.batches.length, 0, 'batches leave at the end of the tick');
  router.publish(message('a/c', 1), NO_PUBLISHER, 0);
  await flushed();
  assert.equal(host.batches.length, 1);
  assert.deepEqual(host.batches[0].deliveries.map((d) => [d.session, d.topic, d.qos]).sort(), [[2, 'a/b', 2], [2, 'a/c', 1], [3, 'a/b', 0]]);
});

test('the match memory is dropped when any worker changes the subscription set', () => {
  const shared = new SharedArrayBuffer(8);
  const a = setup(0, shared);
  const b = setup(1, shared, a.name);
  a.host.owned.add(1);
  a.router.subscribe('m/x', 1, 0, 0);
  assert.equal(a.router.publish(message('m/x'), NO_PUBLISHER, 0), 1);
  assert.equal(a.router.publish(message('m/x'), NO_PUBLISHER, 0), 1, 'answered from memory');
  // Worker 1 adds a subscriber: worker 0's remembered match for m/x must not be used.
  b.router.subscribe('m/+', 7, 0, 0);
  assert.equal(a.router.publish(message('m/x'), NO_PUBLISHER, 0), 2);
  b.router.removeSession(7);
  assert.equal(a.router.publish(message('m/x'), NO_PUBLISHER, 0), 1);
});

test('No Local: a publisher that may have a No Local subscription does not receive its own message, and its matches are not remembered', () => {
  const { router, host } = setup(0);
  host.owned.add(1).add(2);
  host.noLocal.add(1);
  router.subscribe('n/#', 1, 0x04, 0); // No Local
  router.subscribe('n/#', 2, 0, 0);
  assert.equal(router.publish(message('n/1'), 1, 0), 1);
  assert.deepEqual(host.delivered.map((d) => d.handle), [2]);
  // Another publisher gets both; a remembered result for session 1 must not hide it.
  assert.equal(router.publish(message('n/1'), 2, 0), 2);
});

test('a delivery for a session that moved is forwarded to its worker; one for a session gone is counted as dropped', async () => {
  const { router, host } = setup(0);
  router.subscribe('f/x', 5, 1, 0);
  router.subscribe('f/x', 6, 1, 0);
  host.moved.set(5, 3);
  router.publish(message('f/x', 1), NO_PUBLISHER, 0);
  await flushed();
  assert.deepEqual(host.batches.map((b) => [b.worker, b.deliveries.map((d) => d.session)]), [[3, [5]]]);
  assert.equal(host.drops, 1);
});

test('retained messages: stored, replaced, cleared by an empty payload, sent on subscribe with RETAIN set and the lower QoS [MQTT-3.3.1-5 .. MQTT-3.3.1-10]', () => {
  const { router, host } = setup(0);
  host.owned.add(9);
  router.publish(message('r/a', 1, true, 'one'), NO_PUBLISHER, 0);
  router.publish(message('r/a', 1, true, 'two'), NO_PUBLISHER, 0);
  router.publish(message('r/b', 2, true, 'b'), NO_PUBLISHER, 0);
  router.publish(message('r/c', 0, true, 'c'), NO_PUBLISHER, 0);
  router.publish(message('r/c', 0, true, ''), NO_PUBLISHER, 0);
  router.sendRetained(9, 'r/#', 1, 4);
  assert.deepEqual(host.delivered.map((d) => [d.topic, d.qos, d.retain, d.ids]).sort(), [['r/a', 1, true, [4]], ['r/b', 1, true, [4]]]);
});

test('with a cluster, retained changes go to the main thread in one post per tick; what the cluster\'s inbound handle publishes is not retained here', async () => {
  const { router, host } = setup(0);
  const posts: { topic: string; record: Uint8Array | null }[][] = [];
  host.postRetained = (items) => posts.push(items);
  // Cluster off: nothing is collected.
  router.publish(message('off/a', 0, true, 'x'), NO_PUBLISHER, 0);
  await flushed();
  assert.equal(posts.length, 0);
  const inbound = 77;
  router.setCluster(inbound);
  router.publish(message('on/a', 1, true, 'one'), NO_PUBLISHER, 0);
  router.publish(message('on/b', 0, true, 'b'), 5, 0);
  router.publish(message('on/b', 0, true, ''), 5, 0);
  router.publish(message('on/plain', 0, false, 'p'), 5, 0);
  router.publish(message('$SYS/broker/uptime', 0, true, '1'), NO_PUBLISHER, 0);
  router.publish(message('from/other', 1, true, 'remote'), inbound, 0);
  router.deliverRouted(message('from/other2', 1, true, 'remote'), [], inbound);
  await flushed();
  assert.equal(posts.length, 1);
  assert.deepEqual(posts[0].map((c) => [c.topic, c.record === null]), [['on/a', false], ['on/b', false], ['on/b', true]]);
  assert.equal(router.retained.get('from/other'), null);
  assert.equal(router.retained.get('from/other2'), null);
  assert.equal(router.fromCluster(inbound), true);
  assert.equal(router.fromCluster(NO_PUBLISHER), false);
});

test('route then deliverRouted: the deliveries a stored publish will have, made later', () => {
  const { router, host } = setup(0);
  host.owned.add(1);
  router.subscribe('s/#', 1, 2, 11);
  const m = message('s/1', 2, true);
  const routed = router.route(m, NO_PUBLISHER, 0);
  assert.deepEqual(routed, [{ handle: 1, worker: 0, qos: 2, retain: false, subscriptionIds: [11] }]);
  assert.equal(host.delivered.length, 0);
  router.deliverRouted(m, routed);
  assert.deepEqual(host.delivered.map((d) => [d.handle, d.qos, d.ids]), [[1, 2, [11]]]);
});

test('the routing clock orders routings on every worker, and travels with batched messages', async () => {
  const shared = new SharedArrayBuffer(8);
  const a = setup(0, shared);
  const b = setup(1, shared, a.name);
  b.router.subscribe('c/x', 1, 1, 0); // session 1 on worker 1: batched from worker 0
  const m1 = message('c/x');
  a.router.publish(m1, NO_PUBLISHER, 0);
  const tick = b.router.tick();
  const m2 = message('c/x');
  a.router.publish(m2, NO_PUBLISHER, 0);
  assert.equal(routedBefore(m1, tick), true);
  assert.equal(routedBefore(m2, tick), false);
  await flushed();
  assert.deepEqual(a.host.batches[0].deliveries.map((d) => d.seq), [m1.seq, m2.seq]);
});

test('rule subscribers (TAP_WORKER) are told of the publishes their filters match, on the publishing thread, and are not counted as deliveries', () => {
  const { router, host } = setup(0);
  host.owned.add(1);
  router.subscribe('plant/+/temp', 1, 1, 0);
  router.router.subscribe('plant/#', 900, TAP_WORKER, 0, null);
  router.router.subscribe('plant/+/temp', 900, TAP_WORKER, 0, null); // overlapping filters: told once
  router.router.subscribe('other/#', 901, TAP_WORKER, 0, null);
  assert.equal(router.publish(message('plant/a/temp', 1), 7, 0), 1);
  assert.deepEqual(host.rules, [{ rule: 900, topic: 'plant/a/temp', publisher: 7 }]);
  assert.equal(host.batches.length, 0, 'nothing is batched for the rule worker number');
  // A topic no session wants but a rule does: 0 deliveries, the rule still sees it.
  assert.equal(router.publish(message('plant/b/hum'), NO_PUBLISHER, 0), 0);
  assert.equal(host.rules.at(-1)!.topic, 'plant/b/hum');
  // The store-first path: the rule sees it when routed, and is not a Routed entry.
  const routed = router.route(message('plant/c/temp', 1), 7, 0);
  assert.deepEqual(routed.map((r) => r.handle), [1]);
  assert.equal(host.rules.at(-1)!.topic, 'plant/c/temp');
});

test('retained limits: an admitted new topic holds its place until retained or released, across two workers\' routers; a replace and a clear need none; the default expiry goes on the retained copy only', () => {
  const shared = new SharedArrayBuffer(8);
  const name = `wr-${randomUUID()}`;
  const { router: w0 } = setup(0, shared, name);
  const w1 = new WorkerRouter(setup(1).host, Router.open(name), RetainedStore.open(name), shared);
  for (const r of [w0, w1]) r.setRetainedLimits({ maxCount: 2, maxPayload: 8, defaultExpiryMs: 60_000 });
  w0.retain(message('lim/a', 1, true, 'a'));
  // One place left: w0 admits a new topic (held while its store write would run), so w1 cannot.
  const held = message('lim/b', 1, true, 'b');
  assert.equal(w0.retainRefusal(held), null);
  assert.equal(w1.retainRefusal(message('lim/c', 1, true, 'c')), 'count');
  assert.equal(w1.retainRefusal(message('lim/a', 1, true, 'again')), null, 'a replace');
  assert.equal(w1.retainRefusal(message('lim/c', 1, true, '')), null, 'a clear');
  assert.equal(w1.retainRefusal(message('lim/a', 1, true, 'too long!')), 'size');
  // Given back (its store write failed): w1 may take it, and its retain takes the place.
  w0.releaseRetained(held);
  const taken = message('lim/c', 1, true, 'c');
  assert.equal(w1.retainRefusal(taken), null);
  w1.retain(taken);
  assert.equal(w0.retained.counted, 2);
  assert.equal(w0.retainRefusal(message('lim/d', 1, true, 'd')), 'count');
  // The retained record expires after the default; the message itself keeps none.
  const rec = w0.retained.get('lim/c')!;
  assert.ok(Math.abs(rec.readDoubleLE(16) - (taken.receivedAt + 60_000)) < 1);
  assert.equal(taken.expiresAt, 0);
});
