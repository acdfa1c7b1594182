// needs: broker
// The console overview counts what the Messages and Topics pages list: clients' retained messages
// (not the broker's $SYS ones) and clients' subscriptions (not the broker's own handles for rules
// and log topics, counted apart as internal, nor $SYS ones, counted apart too). It showed
// "Retained 12" beside an empty Messages page.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import WebSocket from 'ws';
import type { MqttClient } from 'mqtt';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, ADMIN_PASSWORD } from '../helpers/broker.ts';
import { waitFor } from '../helpers/wait.ts';
import { clientRetainedCount } from '../../src/broker/client-retained.ts';
import type { LiveSample } from '../../src/admin/console/live-feed.ts';

let b: AdminBroker;
let client: MqttClient;
before(async () => {
  b = await startAdminBroker({ sys: { enabled: true, interval: 1 } });
  client = await connect(b.url, { clientId: 'counted' });
});
after(async () => {
  client.end(true);
  await b.stop();
});

/** The next samples of /api/live, signed in as the console is. */
async function liveSamples(): Promise<{ next(check: (s: LiveSample) => boolean): Promise<LiveSample>; close(): void }> {
  const login = await b.api('POST', '/public/login', { as: 'none', body: { username: 'admin', password: ADMIN_PASSWORD } });
  const socket = new WebSocket(`ws://127.0.0.1:${b.admin!.port}/api/live`, { headers: { authorization: `Bearer ${login.json.token}`, origin: `http://127.0.0.1:${b.admin!.port}` } });
  let last: LiveSample | undefined;
  socket.on('message', (data) => { last = JSON.parse(String(data)) as LiveSample; });
  return {
    next: (check) => waitFor(() => (last && check(last) ? last : undefined), { message: 'a live sample with the expected counts', timeout: 10_000 })
      .catch((err: Error) => {
        throw new Error(`${err.message}; the last sample: ${JSON.stringify(last && { subscriptions: last.subscriptions, retained: last.retained })}`, { cause: err });
      }),
    close: () => socket.close(),
  };
}

test('the overview counts clients\' retained messages and subscriptions, as the Messages and Topics pages list them', async () => {
  // The broker's own: $SYS statistics (retained), a rule and a log topic (router handles).
  await waitFor(() => b.supervisor.retained.match('$SYS/#').length > 0, { message: '$SYS published' });
  assert.equal((await b.api('POST', '/rule/add', { body: { name: 'counted-rule', sql: 'SELECT * FROM "ruled/#"', actions: [{ type: 'republish', config: { topic: 'elsewhere/x' } }] } })).status, 200);
  assert.equal((await b.api('POST', '/api/log/topic/add', { body: { topic: 'logged/#', level: 'INFO' } })).status, 200);
  // The client's: two subscriptions and one retained message.
  await client.subscribeAsync(['a/b', 'c/#'], { qos: 1 });
  await client.publishAsync('a/b', 'kept', { qos: 1, retain: true });

  const messages = (await b.api('POST', '/mqtt/retain/query', { body: { topic: '#', page: 1, size: 1000 } })).json;
  const topics = (await b.api('POST', '/topic/query', { body: { page: 1, size: 1000 } })).json;
  assert.equal(messages.total, 1, 'the Messages page lists the client\'s retained message');
  const listedSubscriptions = topics.data.reduce((n: number, t: { subscribers: number }) => n + t.subscribers, 0);
  assert.equal(listedSubscriptions, 2, `the Topics page lists the client's filters: ${JSON.stringify(topics.data)}`);
  assert.ok(b.supervisor.retained.size > messages.total, 'the store also holds $SYS messages');
  assert.ok(b.supervisor.router.subscriptionCount > 2, 'the router also holds the rule\'s and log topic\'s handles');

  const live = await liveSamples();
  try {
    const sample = await live.next((s) => s.subscriptions === 2 && s.retained === 1);
    assert.equal(sample.retained, messages.total);
    assert.equal(sample.subscriptions, listedSubscriptions);
    assert.equal(topics.subscriptions, sample.subscriptions, '/topic/query\'s total agrees');
    // Counted apart: no $SYS subscription yet; the rule's and the log topic's handles internal.
    assert.equal(sample.subscriptionsSys, 0);
    assert.equal(sample.subscriptionsInternal, b.supervisor.router.subscriptionCount - 2);
    assert.ok(sample.subscriptionsInternal >= 2, `the rule and the log topic: ${sample.subscriptionsInternal}`);
    // A client's $SYS subscription is counted as $SYS, not among the others.
    await client.subscribeAsync('$SYS/broker/#', { qos: 0 });
    const after = await live.next((s) => s.subscriptionsSys === 1);
    assert.equal(after.subscriptions, 2);
    const again = (await b.api('POST', '/topic/query', { body: { page: 1, size: 1000 } })).json;
    assert.deepEqual([again.subscriptions, again.sysSubscriptions], [2, 1]);
  } finally {
    live.close();
  }
  assert.equal(clientRetainedCount(b.supervisor.retained), 1);
});
