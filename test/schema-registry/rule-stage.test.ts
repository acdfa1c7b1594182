// Rules evaluated on the schema pool without a broker: the pool thread's rule task
// (src/features/schema-registry/pool/rule-batch.ts) run in this thread (outputs, WHERE, errors,
// SELECT * fields, the schemas the task carries, counted); then the rule engine
// (src/rules/worker-rules.ts) with a RuleStage on a real SchemaPool: a large payload's output
// comes from a pool thread with the traceparent and republish depth its message had, small
// payloads behind it keep their order, and a batch that fails as a whole fails its evaluations
// with a lastError saying why, counted; a republish loop through the pool stops at the bound;
// past the waiting bound the publishers are paused (once each) and resumed when the backlog is
// below half of it, and past twice the bound a message is evaluated inline.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import protobuf from 'protobufjs';

import { ruleBatch } from '../../src/features/schema-registry/pool/rule-batch.ts';
import type { RuleSchema, RuleTask } from '../../src/features/schema-registry/pool/rule-task.ts';
import { RuleStage, type PublisherReading } from '../../src/features/schema-registry/worker/rule-stage.ts';
import { NO_PUBLISHER } from '../../src/native/index.ts';
import { SchemaPool } from '../../src/features/schema-registry/worker/schema-pool.ts';
import { SchemaRuntime } from '../../src/features/schema-registry/runtime.ts';
import { CHECK_WORDS, newCheckCounters } from '../../src/features/schema-registry/types.ts';
import { RULE_FAILED, RULE_FILTERED, RULE_PASSED, offloadedRule, type PooledOutput } from '../../src/rules/offload.ts';
import { parseRule } from '../../src/rules/sql/index.ts';
import { MAX_REPUBLISH_DEPTH, WorkerRules, type RuleSpec } from '../../src/rules/worker-rules.ts';
import { TRACEPARENT_FIELD } from '../../src/rules/trace-output.ts';
import type { Message } from '../../src/broker/message.ts';
import { createLogger } from '../../src/log/index.ts';
import { waitFor } from '../helpers/wait.ts';

const PROTO = 'syntax = "proto3"; message Samples { repeated uint32 v = 1; string tag = 2; }';
const Samples = protobuf.parse(PROTO).root.lookupType('Samples');
const samples = (tag: string, n: number) => Buffer.from(Samples.encode(Samples.create({ v: Array.from({ length: n }, (_, i) => 200 + i), tag })).finish());
const SCHEMA: RuleSchema = { name: 'samples', key: 'samples\u00001', type: 'protobuf', source: PROTO };
const log = createLogger({ level: 'error' } as never);

function task(rules: RuleTask['rules'], items: { rule: number; topic: string; payload: Buffer }[], counters: SharedArrayBuffer | null): RuleTask {
  const bytes = Buffer.concat(items.map((i) => i.payload));
  const offsets = new Uint32Array(items.length + 1);
  let at = 0;
  items.forEach((it, i) => {
    offsets[i] = at;
    at += it.payload.length;
  });
  offsets[items.length] = at;
  const n = items.length;
  return {
    kind: 'rules', rules, schemas: [SCHEMA], node: 'n1', count: n, rule: Uint16Array.from(items.map((i) => i.rule)), bytes: new Uint8Array(bytes), offsets,
    topics: items.map((i) => i.topic), qos: new Uint8Array(n).fill(1), retain: new Uint8Array(n), timestamps: new Float64Array(n).fill(1234), ids: items.map((_, i) => `id${i}`),
    clientids: items.map(() => 'c1'), usernames: items.map(() => 'u1'), peerhosts: items.map(() => null), counters, beat: new Int32Array(new SharedArrayBuffer(8)), base: Date.now(),
  };
}

test('the pool thread\'s rule task: outputs, WHERE, errors and the PUBLISH\'s fields, counted', () => {
  const counters = newCheckCounters();
  const rule = (id: string, sql: string, republish: Record<string, unknown>[] = [], remote = true) => ({ id, version: sql, sql, republish, remote });
  const rules = [
    rule('r1', `SELECT schema_decode('samples', payload, 'Samples') AS d, clientid, username, node, id FROM "t/#" WHERE d.tag != 'skip'`, [{ topic: 'out/${d.tag}', payload: '${clientid} ${node}' }, { topic: 'all' }]),
    rule('r2', `SELECT * FROM "t/#" WHERE spb_decode(payload) IS NOT NULL`),
    rule('r3', `SELECT schema_decode('other', payload) AS d FROM "t/#"`),
    rule('r4', `SELECT schema_decode('samples', payload, 'Samples') AS d FROM "t/#"`, [{ topic: 'local' }], false),
  ];
  const r = ruleBatch(task(rules, [
    { rule: 0, topic: 't/a', payload: samples('one', 5) },
    { rule: 0, topic: 't/b', payload: samples('skip', 5) },
    { rule: 0, topic: 't/c', payload: Buffer.from([0x08, 0xff]) },
    { rule: 1, topic: 't/d', payload: Buffer.from([0xff]) },
    { rule: 2, topic: 't/e', payload: samples('x', 1) },
    { rule: 3, topic: 't/f', payload: samples('local', 1) },
  ], counters));
  assert.deepEqual([...r.outcomes], [RULE_PASSED, RULE_FILTERED, RULE_FAILED, RULE_FAILED, RULE_FAILED, RULE_PASSED]);
  const passed = r.values[0] as PooledOutput;
  assert.deepEqual(passed.republish.slice(0, 3), ['out/one', 'c1 n1', 'all'], 'the republishes rendered on the pool thread');
  assert.equal(JSON.parse(passed.republish[3]).d.tag, 'one', 'no payload template: the output as JSON');
  const out = passed.out as Record<string, unknown> & { d: { tag: string; v: number[] } };
  assert.equal(out.d.tag, 'one');
  assert.deepEqual(out.d.v, [200, 201, 202, 203, 204]);
  assert.deepEqual([out.clientid, out.username, out.node, out.id], ['c1', 'u1', 'n1', 'id0']);
  assert.equal(r.values[1], null);
  assert.match(String(r.values[2]), /^schema_decode\("samples"\)/);
  assert.match(String(r.values[3]), /^spb_decode\(\)/);
  assert.match(String(r.values[4]), /no schema named other/);
  assert.deepEqual(r.values[5], { republish: ['local', JSON.stringify({ d: { v: [200], tag: 'local' } })], out: null }, 'a rule without remote actions: its output does not cross back');
  assert.equal(Atomics.load(new BigInt64Array(counters), CHECK_WORDS.rulePooled), 6n);
});

test('offloadedRule(): only SQL calling schema_decode or spb_decode, with the schemas it names', () => {
  const of = (sql: string) => offloadedRule({ id: 'r', sql, republish: [], remote: false }, parseRule(sql));
  assert.equal(of(`SELECT payload FROM "t/#"`), null);
  assert.equal(of(`SELECT schema_encode('a', payload) AS b FROM "t/#"`), null);
  assert.deepEqual(of(`SELECT schema_decode('a', payload) AS d FROM "t/#" WHERE schema_encode('b', d) IS NOT NULL`)?.schemas, ['a', 'b']);
  assert.deepEqual(of(`SELECT spb_decode(payload) AS p FROM "t/#"`)?.schemas, []);
  assert.equal(of(`SELECT schema_decode(topic, payload) AS d FROM "t/#"`)?.schemas, null, 'a computed name: every schema is sent');
  assert.deepEqual(of(`SELECT 1 AS x FROM "t/#" WHERE CASE WHEN qos = 1 THEN spb_decode(payload) IS NULL ELSE false END`)?.schemas, []);
});

function message(topic: string, payload: Buffer): Message {
  return { topic, topicBytes: Buffer.from(topic), payload, qos: 1, retain: false, props: null, expiresAt: 0, receivedAt: Date.now(), storeId: undefined, seq: 1 };
}

function engine(bound = { maxWaitingBytes: 1 << 20, maxWaitingMessages: 100 }, publishers?: PublisherReading) {
  const pool = new SchemaPool({ log, threads: 1, timeoutMs: 1000, ...bound });
  const counters = newCheckCounters();
  pool.setCounters(counters);
  const published: Message[] = [];
  const posted: unknown[] = [];
  const rules = new WorkerRules({
    node: 'n1',
    publish: (m) => published.push(m),
    publisherOf: () => ({ clientId: 'pub-1', username: undefined, peerhost: '127.0.0.1' }),
    postOutputs: (items) => posted.push(...items),
  });
  // This thread's codecs (inline evaluations), and the schemas sent to the pool: the runtime's.
  const runtime = new SchemaRuntime(log).install();
  runtime.setSchemas([{ name: 'samples', type: 'protobuf', source: PROTO, description: '', by: 'test', at: '2026-01-01T00:00:00Z' }]);
  rules.offloadTo(new RuleStage(pool, runtime, { log, minBytes: 4096, node: 'n1', publishers }));
  const spec: RuleSpec = { id: 'r1', handle: 7, sql: `SELECT schema_decode('samples', payload, 'Samples') AS d, clientid FROM "t/#"`, republish: [{ topic: 'out/${d.tag}' }], remote: true };
  assert.deepEqual(rules.install([spec]), []);
  return { pool, rules, published, posted, words: new BigInt64Array(counters) };
}

test('the rule engine: a large payload runs on a pool thread, its output applied with its traceparent, small ones behind it in order', async () => {
  const { pool, rules, published, posted, words } = engine();
  try {
    const TP = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    rules.traceparent = TP; // as the OpenTelemetry traces set it around a traced message's rules
    rules.matched(7, message('t/1', samples('big', 4000)), 1);
    rules.traceparent = null;
    rules.matched(7, message('t/2', samples('small', 2)), 1);
    assert.equal(published.length, 0, 'nothing applied before the pool answers');
    assert.equal(rules.counters().r1.matched, 2);
    await waitFor(() => published.length === 2 || null);
    assert.deepEqual(published.map((m) => m.topic), ['out/big', 'out/small']);
    assert.equal(JSON.parse(published[0].payload.toString()).clientid, 'pub-1');
    await waitFor(() => posted.length === 4 || null);
    const [h1, o1, h2, o2] = posted as [number, Record<string, unknown>, number, Record<string, unknown>];
    assert.deepEqual([h1, h2], [7, 7]);
    assert.equal(o1[TRACEPARENT_FIELD], TP, 'the traced message\'s output carries its traceparent');
    assert.equal(o2[TRACEPARENT_FIELD], undefined);
    assert.ok(pool.lastThreadId > 0, 'a pool thread answered');
    assert.equal(Atomics.load(words, CHECK_WORDS.rulePooled), 2n, 'the small one followed the large one to the pool');
    const c = rules.counters().r1;
    assert.deepEqual([c.matched, c.passed, c.failed, c.republished], [2, 2, 0, 2]);
    // Nothing of the rule in the pool now: a small payload runs inline, at once.
    rules.matched(7, message('t/3', samples('inline', 2)), 1);
    await waitFor(() => published.length === 3 || null);
    assert.equal(Atomics.load(words, CHECK_WORDS.rulePooled), 2n);
  } finally {
    await pool.close();
  }
});

test('the rule engine: past the waiting bound inline, counted; a batch that fails as a whole fails its evaluations with a lastError, counted', async () => {
  const over = engine({ maxWaitingBytes: 0, maxWaitingMessages: 100 });
  try {
    over.rules.matched(7, message('t/1', samples('over', 4000)), 1);
    assert.equal(over.rules.counters().r1.passed, 1, 'evaluated inline at once');
    assert.equal(Atomics.load(over.words, CHECK_WORDS.ruleOverflow), 1n);
  } finally {
    await over.pool.close();
  }
  const { pool, rules, words } = engine();
  rules.matched(7, message('t/1', samples('a', 4000)), 1);
  rules.matched(7, message('t/2', samples('b', 2)), 1);
  await pool.close(); // before the batch is sent: its task fails
  const c = await waitFor(() => (rules.counters().r1.failed === 2 ? rules.counters().r1 : null));
  assert.match(String(c.lastError), /evaluated on a schema pool thread, which failed: the schema pool is closed/);
  assert.equal(Atomics.load(words, CHECK_WORDS.ruleFailed), 2n);
  assert.equal(Atomics.load(words, CHECK_WORDS.waitingMessages), 0n);
});

test('the rule engine: past the waiting bound each publisher is paused once and resumed when the backlog drains; past twice the bound inline, counted', async () => {
  const held = new Set<number>();
  const paused: number[] = [];
  const resumed: number[] = [];
  const publishers: PublisherReading<number> = {
    pause: (h) => {
      if (held.has(h)) return null;
      held.add(h);
      paused.push(h);
      return h;
    },
    resume: (h) => {
      held.delete(h);
      resumed.push(h);
    },
  };
  const { pool, rules, published, words } = engine({ maxWaitingBytes: 1 << 20, maxWaitingMessages: 2 }, publishers as PublisherReading);
  try {
    const from = [1, 1, 1, 2, 1, NO_PUBLISHER];
    from.forEach((publisher, i) => rules.matched(7, message(`t/${i}`, samples(`m${i}`, 4000)), publisher));
    // Two under the bound; the third and fourth past it pause their publishers (1 once, then 2);
    // the fifth is at the hard bound (4): inline, as is the sixth (no client to pause anyway).
    assert.deepEqual(paused, [1, 2]);
    assert.equal(Atomics.load(words, CHECK_WORDS.rulePaused), 2n);
    assert.equal(Atomics.load(words, CHECK_WORDS.rulePausedNow), 2n);
    assert.equal(Atomics.load(words, CHECK_WORDS.ruleOverflow), 2n);
    assert.equal(Atomics.load(words, CHECK_WORDS.waitingMessages), 4n);
    assert.deepEqual(resumed, [], 'held while the backlog is past half the bound');
    await waitFor(() => published.length === 6 || null);
    assert.deepEqual(published.map((m) => m.topic), ['out/m4', 'out/m5', 'out/m0', 'out/m1', 'out/m2', 'out/m3'], 'the inline ones first, the pool\'s in order');
    assert.deepEqual(resumed.sort(), [1, 2], 'every publisher paused is resumed once the backlog drained');
    assert.equal(Atomics.load(words, CHECK_WORDS.rulePausedNow), 0n);
    assert.equal(Atomics.load(words, CHECK_WORDS.rulePooled), 4n);
  } finally {
    await pool.close();
  }
});

test('the rule engine: a rule republishing to its own topic through the pool stops at the loop bound, as inline', async () => {
  const pool = new SchemaPool({ log, threads: 1, timeoutMs: 1000, maxWaitingBytes: 1 << 20, maxWaitingMessages: 100 });
  const counters = newCheckCounters();
  pool.setCounters(counters);
  const runtime = new SchemaRuntime(log).install();
  runtime.setSchemas([{ name: 'j', type: 'json', source: '{"type":"object"}', description: '', by: 'test', at: '2026-01-01T00:00:00Z' }]);
  const published: Message[] = [];
  // The host routes a republish as the broker does: its topic matches the rule again.
  const rules: WorkerRules = new WorkerRules({
    node: 'n1',
    publish: (m) => {
      published.push(m);
      rules.matched(9, m, 1);
    },
    publisherOf: () => undefined,
    postOutputs: () => {},
  });
  rules.offloadTo(new RuleStage(pool, runtime, { log, minBytes: 4096, node: 'n1' }));
  // Its output (no payload template: the output as JSON) is larger than its input: every level
  // is large, so every level is evaluated on the pool.
  assert.deepEqual(rules.install([{ id: 'loop', handle: 9, sql: `SELECT schema_decode('j', payload) AS d FROM "loop/#"`, republish: [{ topic: 'loop/again' }], remote: false }]), []);
  try {
    rules.matched(9, message('loop/start', Buffer.from(JSON.stringify({ pad: 'x'.repeat(5000) }))), 1);
    const c = await waitFor(() => (rules.counters().loop.republishFailed === 1 ? rules.counters().loop : null));
    assert.equal(c.republished, MAX_REPUBLISH_DEPTH, 'republished up to the bound');
    assert.match(String(c.lastError), /republish loop: more than 8 republishes deep/);
    assert.equal(published.length, MAX_REPUBLISH_DEPTH);
    assert.equal(c.matched, MAX_REPUBLISH_DEPTH + 1);
    assert.equal(Atomics.load(new BigInt64Array(counters), CHECK_WORDS.rulePooled), BigInt(MAX_REPUBLISH_DEPTH + 1), 'every level on the pool');
  } finally {
    await pool.close();
  }
});
