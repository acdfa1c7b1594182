// The schema check stage without a broker (src/features/schema-registry/worker/check-stage.ts, on
// its schema pool, schema-pool.ts):
// verdicts come from a piscina thread (not this one), in the order asked, counted by the pool
// thread; a batch that fails as a whole is refused or passes per onFailure, counted; the waiting
// bound in bytes and messages.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { threadId } from 'node:worker_threads';

import protobuf from 'protobufjs';

import { CheckStage, type OffloadedCheck } from '../../src/features/schema-registry/worker/check-stage.ts';
import { SchemaPool } from '../../src/features/schema-registry/worker/schema-pool.ts';
import { CHECK_WORDS, newCheckCounters } from '../../src/features/schema-registry/types.ts';
import { createLogger } from '../../src/log/index.ts';

const PROTO = 'syntax = "proto3"; message Samples { repeated uint32 v = 1; }';
const Samples = protobuf.parse(PROTO).root.lookupType('Samples');
const good = Buffer.from(Samples.encode(Samples.create({ v: Array.from({ length: 4000 }, (_, i) => 200 + i) })).finish());
const bad = Buffer.concat([good, Buffer.from([0x08, 0xff])]);
const CHECK: OffloadedCheck = { schema: { key: 'samples\u00001', type: 'protobuf', source: PROTO }, messageType: 'Samples' };
const GONE: OffloadedCheck = { schema: null, messageType: undefined };
const log = createLogger({ level: 'error' } as never);

function stage(onFailure: 'refuse' | 'pass', bound = { maxWaitingBytes: 1 << 20, maxWaitingMessages: 100 }) {
  const pool = new SchemaPool({ log, threads: 1, timeoutMs: 1000, ...bound });
  const s = new CheckStage(pool, { log, onFailure });
  const counters = newCheckCounters();
  s.setCounters(counters);
  return { s, pool, words: new BigInt64Array(counters) };
}

function verdicts(s: CheckStage, asks: [Buffer, OffloadedCheck[]][]): Promise<{ i: number; refused: boolean }[]> {
  return new Promise((resolve) => {
    const got: { i: number; refused: boolean }[] = [];
    asks.forEach(([payload, checks], i) => s.check(payload, checks, (n: number, refused) => {
      got.push({ i: n, refused });
      if (got.length === asks.length) resolve(got);
    }, i));
  });
}

test('verdicts come from a pool thread, in the order asked, and the pool thread counts them', async () => {
  const { s, pool, words } = stage('refuse');
  try {
    const got = await verdicts(s, [[good, [CHECK]], [bad, [CHECK]], [good, [CHECK, GONE]], [good, []]]);
    assert.deepEqual(got, [{ i: 0, refused: false }, { i: 1, refused: true }, { i: 2, refused: true }, { i: 3, refused: false }]);
    assert.ok(pool.lastThreadId > 0 && pool.lastThreadId !== threadId, `decoded on thread ${pool.lastThreadId}, not this one (${threadId})`);
    assert.equal(Atomics.load(words, CHECK_WORDS.pooled), 4n);
    assert.equal(Atomics.load(words, CHECK_WORDS.waitingBytes), 0n);
    assert.equal(Atomics.load(words, CHECK_WORDS.waitingMessages), 0n);
  } finally {
    await pool.close();
  }
});

for (const onFailure of ['refuse', 'pass'] as const) {
  test(`a batch that fails as a whole is ${onFailure === 'refuse' ? 'refused' : 'passed'} (onFailure ${onFailure}), counted`, async () => {
    const { s, pool, words } = stage(onFailure);
    const got = verdicts(s, [[good, [CHECK]], [bad, [CHECK]]]);
    await pool.close(); // before the batch is sent: its task fails
    assert.deepEqual((await got).map((v) => v.refused), onFailure === 'refuse' ? [true, true] : [false, false]);
    assert.equal(Atomics.load(words, onFailure === 'refuse' ? CHECK_WORDS.failedRefused : CHECK_WORDS.failedPassed), 2n);
    assert.equal(Atomics.load(words, CHECK_WORDS.pooled), 0n);
    assert.equal(Atomics.load(words, CHECK_WORDS.waitingMessages), 0n);
  });
}

test('admits() holds the waiting bound in bytes and in messages', async () => {
  const { s, pool } = stage('refuse', { maxWaitingBytes: good.length * 2, maxWaitingMessages: 3 });
  try {
    assert.equal(s.admits(good.length * 2), true);
    assert.equal(s.admits(good.length * 2 + 1), false);
    const got = verdicts(s, [[good, [CHECK]], [good, [CHECK]]]);
    assert.equal(s.admits(1), false, 'the bytes are taken');
    await got;
    assert.equal(s.admits(good.length), true, 'and given back with the verdicts');
    const small = Buffer.from(Samples.encode(Samples.create({ v: [1] })).finish());
    const three = verdicts(s, [[small, [CHECK]], [small, [CHECK]], [small, [CHECK]]]);
    assert.equal(s.admits(1), false, 'three messages wait');
    await three;
    assert.equal(s.admits(1), true);
  } finally {
    await pool.close();
  }
});
