// Slow subscribers end to end: a subscriber that holds its PUBACK (mqtt.js, manual acks) is in
// the top list with a latency above the threshold, fast ones on the same topic (mqtt.js,
// mosquitto_sub) are not; a QoS 2
// subscriber that holds its PUBREC counts until PUBCOMP; clearing the list; the settings through
// the API, bad ones refused naming the field; the Prometheus counters.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';

import { connect, nextMessages, end } from '../helpers/broker.ts';
import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { waitFor } from '../helpers/wait.ts';
import { ownChild } from '../helpers/children.ts';

const JSON_TYPE = { 'content-type': 'application/json' };
const HOLD_MS = 400;

interface Record_ {
  clientId: string;
  topic: string;
  latency: number;
}

let b: AdminBroker;
before(async () => {
  b = await startAdminBroker({ workers: 2, slowSubs: { enable: true, threshold: 200, window: 60 } });
});
after(async () => { await b?.stop(); });

/** A v5 subscriber whose acknowledgements (PUBACK, PUBREC) leave `holdMs` after each PUBLISH. */
function holding(clientId: string, holdMs: number) {
  return connect(b.url, {
    clientId,
    protocolVersion: 5,
    customHandleAcks: (_topic, _message, _packet, done) => {
      setTimeout(() => done(0), holdMs);
    },
  });
}

test('a subscriber that holds its PUBACK is in the top list, a fast one is not', async () => {
  const slow = await holding('slow-1', HOLD_MS);
  const fast = await connect(b.url, { clientId: 'fast-1', protocolVersion: 5 });
  await slow.subscribeAsync('orders/+', { qos: 1 });
  await fast.subscribeAsync('orders/+', { qos: 1 });
  // mosquitto_sub: a fast QoS 1 subscriber too, ready once its SUBACK came (-d prints it; stdbuf:
  // line by line, not when it exits).
  const mosq = ownChild(spawn('stdbuf', ['-oL', 'mosquitto_sub', '-h', '127.0.0.1', '-p', String(b.ports.tcp), '-i', 'mosq-fast', '-q', '1', '-t', 'orders/+', '-C', '1', '-W', '10', '-d']));
  let mosqOut = '';
  mosq.stdout!.on('data', (d: Buffer) => (mosqOut += d.toString()));
  const mosqDone = new Promise((resolve) => mosq.on('exit', resolve));
  await waitFor(() => mosqOut.includes('SUBACK'), { message: 'mosquitto_sub subscribed' });
  const pub = await connect(b.url, { protocolVersion: 5 });
  const got = nextMessages(fast, 1);
  await pub.publishAsync('orders/1', 'x', { qos: 1 });
  await got;
  await mosqDone;
  assert.match(mosqOut, /PUBACK/);
  const top = await waitFor(async () => {
    const r = await b.api('GET', '/api/slow-subscriptions');
    return (r.json.data as Record_[]).length > 0 ? (r.json.data as Record_[]) : null;
  });
  assert.equal(top.length, 1, JSON.stringify(top));
  assert.equal(top[0].clientId, 'slow-1');
  assert.equal(top[0].topic, 'orders/1');
  assert.ok(top[0].latency >= 200 && top[0].latency < 5000, JSON.stringify(top));

  // QoS 2: timed until PUBCOMP (the PUBREC held).
  const slow2 = await holding('slow-2', HOLD_MS);
  await slow2.subscribeAsync('queue/2', { qos: 2 });
  await pub.publishAsync('queue/2', 'y', { qos: 2 });
  const both = await waitFor(async () => {
    const r = await b.api('GET', '/api/slow-subscriptions');
    return (r.json.data as Record_[]).some((x) => x.clientId === 'slow-2') ? (r.json.data as Record_[]) : null;
  });
  const q2 = both.find((x) => x.clientId === 'slow-2')!;
  assert.ok(q2.latency >= 200, JSON.stringify(both));
  assert.equal(q2.topic, 'queue/2');
  assert.ok(!both.some((x) => x.clientId === 'fast-1' || x.clientId === 'mosq-fast'), JSON.stringify(both));

  const prom = (await b.api('GET', '/prometheus')).text;
  const recorded = Number(/^spindle_slow_subs_recorded_total (\d+)$/m.exec(prom)?.[1]);
  assert.ok(recorded >= 2, prom.match(/spindle_slow_subs.*/g)?.join('\n'));
  assert.match(prom, /^spindle_slow_subs_entries 2$/m, prom.match(/^spindle_slow_subs.*/gm)?.join("\n"));

  const cleared = await b.api('DELETE', '/api/slow-subscriptions', { headers: JSON_TYPE });
  assert.equal(cleared.status, 200, cleared.text);
  assert.deepEqual((await b.api('GET', '/api/slow-subscriptions')).json.data, []);
  await end(slow, slow2, fast, pub);
});

test('settings through the API: bad ones refused naming the field; a higher threshold records nothing', async () => {
  let r = await b.api('PUT', '/api/slow-subscriptions/settings', { body: { topK: 0 } });
  assert.equal(r.status, 400, r.text);
  assert.match(r.text, /topK/);
  r = await b.api('PUT', '/api/slow-subscriptions/settings', { body: { statsType: 'sometimes' } });
  assert.equal(r.status, 400, r.text);
  r = await b.api('PUT', '/api/slow-subscriptions/settings', { body: { threshold: 3000, statsType: 'response' } });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.data, { enable: true, threshold: 3000, topK: 10, window: 60, statsType: 'response', source: 'api' });
  assert.equal((await b.api('GET', '/api/slow-subscriptions/settings')).json.data.threshold, 3000);

  const slow = await holding('slow-3', HOLD_MS);
  await slow.subscribeAsync('orders/3', { qos: 1 });
  const pub = await connect(b.url, { protocolVersion: 5 });
  const acked = new Promise<void>((resolve) => slow.on('packetsend', (p) => { if (p.cmd === 'puback') resolve(); }));
  await pub.publishAsync('orders/3', 'z', { qos: 1 });
  await acked;
  // The broker has handled that PUBACK once it answers a later packet of the same connection.
  await slow.publishAsync('orders/none', 'w', { qos: 1 });
  assert.deepEqual((await b.api('GET', '/api/slow-subscriptions')).json.data, []);

  r = await b.api('PUT', '/api/slow-subscriptions/settings', { body: { enable: false } });
  assert.equal(r.json.data.enable, false);
  await end(slow, pub);
});
