// Action configs: every spec compiles a good config and names the field of a bad one; the spec
// table lists the seven types with their source types; templates are compiled once and read the
// outputs (redis command, kafka messages by topic, mongodb documents, republish).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { ACTION_SPECS, ActionConfigError, actionSpec, compileRepublish, type CompiledAction, type Output } from '../../../src/rules/actions/index.ts';
import type { AnySource, KafkaSource, MongoSource, RedisSource } from '../../../src/sources/types.ts';

test('the spec table lists the seven action types with their source types and fields', () => {
  assert.deepEqual(ACTION_SPECS.map((s) => [s.type, s.sourceType]), [
    ['republish', null], ['save_mysql', 'mysql'], ['save_postgresql', 'postgresql'], ['save_redis', 'redis'],
    ['save_kafka', 'kafka'], ['save_mongodb', 'mongodb'], ['webhook', 'http'],
  ]);
  for (const spec of ACTION_SPECS) {
    assert.ok(spec.description.length > 0);
    assert.ok(spec.fields.some((f) => f.required), spec.type);
  }
  assert.equal(actionSpec('save_mysql')?.sourceType, 'mysql');
  assert.equal(actionSpec('nope'), undefined);
});

test('bad configs name their field, relative to the config', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['save_postgresql', { table: 't' }, 'source'],
    ['save_postgresql', { source: 's' }, 'table'],
    ['save_postgresql', { source: 's', table: 't; drop' }, 'table'],
    ['save_postgresql', { source: 's', table: 't', columns: { 'bad col': '${a}' } }, 'columns.bad col'],
    ['save_postgresql', { source: 's', table: 't', columns: { c: '${a' } }, 'columns.c'],
    ['save_postgresql', { source: 's', table: 't', columns: { c: 5 } }, 'columns.c'],
    ['save_mysql', { source: 's', table: 't', batchSize: 0 }, 'batchSize'],
    ['save_redis', { source: 's' }, 'command'],
    ['save_redis', { source: 's', command: 'FLUSHALL' }, 'command[0]'],
    ['save_redis', { source: 's', command: ['${cmd}', 'k'] }, 'command[0]'],
    ['save_redis', { source: 's', command: ['SET', 'k', 3] }, 'command[2]'],
    ['save_redis', { source: 's', command: 'SET k ${payload.}' }, 'command[2]'],
    ['save_kafka', { source: 's' }, 'topic'],
    ['save_kafka', { source: 's', topic: 't', headers: { h: 1 } }, 'headers.h'],
    ['save_kafka', { source: 's', topic: 't', key: '${' }, 'key'],
    ['save_mongodb', { source: 's', collection: '${topic}' }, 'collection'],
    ['save_mongodb', { source: 's', collection: 'c', document: { $where: '1' } }, 'document.$where'],
    ['webhook', { source: 's', method: 'TRACE' }, 'method'],
    ['webhook', { source: 's', headers: { 'a b': 'x' } }, 'headers.a b'],
    ['webhook', { source: 's', body: '${x.}' }, 'body'],
    ['republish', {}, 'topic'],
    ['republish', { topic: 'a/+/b' }, 'topic'],
    ['republish', { topic: '$SYS/x' }, 'topic'],
    ['republish', { topic: 'a', qos: 3 }, 'qos'],
    ['republish', { topic: 'a', retain: 'yes' }, 'retain'],
  ];
  for (const [type, config, field] of cases) {
    assert.throws(() => actionSpec(type)!.compile(config), (err: unknown) => err instanceof ActionConfigError && err.field === field, `${type} ${JSON.stringify(config)} -> ${field}`);
  }
});

function capture<T extends AnySource>(type: T['type'], method: string): { source: T; calls: unknown[] } {
  const calls: unknown[] = [];
  const source = { id: 'src', type, [method]: async (...args: unknown[]) => void calls.push(args) } as unknown as T;
  return { source, calls };
}

const outputs: Output[] = [
  { topic: 'a/1', clientid: 'c1', payload: '{"temp":21.5}', qos: 1 },
  { topic: 'b/2', clientid: 'c2', payload: '{"temp":22}', qos: 0 },
];

test('save_redis: a command string split on spaces, one command per output in one pipeline', async () => {
  const action = actionSpec('save_redis')!.compile({ source: 'r', command: 'HSET dev:${clientid} temp ${payload.temp}' }) as CompiledAction;
  assert.equal(action.sourceId, 'r');
  assert.equal(action.maxBatch, 500);
  const { source, calls } = capture<RedisSource>('redis', 'pipeline');
  await action.write(source, outputs);
  assert.deepEqual(calls, [[[['HSET', 'dev:c1', 'temp', '21.5'], ['HSET', 'dev:c2', 'temp', '22']]]]);
});

test('save_kafka: messages grouped by topic, value the output as JSON by default, headers from templates', async () => {
  const action = actionSpec('save_kafka')!.compile({ source: 'k', topic: 'mqtt.${qos}', key: '${clientid}', headers: { from: '${topic}' }, batchSize: 50 }) as CompiledAction;
  assert.equal(action.maxBatch, 50);
  const { source, calls } = capture<KafkaSource>('kafka', 'send');
  await action.write(source, [...outputs, { ...outputs[0], clientid: 'c3' }]);
  assert.deepEqual(calls, [[[
    { topic: 'mqtt.1', messages: [
      { key: 'c1', value: JSON.stringify(outputs[0]), headers: { from: 'a/1' } },
      { key: 'c3', value: JSON.stringify({ ...outputs[0], clientid: 'c3' }), headers: { from: 'a/1' } },
    ] },
    { topic: 'mqtt.0', messages: [{ key: 'c2', value: JSON.stringify(outputs[1]), headers: { from: 'b/2' } }] },
  ]]]);
});

test('save_mongodb: documents from value templates (numbers stay numbers), or copies of the outputs', async () => {
  const shaped = actionSpec('save_mongodb')!.compile({ source: 'm', collection: 'readings', document: { device: '${clientid}', temp: '${payload.temp}', unit: 'C', v: 2 } }) as CompiledAction;
  const { source, calls } = capture<MongoSource>('mongodb', 'insertMany');
  await shaped.write(source, outputs);
  assert.deepEqual(calls[0], ['readings', [{ device: 'c1', temp: 21.5, unit: 'C', v: 2 }, { device: 'c2', temp: 22, unit: 'C', v: 2 }]]);
  const plain = actionSpec('save_mongodb')!.compile({ source: 'm', collection: 'raw' }) as CompiledAction;
  await plain.write(source, outputs);
  const docs = (calls[1] as [string, Output[]])[1];
  assert.deepEqual(docs, outputs);
  assert.notEqual(docs[0], outputs[0], 'the driver gets copies (it adds _id)');
});

test('an action given a source of another type refuses the batch (not transient)', async () => {
  const action = actionSpec('save_redis')!.compile({ source: 'r', command: ['SET', 'k', 'v'] }) as CompiledAction;
  const { source } = capture<KafkaSource>('kafka', 'send');
  await assert.rejects(action.write(source, outputs), (err: Error & { transient?: boolean }) => err.transient === false);
});

test('republish compiles its templates for the worker threads', () => {
  const r = compileRepublish({ topic: 'out/${clientid}', payload: '${payload.temp}', qos: 1, retain: true });
  assert.equal(r.kind, 'republish');
  assert.equal(r.topic(outputs[0]), 'out/c1');
  assert.equal(r.payload?.(outputs[0]), '21.5');
  assert.deepEqual([r.qos, r.retain], [1, true]);
  const d = compileRepublish({ topic: 'out' });
  assert.deepEqual([d.payload, d.qos, d.retain], [null, 0, false]);
});
