// needs: broker
// Schema checks on large payloads decoded off the listener thread (schemaRegistry.offloadBytes),
// end to end with mqtt.js and mosquitto_pub on one-worker brokers: an 8 KiB Protobuf payload made
// by protobufjs from a .proto this test writes is delivered, a bad one refused with 0x99 (v5
// QoS 1) and dropped on 3.1.1, the decode counted by the pool thread itself
// (spindle_schema_check_pooled_total, which only check-batch.ts, run by piscina, adds to);
// PUBACKs and deliveries keep the client's order across a mix of small inline and large
// offloaded PUBLISHes; the waiting bound sends messages inline, counted; offloadBytes 0 keeps
// every check inline.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

import { BIG, PROTO, Samples, bad, dir, samples } from './samples.ts';
import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end, nextMessages } from '../helpers/broker.ts';
import { waitFor } from '../helpers/wait.ts';


const brokers: AdminBroker[] = [];
after(() => Promise.all(brokers.map((b) => b.stop())));

async function broker(schemaRegistry: Record<string, unknown>): Promise<AdminBroker> {
  const b = await startAdminBroker({ workers: 1, schemaRegistry });
  brokers.push(b);
  let r = await b.api('POST', '/api/schemas', { body: { name: 'samples', type: 'protobuf', source: PROTO } });
  assert.equal(r.status, 200, r.text);
  r = await b.api('POST', '/api/schema-checks', { body: { filter: 'big/#', schema: 'samples', messageType: 'big.Samples' } });
  assert.equal(r.status, 200, r.text);
  return b;
}

async function metric(b: AdminBroker, name: string): Promise<number> {
  const text = (await b.api('GET', '/prometheus')).text;
  const m = new RegExp(`^${name.replace(/[{}"]/g, (c) => `\\${c}`)} (\\d+)$`, 'm').exec(text);
  assert.ok(m, `${name} in /prometheus`);
  return Number(m[1]);
}

function mosquittoPub(b: AdminBroker, args: string[]): Promise<number> {
  return new Promise((resolve) => {
    execFile('mosquitto_pub', ['-h', '127.0.0.1', '-p', String(b.ports.tcp), ...args], { timeout: 10_000 }, (err) => resolve(err ? (typeof err.code === 'number' ? err.code : -1) : 0));
  });
}

const decoded = (payload: string | Buffer) => Samples.decode(Buffer.isBuffer(payload) ? payload : Buffer.from(payload, 'latin1')) as unknown as { tag: string; v: number[] };

test('an 8 KiB payload is checked on a pool thread: good delivered, bad refused with 0x99 (v5 QoS 1 and 2) and dropped (3.1.1), counted', async () => {
  const b = await broker({ offloadBytes: 4096 });
  const sub = await connect(b.url, { clientId: 'off-sub', protocolVersion: 5 });
  await sub.subscribeAsync('big/#', { qos: 1 });
  const pub = await connect(b.url, { clientId: 'off-pub', protocolVersion: 5 });
  const good = samples('good', BIG);
  assert.ok(good.length > 8000 && good.length < 8300, `an 8 KiB payload (${good.length} B)`);
  const got = new Promise<Buffer>((resolve) => sub.once('message', (_t, p) => resolve(p)));
  await pub.publishAsync('big/a', good, { qos: 1 });
  assert.equal(decoded(await got).tag, 'good');
  await assert.rejects(pub.publishAsync('big/a', bad('bad', BIG), { qos: 1 }), (err: Error & { code?: number }) => err.code === 0x99);
  await assert.rejects(pub.publishAsync('big/a', bad('bad', BIG), { qos: 2 }), (err: Error & { code?: number }) => err.code === 0x99);
  // The refused QoS 2 exchange is over: a good QoS 2 message goes through.
  const got2 = new Promise<Buffer>((resolve) => sub.once('message', (_t, p) => resolve(p)));
  await pub.publishAsync('big/a', samples('good2', BIG), { qos: 2 });
  assert.equal(decoded(await got2).tag, 'good2');
  // MQTT 3.1.1: acknowledged and dropped. A good message after it is the marker that nothing
  // else came first.
  const badFile = path.join(dir, 'bad.bin');
  writeFileSync(badFile, bad('bad-v3', BIG));
  const goodFile = path.join(dir, 'good.bin');
  writeFileSync(goodFile, samples('marker', BIG));
  const next = nextMessages(sub, 1);
  assert.equal(await mosquittoPub(b, ['-V', 'mqttv311', '-q', '1', '-t', 'big/v3', '-f', badFile]), 0);
  assert.equal(await mosquittoPub(b, ['-V', 'mqttv311', '-q', '1', '-t', 'big/v3', '-f', goodFile]), 0);
  assert.equal(decoded((await next)[0].packet.payload as Buffer).tag, 'marker');
  // Six large PUBLISHes, each decoded by the pool thread (which counts them itself).
  assert.equal(await waitFor(async () => (await metric(b, 'spindle_schema_check_pooled_total')) === 6 || null), true);
  assert.equal(await metric(b, 'spindle_schema_check_refused_total{protocol="v5"}'), 2);
  assert.equal(await metric(b, 'spindle_schema_check_refused_total{protocol="v3"}'), 1);
  assert.equal(await metric(b, 'spindle_schema_check_offload_overflow_total'), 0);
  assert.equal(await metric(b, 'spindle_schema_check_offload_waiting_messages'), 0);
  assert.equal(await metric(b, 'spindle_schema_check_offload_waiting_bytes'), 0);
  await end(sub, pub);
});

test('PUBACKs and deliveries keep the order of a mix of small inline and large offloaded PUBLISHes', async () => {
  const b = brokers[0];
  const pooledBefore = await metric(b, 'spindle_schema_check_pooled_total');
  const sub = await connect(b.url, { clientId: 'order-sub', protocolVersion: 5 });
  await sub.subscribeAsync('big/order', { qos: 1 });
  const pub = await connect(b.url, { clientId: 'order-pub', protocolVersion: 5 });
  // 40 PUBLISHes sent at once: large good, small good, large bad, small bad, in turn.
  const N = 40;
  const kinds = Array.from({ length: N }, (_, i) => i % 4);
  const goods = kinds.flatMap((k, i) => (k < 2 ? [`m${i}`] : []));
  const delivered = nextMessages(sub, goods.length);
  const acks: { i: number; code: number }[] = [];
  const all = new Promise<void>((resolve) => {
    for (let i = 0; i < N; i++) {
      const k = kinds[i];
      const payload = k === 0 ? samples(`m${i}`, BIG) : k === 1 ? samples(`m${i}`, 3) : k === 2 ? bad(`m${i}`, BIG) : bad(`m${i}`, 3);
      pub.publish('big/order', payload, { qos: 1 }, (err) => {
        acks.push({ i, code: (err as (Error & { code?: number }) | undefined)?.code ?? 0 });
        if (acks.length === N) resolve();
      });
    }
  });
  await all;
  assert.deepEqual(acks.map((a) => a.i), kinds.map((_, i) => i), 'PUBACKs in the order the PUBLISHes were sent');
  assert.deepEqual(acks.map((a) => a.code), kinds.map((k) => (k < 2 ? 0 : 0x99)));
  assert.deepEqual((await delivered).map((m) => decoded(m.packet.payload as Buffer).tag), goods, 'delivered in order, the refused ones left out');
  assert.equal(await metric(b, 'spindle_schema_check_pooled_total') - pooledBefore, N / 2, 'the large ones were decoded by the pool');
  await end(sub, pub);
});

test('past schemaRegistry.maxWaitingBytes a large payload is checked inline, counted, with the same verdicts', async () => {
  const b = await broker({ offloadBytes: 4096, maxWaitingBytes: 0 });
  const sub = await connect(b.url, { clientId: 'bound-sub', protocolVersion: 5 });
  await sub.subscribeAsync('big/#', { qos: 1 });
  const pub = await connect(b.url, { clientId: 'bound-pub', protocolVersion: 5 });
  const got = nextMessages(sub, 1);
  await pub.publishAsync('big/b', samples('over', BIG), { qos: 1 });
  assert.equal(decoded((await got)[0].packet.payload as Buffer).tag, 'over');
  await assert.rejects(pub.publishAsync('big/b', bad('x', BIG), { qos: 1 }), (err: Error & { code?: number }) => err.code === 0x99);
  assert.equal(await metric(b, 'spindle_schema_check_offload_overflow_total'), 2);
  assert.equal(await metric(b, 'spindle_schema_check_pooled_total'), 0);
  assert.equal(await metric(b, 'spindle_schema_check_refused_total{protocol="v5"}'), 1);
  await end(sub, pub);
});

test('past schemaRegistry.maxWaitingMessages a burst is partly checked inline, every message answered in order', async () => {
  const b = await broker({ offloadBytes: 4096, maxWaitingMessages: 1 });
  const pub = await connect(b.url, { clientId: 'burst-pub', protocolVersion: 5 });
  const N = 20;
  const acks: number[] = [];
  await new Promise<void>((resolve) => {
    for (let i = 0; i < N; i++) {
      pub.publish('big/burst', i % 2 === 0 ? samples(`b${i}`, BIG) : bad(`b${i}`, BIG), { qos: 1 }, (err) => {
        acks.push((err as (Error & { code?: number }) | undefined)?.code ?? 0);
        if (acks.length === N) resolve();
      });
    }
  });
  assert.deepEqual(acks, Array.from({ length: N }, (_, i) => (i % 2 === 0 ? RC_NO_SUBSCRIBERS : 0x99)));
  const pooled = await metric(b, 'spindle_schema_check_pooled_total');
  const overflow = await metric(b, 'spindle_schema_check_offload_overflow_total');
  assert.equal(pooled + overflow, N, `each decoded once (pool ${pooled}, inline ${overflow})`);
  assert.ok(overflow > 0 && pooled > 0, `a burst of ${N} with room for one: some inline (${overflow}), some on the pool (${pooled})`);
  await end(pub);
});
/** No subscriber: mqtt.js passes 0x10 No matching subscribers as no error. */
const RC_NO_SUBSCRIBERS = 0;

test('schemaRegistry.offloadBytes 0 keeps every check inline', async () => {
  const b = await broker({ offloadBytes: 0 });
  const pub = await connect(b.url, { clientId: 'inline-pub', protocolVersion: 5 });
  await pub.publishAsync('big/i', samples('inline', BIG), { qos: 1 });
  await assert.rejects(pub.publishAsync('big/i', bad('x', BIG), { qos: 1 }), (err: Error & { code?: number }) => err.code === 0x99);
  assert.equal(await metric(b, 'spindle_schema_check_pooled_total'), 0);
  assert.equal(await metric(b, 'spindle_schema_check_offload_overflow_total'), 0);
  assert.equal(await metric(b, 'spindle_schema_check_refused_total{protocol="v5"}'), 1);
  await end(pub);
});
