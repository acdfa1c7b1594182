// The console's live feed and session cookie, without a browser: rates per second between two
// samples (summed over workers and endpoints, a restarted worker giving no negative rate), and
// the session cookie's attributes and parsing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';

import { LiveFeed, PEER_STALE_MS, type PeerTotals } from '../../src/admin/console/live-feed.ts';
import { bearerFromCookie, clearedCookie, sessionCookie } from '../../src/admin/console/session-cookie.ts';
import { EndpointStats } from '../../src/stats/endpoint-stats.ts';
import type { WorkerMetricsSnapshot } from '../../src/worker/ops/metrics.ts';
import { createLogger } from '../../src/log/index.ts';

const testLogger = () => createLogger({ level: 'error', name: 'test', stream: new Writable({ write: (_c, _e, cb) => cb() }) });

function worker(id: number, endpoints: { id: string; port: number; connections: number; received: number; sent: number; dropped: number }[], subscriptions = 0): WorkerMetricsSnapshot {
  return {
    worker: id,
    stats: { subscriptions },
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
  const feed = new LiveFeed({ nodeName: 'n1', metrics: async () => [], retained: () => 3 }, () => {}, testLogger());
  const first = feed.sample([worker(0, [{ id: 'tcp', port: 1883, connections: 2, received: 100, sent: 50, dropped: 0 }], 5), worker(1, [{ id: 'tcp', port: 1883, connections: 1, received: 10, sent: 5, dropped: 0 }], 2)], 10_000);
  assert.deepEqual([first.connections, first.in, first.out, first.subscriptions, first.retained, first.node], [3, 0, 0, 7, 3, 'n1'], 'no rate without a previous sample; subscriptions summed over the workers\' sessions');
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

test('live samples in a cluster: every node\'s figures, each node asked on its own (a hung node holds no other back), the missing ones named', async () => {
  type Answer = { results: PeerTotals[] } | { reason: string };
  let running = ['n2', 'n3'];
  const asked: string[] = [];
  const answers: Record<string, ((a: Answer) => void)[]> = { n2: [], n3: [] };
  const feed = new LiveFeed({
    nodeName: 'n1', metrics: async () => [], retained: () => 0,
    peers: { running: () => running, ask: (node) => new Promise<Answer>((resolve) => { asked.push(node); answers[node].push(resolve); }) },
  }, () => {}, testLogger());
  const settle = () => new Promise((r) => setImmediate(r));
  const totals = (t: number, connections: number, received: number, sent: number): Answer => ({ results: [{ t, connections, received, sent, dropped: 0 }] });
  const local = [worker(0, [{ id: 'tcp', port: 1883, connections: 1, received: 0, sent: 0, dropped: 0 }])];

  feed.askPeers();
  answers.n2[0](totals(1000, 4, 100, 10));
  await settle();
  let s = feed.sample(local, Date.now());
  assert.deepEqual(s.nodes, [{ node: 'n1', self: true, connections: 1, in: 0, out: 0, dropped: 0 }, { node: 'n2', self: false, connections: 4, in: 0, out: 0, dropped: 0 }]);
  assert.deepEqual(s.nodesMissing, [{ node: 'n3', reason: 'no answer yet' }]);

  // Next tick: n2 asked again, n3 (its question still open) not; n2's rates on its own clock.
  feed.askPeers();
  assert.deepEqual(asked, ['n2', 'n3', 'n2']);
  answers.n2[1](totals(3000, 5, 300, 50));
  await settle();
  s = feed.sample(local, Date.now());
  assert.deepEqual(s.nodes!.map((n) => [n.node, n.connections, n.in, n.out]), [['n1', 1, 0, 0], ['n2', 5, 100, 20]]);
  // n3 gives up (the query's timeout): named with the reason, then asked again at the next tick.
  answers.n3[0]({ reason: 'no answer within 5000 ms' });
  await settle();
  assert.deepEqual(feed.sample(local, Date.now()).nodesMissing, [{ node: 'n3', reason: 'no answer within 5000 ms' }]);
  feed.askPeers();
  assert.deepEqual(asked.slice(3), ['n2', 'n3']);
  // An old answer arriving late changes nothing; a restarted node's counters give no negative rate.
  answers.n2[2](totals(2000, 9, 0, 0));
  await settle();
  assert.equal(feed.sample(local, Date.now()).nodes![1].connections, 5);
  // A node that stops running is forgotten; figures older than PEER_STALE_MS are left out.
  running = ['n2'];
  feed.askPeers();
  // (The answers were taken on the real clock: a sample that long after.)
  s = feed.sample(local, Date.now() + PEER_STALE_MS + 1);
  assert.deepEqual(s.nodes!.map((n) => n.node), ['n1']);
  assert.deepEqual(s.nodesMissing, [{ node: 'n2', reason: `no figures for ${PEER_STALE_MS / 1000} s` }]);
});

test('live samples on a single node have no per-node part', () => {
  const feed = new LiveFeed({ nodeName: 'n1', metrics: async () => [], retained: () => 0 }, () => {}, testLogger());
  const s = feed.sample([], 1000);
  assert.equal(s.nodes, undefined);
  assert.equal(s.nodesMissing, undefined);
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
