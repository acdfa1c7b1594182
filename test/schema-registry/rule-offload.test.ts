// needs: broker
// Rules that call schema_decode or spb_decode, evaluated off the listener thread for payloads of
// at least schemaRegistry.offloadBytes, end to end with mqtt.js on one-worker brokers: an 8 KiB
// Protobuf payload made by protobufjs from a .proto this test writes is decoded by a rule whose
// republished output carries the decoded fields and the PUBLISH's own (topic, clientid, qos), the
// evaluation counted by the pool thread itself (spindle_schema_rule_pooled_total, which only
// pool/rule-batch.ts, run by piscina, adds to); small payloads stay inline; a mix of large and
// small messages keeps its order through the rule; a payload that does not decode fails the rule
// with its lastError; spb_decode on a large Sparkplug B payload likewise; past the (hard) waiting
// bound and with offloadBytes 0 the rule runs inline, counted; a fast publisher past the bound is
// paused instead (counted), nothing runs inline, every output arrives in order, and it resumes;
// a WebSocket publisher is not paused (past the hard bound inline), nothing lost.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

import protobuf from 'protobufjs';

import { BIG, PROTO, Samples, bad, dir, samples } from './samples.ts';
import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end, nextMessages } from '../helpers/broker.ts';
import { waitFor } from '../helpers/wait.ts';


// Sparkplug B's Payload (Eclipse Tahu's sparkplug_b.proto, its field numbers), the part used here.
const SPB_PROTO = `syntax = "proto2";
package org.eclipse.tahu.protobuf;
message Payload {
  message Metric {
    optional string name = 1;
    optional uint32 datatype = 4;
    oneof value { double double_value = 13; string string_value = 15; }
  }
  optional uint64 timestamp = 1;
  repeated Metric metrics = 2;
  optional uint64 seq = 3;
}
`;
const spbFile = path.join(dir, 'sparkplug_b.proto');
writeFileSync(spbFile, SPB_PROTO);
const Payload = (await new protobuf.Root().load(spbFile, { keepCase: true })).lookupType('org.eclipse.tahu.protobuf.Payload');
const DOUBLE = 10;
const STRING = 12;

const brokers: AdminBroker[] = [];
after(() => Promise.all(brokers.map((b) => b.stop())));

async function broker(schemaRegistry: Record<string, unknown>): Promise<AdminBroker> {
  const b = await startAdminBroker({ workers: 1, schemaRegistry });
  brokers.push(b);
  const r = await b.api('POST', '/api/schemas', { body: { name: 'samples', type: 'protobuf', source: PROTO } });
  assert.equal(r.status, 200, r.text);
  return b;
}

async function addRule(b: AdminBroker, name: string, sql: string, topic: string, payload?: string): Promise<string> {
  const config: Record<string, unknown> = { topic };
  if (payload !== undefined) config.payload = payload;
  const r = await b.api('POST', '/rule/add', { body: { name, sql, actions: [{ type: 'republish', config }] } });
  assert.equal(r.status, 200, r.text);
  const q = await b.api('POST', '/rule/query', { body: { name } });
  return q.json.data.find((x: { name: string }) => x.name === name).id as string;
}

async function runtime(b: AdminBroker, id: string): Promise<{ matched: number; passed: number; filtered: number; failed: number; lastError: string | null }> {
  const r = await b.api('POST', '/rule/runtime', { body: { id } });
  assert.equal(r.status, 200, r.text);
  return r.json.data;
}

async function metric(b: AdminBroker, name: string): Promise<number> {
  const text = (await b.api('GET', '/prometheus')).text;
  const m = new RegExp(`^${name} (\\d+)$`, 'm').exec(text);
  assert.ok(m, `${name} in /prometheus`);
  return Number(m[1]);
}

const SQL = `SELECT schema_decode('samples', payload, 'big.Samples') AS d, topic, clientid, qos FROM "big/#"`;

test('a rule decodes an 8 KiB Protobuf payload on the pool thread: its republished output has the decoded fields and the PUBLISH\'s, counted', async () => {
  const b = await broker({ offloadBytes: 4096 });
  const id = await addRule(b, 'big', SQL, 'out/big');
  const sub = await connect(b.url, { clientId: 'ro-sub' });
  await sub.subscribeAsync('out/#', { qos: 1 });
  const pub = await connect(b.url, { clientId: 'ro-pub', protocolVersion: 5 });
  const payload = samples('large', BIG);
  assert.ok(payload.length > 8000, `an 8 KiB payload (${payload.length} B)`);
  const got = nextMessages(sub, 1);
  await pub.publishAsync('big/a', payload, { qos: 1 });
  const out = JSON.parse((await got)[0].payload);
  assert.equal(out.d.tag, 'large');
  assert.equal(out.d.v.length, BIG);
  assert.equal(out.d.v[1], 201);
  assert.equal(out.topic, 'big/a');
  assert.equal(out.clientid, 'ro-pub');
  assert.equal(out.qos, 1);
  assert.equal(await waitFor(async () => (await metric(b, 'spindle_schema_rule_pooled_total')) === 1 || null), true, 'evaluated by the pool thread');
  assert.equal(await metric(b, 'spindle_schema_rule_offload_overflow_total'), 0);
  assert.equal(await metric(b, 'spindle_schema_check_offload_waiting_messages'), 0);
  assert.deepEqual(await runtime(b, id).then((r) => [r.matched, r.passed, r.failed]), [1, 1, 0]);

  // A small payload, with nothing of the rule in the pool: inline (the pool's count stays).
  const small = nextMessages(sub, 1);
  await pub.publishAsync('big/s', samples('small', 3), { qos: 1 });
  assert.equal(JSON.parse((await small)[0].payload).d.tag, 'small');
  assert.equal(await metric(b, 'spindle_schema_rule_pooled_total'), 1, 'the small one ran inline');
  await end(sub, pub);
});

test('the rule\'s outputs keep the order of a mix of large (pool) and small messages', async () => {
  const b = brokers[0];
  const before = await metric(b, 'spindle_schema_rule_pooled_total');
  const sub = await connect(b.url, { clientId: 'ro-order-sub' });
  await sub.subscribeAsync('out/#', { qos: 1 });
  const pub = await connect(b.url, { clientId: 'ro-order-pub' });
  const N = 40;
  const tags = Array.from({ length: N }, (_, i) => `m${i}`);
  const got = nextMessages(sub, N);
  // Sent at once: large, small, small, large, ... so small ones arrive while large ones are in the pool.
  await Promise.all(tags.map((tag, i) => pub.publishAsync('big/order', samples(tag, i % 3 === 0 ? BIG : 3), { qos: 1 })));
  assert.deepEqual((await got).map((m) => JSON.parse(m.payload).d.tag), tags, 'republished in the order published');
  const pooled = (await metric(b, 'spindle_schema_rule_pooled_total')) - before;
  const large = tags.filter((_, i) => i % 3 === 0).length;
  assert.ok(pooled >= large && pooled <= N, `the ${large} large ones (and small ones behind them) ran on the pool: ${pooled}`);
  await end(sub, pub);
});

test('a large payload that does not decode fails the rule with its lastError, on the pool thread', async () => {
  const b = brokers[0];
  const id = await addRule(b, 'big-bad', SQL.replace('"big/#"', '"bad/#"'), 'out/bad');
  const before = await metric(b, 'spindle_schema_rule_pooled_total');
  const pub = await connect(b.url, { clientId: 'ro-bad-pub' });
  await pub.publishAsync('bad/x', bad('bad', BIG), { qos: 1 });
  const rt = await waitFor(async () => {
    const r = await runtime(b, id);
    return r.failed === 1 ? r : null;
  });
  assert.equal(rt.passed, 0);
  assert.match(String(rt.lastError), /schema_decode\("samples"\)/);
  assert.equal(await metric(b, 'spindle_schema_rule_pooled_total'), before + 1);
  // A rule naming a schema that is not held fails as inline: "no schema named".
  const gone = await addRule(b, 'big-gone', `SELECT schema_decode('nope', payload) AS d FROM "gone/#"`, 'out/gone');
  await pub.publishAsync('gone/x', samples('x', BIG), { qos: 1 });
  const g = await waitFor(async () => {
    const r = await runtime(b, gone);
    return r.failed === 1 ? r : null;
  });
  assert.match(String(g.lastError), /no schema named nope/);
  await end(pub);
});

test('spb_decode on a large Sparkplug B payload runs on the pool thread', async () => {
  const b = brokers[0];
  await addRule(b, 'spb', 'SELECT spb_decode(payload) AS p, p.metrics[0].value AS v, topic(4) AS node FROM "spBv1.0/+/NDATA/+" WHERE p.seq > 0', 'temps/${node}', '${v} ${p.metrics[1].value}');
  const before = await metric(b, 'spindle_schema_rule_pooled_total');
  const sub = await connect(b.url, { clientId: 'spb-sub' });
  await sub.subscribeAsync('temps/#', { qos: 1 });
  const pub = await connect(b.url, { clientId: 'spb-pub' });
  const metrics = [{ name: 'temperature', datatype: DOUBLE, double_value: 71.5 }, ...Array.from({ length: 400 }, (_, i) => ({ name: `label/${i}`, datatype: STRING, string_value: `value number ${i} of a large birth` }))];
  const payload = Buffer.from(Payload.encode(Payload.fromObject({ timestamp: Date.now(), seq: 3, metrics })).finish());
  assert.ok(payload.length >= 4096, `a large Sparkplug payload (${payload.length} B)`);
  const got = nextMessages(sub, 1);
  await pub.publishAsync('spBv1.0/g/NDATA/n1', payload, { qos: 1 });
  const [m] = await got;
  assert.equal(m.topic, 'temps/n1');
  assert.equal(m.payload, '71.5 value number 0 of a large birth');
  assert.equal(await metric(b, 'spindle_schema_rule_pooled_total'), before + 1);
  await end(sub, pub);
});

test('past schemaRegistry.maxWaitingBytes the rule runs inline, counted; with offloadBytes 0 it always does', async () => {
  for (const [cfg, overflow] of [[{ offloadBytes: 4096, maxWaitingBytes: 0 }, 1], [{ offloadBytes: 0 }, 0]] as const) {
    const b = await broker(cfg);
    await addRule(b, 'big', SQL, 'out/big');
    const sub = await connect(b.url, { clientId: 'ro-in-sub' });
    await sub.subscribeAsync('out/#', { qos: 1 });
    const pub = await connect(b.url, { clientId: 'ro-in-pub' });
    const got = nextMessages(sub, 1);
    await pub.publishAsync('big/a', samples('inline', BIG), { qos: 1 });
    assert.equal(JSON.parse((await got)[0].payload).d.tag, 'inline');
    assert.equal(await metric(b, 'spindle_schema_rule_offload_overflow_total'), overflow, JSON.stringify(cfg));
    assert.equal(await metric(b, 'spindle_schema_rule_pooled_total'), 0, JSON.stringify(cfg));
    await end(sub, pub);
  }
});

test('past the waiting bound the publisher is paused, not evaluated inline: every output arrives in order, then it resumes and keeps publishing', async () => {
  // A bound of 8 evaluations (hard bound 16): a fast publisher of 32 KiB payloads fills it within
  // a few reads (a read holds at most two of them), so the pool falls behind.
  const b = await broker({ offloadBytes: 4096, maxWaitingMessages: 8 });
  await addRule(b, 'bp', SQL.replace('"big/#"', '"bp/#"'), 'out/bp', '${d.tag}');
  const sub = await connect(b.url, { clientId: 'bp-sub' });
  await sub.subscribeAsync('out/#', { qos: 1 });
  const pub = await connect(b.url, { clientId: 'bp-pub' });
  const N = 200;
  const tags = Array.from({ length: N }, (_, i) => `m${i}`);
  const payloads = tags.map((tag) => samples(tag, 4 * BIG));
  assert.ok(payloads[0].length > 30_000, `32 KiB payloads (${payloads[0].length} B)`);
  const got = nextMessages(sub, N, 60_000);
  for (const p of payloads) pub.publish('bp/x', p, { qos: 0 });
  assert.deepEqual((await got).map((m) => m.payload), tags, 'every output, in the order published');
  assert.ok((await metric(b, 'spindle_schema_rule_publishers_paused_total')) > 0, 'the publisher was paused');
  assert.equal(await metric(b, 'spindle_schema_rule_offload_overflow_total'), 0, 'nothing evaluated inline');
  assert.equal(await metric(b, 'spindle_schema_rule_pooled_total'), N, 'every evaluation on the pool thread');
  // Drained: no client paused any more, and the publisher's next message goes through.
  assert.equal(await waitFor(async () => (await metric(b, 'spindle_schema_rule_publishers_paused')) === 0 || null), true);
  assert.equal(await metric(b, 'spindle_schema_check_offload_waiting_messages'), 0);
  const last = nextMessages(sub, 1);
  await pub.publishAsync('bp/x', samples('after', BIG), { qos: 1 });
  assert.equal((await last)[0].payload, 'after');
  assert.equal(await metric(b, 'spindle_schema_rule_pooled_total'), N + 1);
  await end(sub, pub);
});

test('a WebSocket publisher is not paused (it could not stop sending): past the hard bound its evaluations run inline, none lost', async () => {
  const b = brokers.at(-1)!; // the previous test's: bound of 8, its rule on bp/#
  const pausedBefore = await metric(b, 'spindle_schema_rule_publishers_paused_total');
  const pooledBefore = await metric(b, 'spindle_schema_rule_pooled_total');
  const overflowBefore = await metric(b, 'spindle_schema_rule_offload_overflow_total');
  const sub = await connect(b.url, { clientId: 'bp-ws-sub' });
  await sub.subscribeAsync('out/#', { qos: 1 });
  const pub = await connect(b.wsUrl, { clientId: 'bp-ws-pub' });
  const N = 100;
  const tags = Array.from({ length: N }, (_, i) => `w${i}`);
  const got = nextMessages(sub, N, 60_000);
  for (const tag of tags) pub.publish('bp/ws', samples(tag, 4 * BIG), { qos: 0 });
  assert.deepEqual((await got).map((m) => m.payload).sort(), [...tags].sort(), 'every output');
  assert.equal(await metric(b, 'spindle_schema_rule_publishers_paused_total'), pausedBefore, 'not paused');
  const pooled = (await metric(b, 'spindle_schema_rule_pooled_total')) - pooledBefore;
  const inline = (await metric(b, 'spindle_schema_rule_offload_overflow_total')) - overflowBefore;
  assert.equal(pooled + inline, N, `each evaluated once: ${pooled} on the pool, ${inline} inline`);
  assert.ok(pub.connected, 'still connected');
  await end(sub, pub);
});
