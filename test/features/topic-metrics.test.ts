// Topic metrics end to end: a filter of the configuration and one created through the admin API
// count exactly the messages, bytes and QoS mix of their topics (mqtt.js and mosquitto_pub), not
// those of other topics; messages to no subscriber count as dropped; the bound refuses a creation
// past topicMetrics.max naming the field, counted; the Prometheus lines summed over two workers;
// reset and delete; a filter created later has rates from its first sample on. And the filter
// trie's matching on its own.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';

import { connect, nextMessages, end } from '../helpers/broker.ts';
import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { waitFor } from '../helpers/wait.ts';
import { FilterTrie } from '../../src/features/topic-metrics/filter-trie.ts';

const SENSORS = encodeURIComponent('sensors/+/temp');
const JSON_TYPE = { 'content-type': 'application/json' };

let b: AdminBroker;
before(async () => {
  b = await startAdminBroker({ workers: 2, topicMetrics: { filters: ['cfg/#'], max: 4 } });
});
after(async () => { await b?.stop(); });

test('the filter trie: wildcards, the parent of #, and $ topics', () => {
  const t = new FilterTrie(['a/+/c', 'a/#', '#', 'b', '+/b', '$SYS/#', 'a/b/c']);
  const hits = (topic: string) => {
    const h: number[] = [];
    t.match(topic, h);
    return h.sort((x, y) => x - y);
  };
  assert.deepEqual(hits('a/b/c'), [0, 1, 2, 6]);
  assert.deepEqual(hits('a'), [1, 2]); // 'a/#' matches 'a'
  assert.deepEqual(hits('b'), [2, 3]);
  assert.deepEqual(hits('x/b'), [2, 4]);
  assert.deepEqual(hits('$SYS/x'), [5]); // no wildcard-first filter matches a $ topic
  assert.deepEqual(hits('c/d/e'), [2]);
});

test('a filter counts its messages, bytes and QoS mix, in and out, and nothing else', async () => {
  let r = await b.api('POST', '/api/topic-metrics', { body: { filter: 'sensors/+/temp' } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.data.source, 'api');
  assert.equal(r.json.data.metrics.messages.in.total, 0);
  r = await b.api('POST', '/api/topic-metrics', { body: { filter: 'sensors/+/temp' } });
  assert.equal(r.status, 409, r.text);
  r = await b.api('POST', '/api/topic-metrics', { body: { filter: 'a/#/b' } });
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.field, 'filter');

  const sub = await connect(b.url, { protocolVersion: 5 });
  await sub.subscribeAsync('sensors/#', { qos: 2 });
  const pub = await connect(b.url, { protocolVersion: 5 });
  const got = nextMessages(sub, 5);
  await pub.publishAsync('sensors/1/temp', 'abc', { qos: 0 });
  await pub.publishAsync('sensors/1/temp', 'hello', { qos: 1 });
  await pub.publishAsync('sensors/1/temp', 'xy', { qos: 2 });
  await pub.publishAsync('sensors/1/hum', 'zzzzzz', { qos: 1 }); // another topic: not counted
  execFileSync('mosquitto_pub', ['-h', '127.0.0.1', '-p', String(b.ports.tcp), '-q', '1', '-t', 'sensors/2/temp', '-m', 'mosq']);
  assert.equal((await got).length, 5);
  // To no subscriber: dropped for cfg/#.
  await pub.publishAsync('cfg/x', 'n', { qos: 1 });

  const m = await waitFor(async () => {
    const res = await b.api('GET', `/api/topic-metrics/${SENSORS}`);
    return res.json.data.metrics.messages.out.total === 4 ? res.json.data.metrics : null;
  });
  assert.deepEqual({ ...m.messages.in, rate: 0 }, { total: 4, qos0: 1, qos1: 2, qos2: 1, rate: 0 });
  assert.deepEqual({ ...m.messages.out, rate: 0 }, { total: 4, qos0: 1, qos1: 2, qos2: 1, rate: 0 });
  assert.equal(m.messages.dropped.total, 0);
  assert.equal(m.bytes.in.total, 3 + 5 + 2 + 4);
  assert.equal(m.bytes.out.total, 3 + 5 + 2 + 4);

  const list = await b.api('GET', '/api/topic-metrics');
  const cfg = list.json.data.find((x: { filter: string }) => x.filter === 'cfg/#');
  assert.equal(cfg.source, 'config');
  assert.equal(cfg.metrics.messages.in.total, 1);
  assert.equal(cfg.metrics.messages.in.qos1, 1);
  assert.equal(cfg.metrics.messages.out.total, 0);
  assert.equal(cfg.metrics.messages.dropped.total, 1);

  const prom = (await b.api('GET', '/prometheus')).text;
  assert.match(prom, /^spindle_topic_messages_total\{filter="sensors\/\+\/temp",direction="in",qos="1"\} 2$/m);
  assert.match(prom, /^spindle_topic_messages_total\{filter="sensors\/\+\/temp",direction="out",qos="2"\} 1$/m);
  assert.match(prom, /^spindle_topic_bytes_total\{filter="sensors\/\+\/temp",direction="in"\} 14$/m);
  assert.match(prom, /^spindle_topic_messages_dropped_total\{filter="cfg\/#"\} 1$/m);
  assert.match(prom, /^spindle_topic_metrics_filters 2$/m);

  // Reset: back to zero.
  r = await b.api('PUT', `/api/topic-metrics/${SENSORS}/reset`, { headers: JSON_TYPE });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.data.metrics.messages.in.total, 0);
  assert.equal(r.json.data.metrics.bytes.out.total, 0);
  await end(sub, pub);
});

test('a filter created after the rates\' oldest sample has a rate from its first sample on, not after the 30 s window', async () => {
  const rateOf = async (filter: string, dir: 'in' | 'out') => (await b.api('GET', `/api/topic-metrics/${encodeURIComponent(filter)}`)).json.data.metrics.messages[dir].rate as number;
  const pub = await connect(b.url, { protocolVersion: 5 });
  let n = 0;
  const traffic = setInterval(() => {
    pub.publish('cfg/rate', 'x', { qos: 0 });
    pub.publish('late/rate', 'y', { qos: 0 });
    n++;
  }, 100);
  try {
    // cfg/# has a rate: a sample that has it, taken before late/# exists, is in the window.
    await waitFor(async () => (await rateOf('cfg/#', 'in')) > 0, { message: 'cfg/# has a rate' });
    assert.equal((await b.api('POST', '/api/topic-metrics', { body: { filter: 'late/#' } })).status, 200);
    // The next sample (every 5 s) starts late/#'s rates: well before that older sample leaves the 30 s window.
    const sent = n;
    await waitFor(async () => (await rateOf('late/#', 'in')) > 0, { timeout: 15_000, interval: 500, message: 'late/# has a rate within 15 s' });
    assert.ok(n > sent);
  } finally {
    clearInterval(traffic);
    await end(pub);
    await b.api('DELETE', `/api/topic-metrics/${encodeURIComponent('late/#')}`, { headers: JSON_TYPE });
  }
});

test('past topicMetrics.max a creation is refused naming the field, and counted', async () => {
  const list = (await b.api('GET', '/api/topic-metrics')).json.data as unknown[];
  for (let i = list.length; i < 4; i++) assert.equal((await b.api('POST', '/api/topic-metrics', { body: { filter: `bound/${i}` } })).status, 200);
  const r = await b.api('POST', '/api/topic-metrics', { body: { filter: 'bound/over' } });
  assert.equal(r.status, 409, r.text);
  assert.equal(r.json.field, 'filter');
  assert.match(r.json.message, /topicMetrics\.max/);
  assert.match((await b.api('GET', '/prometheus')).text, /^spindle_topic_metrics_refused_total 1$/m);

  // A filter of the configuration is not deleted here; one of the API is.
  assert.equal((await b.api('DELETE', `/api/topic-metrics/${encodeURIComponent('cfg/#')}`, { headers: JSON_TYPE })).status, 409);
  assert.equal((await b.api('DELETE', `/api/topic-metrics/${SENSORS}`, { headers: JSON_TYPE })).status, 200);
  assert.equal((await b.api('GET', `/api/topic-metrics/${SENSORS}`)).status, 404);
  assert.equal((await b.api('POST', '/api/topic-metrics', { body: { filter: 'bound/over' } })).status, 200);
});
