// Exclusive subscriptions end to end, on a broker with two workers (the place is the node's, shared
// by both): one client holds $exclusive/{filter}, another is refused 0x97 (mqtt.js, MQTT 5) or
// 0x80 (mosquitto_sub, MQTT 3.1.1); the holder receives as from {filter}; the place frees when
// the holder unsubscribes, disconnects with a clean session, its persistent session ends (expiry,
// Clean Start, kick), and
// not while that session lives; the holders through the admin API, the metrics.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';

import { connect, nextMessages, end, persistent } from '../helpers/broker.ts';
import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { ownChild } from '../helpers/children.ts';
import { ExclusiveTable } from '../../src/features/exclusive/table.ts';

let b: AdminBroker;
before(async () => { b = await startAdminBroker({ workers: 2 }); });
after(async () => { await b?.stop(); });

test('the table: one holder per filter, freed by its holder only, tombstones keep later places', () => {
  const t = new ExclusiveTable();
  assert.equal(t.acquire('a/b', 'c1'), 'taken');
  assert.equal(t.acquire('a/b', 'c1'), 'held');
  assert.equal(t.acquire('a/b', 'c2'), 'busy');
  assert.equal(t.release('a/b', 'c2'), false);
  assert.equal(t.acquire('a/c', 'c2'), 'taken');
  assert.equal(t.release('a/b', 'c1'), true);
  assert.equal(t.acquire('a/c', 'c3'), 'busy');
  assert.equal(t.acquire('a/b', 'c2'), 'taken');
  assert.equal(t.size(), 2);
});

function mosquittoSub311(filter: string): Promise<string> {
  const p = ownChild(spawn('mosquitto_sub', ['-h', '127.0.0.1', '-p', String(b.ports.tcp), '-V', 'mqttv311', '-t', filter, '-C', '1', '-W', '5', '-d']));
  let out = '';
  p.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  p.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve) => p.on('exit', () => resolve(out)));
}

/** The SUBACK code of one filter (mqtt.js rejects a refusal: its code is in the packet). */
async function granted(c: Awaited<ReturnType<typeof connect>>, filter: string): Promise<number> {
  try {
    return (await c.subscribeAsync(filter, { qos: 1 }))[0].qos;
  } catch (err) {
    const code = (err as { packet?: { granted?: number[] } }).packet?.granted?.[0];
    if (code === undefined) throw err;
    return code;
  }
}

test('one holder; others refused 0x97 / 0x80; the holder receives; the place frees on unsubscribe and disconnect', async () => {
  const a = await connect(b.url, { protocolVersion: 5, clientId: 'ex-a' });
  const other = await connect(b.url, { protocolVersion: 5, clientId: 'ex-b' });
  assert.equal(await granted(a, '$exclusive/ex/t/#'), 1);
  assert.equal(await granted(a, '$exclusive/ex/t/#'), 1); // again by the holder
  assert.equal(await granted(other, '$exclusive/ex/t/#'), 0x97);
  assert.match(await mosquittoSub311('$exclusive/ex/t/#'), /SUBACK[\s\S]*128/);
  assert.equal(await granted(other, 'ex/t/#'), 1); // the plain filter is not exclusive

  const pub = await connect(b.url, { protocolVersion: 5 });
  const got = nextMessages(a, 1);
  await pub.publishAsync('ex/t/1', 'x', { qos: 1 });
  assert.equal((await got)[0].topic, 'ex/t/1');

  let r = await b.api('GET', '/api/exclusive');
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.data, { enabled: true, holders: [{ clientId: 'ex-a', filter: 'ex/t/#', connected: true }] });

  await a.unsubscribeAsync('$exclusive/ex/t/#');
  assert.equal(await granted(other, '$exclusive/ex/t/#'), 1);
  // Its clean session ends with its connection: the place frees.
  await end(other);
  const c = await connect(b.url, { protocolVersion: 5, clientId: 'ex-c' });
  assert.equal(await granted(c, '$exclusive/ex/t/#'), 1);
  r = await b.api('GET', '/prometheus');
  assert.match(r.text, /spindle_exclusive_refused_total\{reason="busy"\} 2/);
  assert.match(r.text, /spindle_exclusive_subscriptions 1/);
  await end(a, c, pub);
});

test('a persistent session keeps its place while it lives, and frees it when it ends', async () => {
  const p = await connect(b.url, { ...persistent('ex-p'), properties: { sessionExpiryInterval: 1 } });
  assert.equal(await granted(p, '$exclusive/ex/p'), 1);
  await end(p);
  const q = await connect(b.url, { protocolVersion: 5, clientId: 'ex-q' });
  assert.equal(await granted(q, '$exclusive/ex/p'), 0x97); // the session lives (1 s expiry)
  const start = Date.now();
  let code = 0x97;
  while (code === 0x97 && Date.now() - start < 5000) {
    await new Promise((r) => setTimeout(r, 200));
    code = await granted(q, '$exclusive/ex/p');
  }
  assert.equal(code, 1);
  await end(q);
});

test('a persistent session replaced by a Clean Start frees its place; so does a kick', async () => {
  const p = await connect(b.url, persistent('ex-r'));
  assert.equal(await granted(p, '$exclusive/ex/r'), 1);
  await end(p);
  const again = await connect(b.url, { protocolVersion: 5, clientId: 'ex-r', clean: true });
  await end(again);
  const q = await connect(b.url, { protocolVersion: 5, clientId: 'ex-s' });
  assert.equal(await granted(q, '$exclusive/ex/r'), 1);
  const r = await b.api('POST', '/mqtt/connection/close', { body: { clientId: 'ex-s' } });
  assert.equal(r.status, 200, r.text);
  const t = await connect(b.url, { protocolVersion: 5, clientId: 'ex-t' });
  assert.equal(await granted(t, '$exclusive/ex/r'), 1);
  await end(q, t);
});
