// The routing core through N-API: the delivery layout, typed errors, the retained index,
// panics as exceptions, and the SO_REUSEPORT listener helper.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';

import {
  Router, RetainedIndex, DELIVERY_SHARED, DELIVERY_RAP, NO_PUBLISHER, native, TopicError,
  reuseportListener, listenerPort, debugPanic,
} from '../../src/native/index.ts';

type D = { session: number; worker: number; qos: number; rap: boolean; shared: boolean; ids: number[] };
function deliveries(router: InstanceType<typeof Router>, topic: string, publisher = NO_PUBLISHER, hash = 0): D[] {
  const out = new Uint32Array(1024);
  const n = Number(router.match(topic, publisher, hash, out));
  const ds: D[] = [];
  for (let i = 0; i < n; i += 3 + out[i + 2]) {
    ds.push({
      session: out[i], worker: out[i + 1] & 0xffff, qos: (out[i + 1] >> 16) & 3,
      rap: !!(out[i + 1] & DELIVERY_RAP), shared: !!(out[i + 1] & DELIVERY_SHARED),
      ids: [...out.subarray(i + 3, i + 3 + out[i + 2])].sort((a, b) => a - b),
    });
  }
  return ds.sort((a, b) => a.session - b.session);
}

for (const cacheCapacity of [0, 64]) {
  test(`overlapping subscriptions give one delivery, highest QoS, every id [MQTT-3.3.4-2..5] (cache ${cacheCapacity})`, () => {
    const name = `t1-${cacheCapacity}`;
    const r = Router.open(name, { cacheCapacity });
    r.subscribe('a/+/c', 1, 0, 0, 11);
    r.subscribe('a/#', 1, 0, 2 | 8, 12); // QoS 2, retain as published
    r.subscribe('a/b/c', 2, 1, 1);
    assert.deepEqual(deliveries(r, 'a/b/c'), [
      { session: 1, worker: 0, qos: 2, rap: true, shared: false, ids: [11, 12] },
      { session: 2, worker: 1, qos: 1, rap: false, shared: false, ids: [] },
    ]);
    assert.ok(r.unsubscribe('a/#', 1));
    assert.deepEqual(deliveries(r, 'a/b/c')[0], { session: 1, worker: 0, qos: 0, rap: false, shared: false, ids: [11] });
    Router.close(name);
  });
}

test('No Local skips the publisher\'s own subscription [MQTT-3.8.3-3]', () => {
  const r = Router.open('t-nl');
  r.subscribe('x', 5, 0, 1 | 4);
  r.subscribe('x', 6, 0, 1);
  assert.deepEqual(deliveries(r, 'x', 5).map((d) => d.session), [6]);
  assert.deepEqual(deliveries(r, 'x', 6).map((d) => d.session), [5, 6]);
  Router.close('t-nl');
});

test('a shared group delivers each message to one member, round robin', () => {
  const r = Router.open('t-share');
  for (const s of [1, 2, 3]) r.subscribe('$share/g/s/+', s, 0, 1);
  const seen: number[] = [];
  for (let i = 0; i < 6; i++) {
    const d = deliveries(r, 's/x');
    assert.equal(d.length, 1);
    assert.ok(d[0].shared);
    seen.push(d[0].session);
  }
  assert.deepEqual([...seen].sort(), [1, 1, 2, 2, 3, 3]);
  assert.equal(r.removeSession(2), 1);
  assert.ok(Array.from({ length: 4 }, () => deliveries(r, 's/x')[0].session).every((s) => s !== 2));
  Router.close('t-share');
});

test('an invalid filter is a TopicError with reason 0x8F; bad options are refused', () => {
  const r = Router.open('t-err');
  assert.throws(() => native(() => r.subscribe('a/#/b', 1, 0, 0)), (e: unknown) => e instanceof TopicError && e.reason === 0x8f);
  assert.throws(() => r.subscribe('a', 1, 0, 3), { code: 'INVALID_ARGUMENT' });
  assert.equal(r.subscriptionCount, 0, 'nothing was added');
  Router.close('t-err');
});

test('match reports the size it needs when the output is too small', () => {
  const r = Router.open('t-small');
  for (let s = 0; s < 10; s++) r.subscribe('t', s, 0, 0);
  assert.equal(Number(r.match('t', NO_PUBLISHER, 0, new Uint32Array(5))), -30);
  Router.close('t-small');
});

test('the retained index finds topics by filter, $ topics only by $ filters [MQTT-4.7.2-1]', () => {
  const idx = RetainedIndex.open('t-ret');
  idx.set('a/b', 1); idx.set('a/c', 2); idx.set('a/b/c', 3); idx.set('$SYS/x', 4);
  assert.equal(idx.set('a/b', 5), 1, 'replacing returns the old value');
  assert.deepEqual(idx.match('a/+').sort(), [2, 5]);
  assert.deepEqual(idx.match('#').sort(), [2, 3, 5]);
  assert.deepEqual(idx.match('$SYS/#'), [4]);
  assert.equal(idx.remove('a/c'), 2);
  assert.equal(idx.size, 3);
  assert.throws(() => idx.set('a/+', 1), { code: /./ });
  RetainedIndex.close('t-ret');
});

test('a Rust panic reaches JavaScript as an exception', () => {
  assert.throws(() => debugPanic('boom'), /boom/);
});

test('two SO_REUSEPORT sockets share one port and both accept', async () => {
  const fd1 = reuseportListener('127.0.0.1', 0);
  const port = listenerPort(fd1);
  const fd2 = reuseportListener('127.0.0.1', port);
  const servers = [fd1, fd2].map((fd) => net.createServer((s) => s.end('hi')).listen({ fd }));
  await Promise.all(servers.map((s) => once(s, 'listening')));
  for (let i = 0; i < 4; i++) {
    const c = net.connect(port, '127.0.0.1');
    const [data] = await once(c, 'data');
    assert.equal(String(data), 'hi');
    c.destroy();
  }
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});
