// The console's live feed and session cookie, without a browser: rates per second between two
// samples (summed over workers and endpoints, a restarted worker giving no negative rate), and
// the session cookie's attributes and parsing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';

import { LiveFeed } from '../../src/admin/console/live-feed.ts';
import { bearerFromCookie, clearedCookie, sessionCookie } from '../../src/admin/console/session-cookie.ts';
import { EndpointStats } from '../../src/stats/endpoint-stats.ts';
import type { WorkerMetricsSnapshot } from '../../src/worker/ops/metrics.ts';
import { createLogger } from '../../src/log/index.ts';

const testLogger = () => createLogger({ level: 'error', name: 'test', stream: new Writable({ write: (_c, _e, cb) => cb() }) });

function worker(id: number, endpoints: { id: string; port: number; connections: number; received: number; sent: number; dropped: number }[]): WorkerMetricsSnapshot {
  return {
    worker: id,
    endpoints: endpoints.map((e) => {
      const s = new EndpointStats();
      s.connectionsCurrent = e.connections;
      s.messagesReceived = e.received;
      s.messagesSent = e.sent;
      s.dropped.others = e.dropped;
      return { id: e.id, port: e.port, running: true, maxConnectionSize: null, maxSessionSize: null, stats: s.snapshot() };
    }),
  } as unknown as WorkerMetricsSnapshot;
}

test('live samples: rates per second since the previous sample, summed over workers and endpoints', () => {
  const feed = new LiveFeed({ nodeName: 'n1', metrics: async () => [], subscriptions: () => 7, retained: () => 3 }, () => {}, testLogger());
  const first = feed.sample([worker(0, [{ id: 'tcp', port: 1883, connections: 2, received: 100, sent: 50, dropped: 0 }]), worker(1, [{ id: 'tcp', port: 1883, connections: 1, received: 10, sent: 5, dropped: 0 }])], 10_000);
  assert.deepEqual([first.connections, first.in, first.out, first.subscriptions, first.retained, first.node], [3, 0, 0, 7, 3, 'n1'], 'no rate without a previous sample');
  const second = feed.sample([
    worker(0, [{ id: 'tcp', port: 1883, connections: 2, received: 300, sent: 150, dropped: 4 }, { id: 'ws', port: 8083, connections: 1, received: 20, sent: 0, dropped: 0 }]),
    worker(1, [{ id: 'tcp', port: 1883, connections: 1, received: 10, sent: 5, dropped: 0 }]),
  ], 12_000);
  assert.equal(second.in, (300 + 10 - 110) / 2, 'tcp: 200 more over 2 s; ws is new (no rate yet)');
  assert.equal(second.out, 50);
  assert.equal(second.dropped, 2);
  assert.deepEqual(second.endpoints.map((e) => [e.id, e.port, e.connections]), [['tcp', 1883, 3], ['ws', 8083, 1]]);
  // A worker restarted: its counters start again from zero; the rate is not negative.
  const third = feed.sample([worker(0, [{ id: 'tcp', port: 1883, connections: 0, received: 0, sent: 0, dropped: 0 }])], 13_000);
  assert.equal(third.in, 0);
});

test('the session cookie: HttpOnly, SameSite=Strict, until the token expires; read back from a Cookie header', () => {
  const expires = new Date(Date.now() + 3600_000).toISOString();
  const c = sessionCookie('abc.def', expires, false);
  assert.match(c, /^spindle_session=abc\.def; Max-Age=(3599|3600); Path=\/; HttpOnly; SameSite=Strict$/);
  assert.match(sessionCookie('t', expires, true), /; Secure$/);
  assert.match(clearedCookie(), /^spindle_session=; Max-Age=0;/);
  assert.equal(bearerFromCookie('a=1; spindle_session=abc.def; b=2'), 'Bearer abc.def');
  assert.equal(bearerFromCookie('spindle_session='), undefined);
  assert.equal(bearerFromCookie('other=x'), undefined);
  assert.equal(bearerFromCookie(undefined), undefined);
});
