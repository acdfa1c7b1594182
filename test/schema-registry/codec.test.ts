// The schema codecs and the rule SQL's schema functions without a broker: protobuf (payloads made
// by protobufjs from a .proto this test writes), avro (avsc) and JSON Schema decode, check and
// encode; bad schemas throw the parser's message; the bare `payload` reaches schema_decode as
// bytes; a payload that does not decode fails the row (SqlRuntimeError); the topic checks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import protobuf from 'protobufjs';
import avro from 'avsc';

import { compileSchema } from '../../src/features/schema-registry/codec.ts';
import { SchemaRuntime } from '../../src/features/schema-registry/runtime.ts';
import { newCheckCounters } from '../../src/features/schema-registry/types.ts';
import { PAYLOAD_PASS, PAYLOAD_REFUSED } from '../../src/engine/handlers/client.ts';
import { compileRule, makeContext, parseRule, SqlRuntimeError } from '../../src/rules/sql/index.ts';
import { createLogger } from '../../src/log/index.ts';

const PROTO = `syntax = "proto3";
package demo;
enum Kind { A = 0; B = 1; }
message Reading { string sensor = 1; double temp = 2; int64 ts = 3; Kind kind = 4; bytes raw = 5; }
message Other { bool on = 1; }
`;
const dir = mkdtempSync(path.join(tmpdir(), 'spindle-codec-'));
writeFileSync(path.join(dir, 'r.proto'), PROTO);
const Reading = protobuf.loadSync(path.join(dir, 'r.proto')).lookupType('demo.Reading');
const AVRO = { type: 'record', name: 'R', fields: [{ name: 'sensor', type: 'string' }, { name: 'temp', type: 'double' }] };
const avroType = avro.Type.forSchema(AVRO as avro.Schema);
const now = () => new Date().toISOString();

test('protobuf: decode with every field, enums by name, 64-bit as numbers; check; encode; message types', () => {
  const c = compileSchema('protobuf', PROTO);
  const bytes = Buffer.from(Reading.encode(Reading.fromObject({ sensor: 's', temp: 1.5, ts: 1_700_000_000_000, kind: 'B', raw: Buffer.from([1, 2]) })).finish());
  const m = c.decode(bytes, 'demo.Reading');
  assert.equal(m.sensor, 's');
  assert.equal(m.temp, 1.5);
  assert.equal(m.ts, 1_700_000_000_000);
  assert.equal(m.kind, 'B');
  assert.deepEqual([...(m.raw as Uint8Array)], [1, 2]);
  assert.deepEqual(c.decode(Buffer.alloc(0), 'demo.Reading'), { sensor: '', temp: 0, ts: 0, kind: 'A', raw: Buffer.alloc(0) });
  assert.equal(c.valid(bytes, 'demo.Reading'), true);
  assert.equal(c.valid(Buffer.from([0x08, 0xff]), 'demo.Reading'), false);
  // A string whose length runs past the end (protobufjs's Buffer reader would take it).
  assert.equal(c.valid(Buffer.from([0x0a, 0x7f, 0x41]), 'demo.Reading'), false);
  assert.throws(() => c.decode(Buffer.from([0x0a, 0x7f, 0x41]), 'demo.Reading'), /not a Reading: index out of range/);
  assert.throws(() => c.decode(bytes), /a message type is needed: one of demo.Reading, demo.Other/);
  assert.throws(() => c.decode(bytes, 'demo.Nope'), /no message type demo.Nope/);
  assert.deepEqual(Reading.toObject(Reading.decode(c.encode({ sensor: 'x', temp: 2 }, 'demo.Reading'))), { sensor: 'x', temp: 2 });
  assert.throws(() => c.encode('hot', 'demo.Reading'), /a Reading is encoded from a map/);
  assert.throws(() => compileSchema('protobuf', 'message X { strin a = 1; }'), /strin/);
  assert.throws(() => compileSchema('protobuf', 'syntax = "proto3";'), /defines no message type/);
  // One message type: it need not be named.
  assert.deepEqual(compileSchema('protobuf', 'message O { optional int32 n = 1; }').decode(Buffer.from([0x08, 0x05])), { n: 5 });
});

test('avro and JSON Schema: decode, check, encode, refusals', () => {
  const a = compileSchema('avro', JSON.stringify(AVRO));
  const bytes = avroType.toBuffer({ sensor: 's', temp: 3 });
  assert.deepEqual({ ...a.decode(bytes) }, { sensor: 's', temp: 3 });
  assert.equal(a.valid(bytes), true);
  assert.equal(a.valid(bytes.subarray(0, 3)), false);
  assert.throws(() => a.decode(Buffer.concat([bytes, Buffer.from([1])])), /trailing/);
  assert.deepEqual({ ...avroType.fromBuffer(a.encode({ sensor: 'e', temp: 1 })) }, { sensor: 'e', temp: 1 });
  assert.throws(() => a.encode({ sensor: 1, temp: 1 }), /invalid at sensor/);
  assert.equal(a.messageTypeProblem('X'), 'avro schemas take no message type');
  assert.throws(() => compileSchema('avro', '{"type":"record","name":"R","fields":[{"name":"a","type":"strnig"}]}'), /strnig/);
  assert.throws(() => compileSchema('avro', 'not json'), /JSON/);

  const j = compileSchema('json', JSON.stringify({ type: 'object', properties: { t: { type: 'number' } }, required: ['t'] }));
  assert.deepEqual(j.decode(Buffer.from('{"t":1}')), { t: 1 });
  assert.throws(() => j.decode(Buffer.from('{"t":"x"}')), /does not match the schema: data\/t must be number/);
  assert.throws(() => j.decode(Buffer.from('nope')), /not JSON/);
  assert.equal(j.valid(Buffer.from('{}')), false);
  assert.equal(j.encode({ t: 2 }).toString(), '{"t":2}');
  assert.deepEqual(compileSchema('json', '{"type":"array"}').decode(Buffer.from('[1]')), { value: [1] });
  assert.throws(() => compileSchema('json', '{"type":12}'), /schema is invalid/);
});

test('schema_decode and schema_encode in the rule SQL: payload as bytes, failures fail the row', () => {
  const rt = new SchemaRuntime(createLogger({ level: 'error' } as never)).install();
  rt.setState({ schemas: [{ name: 'r', type: 'protobuf', source: PROTO, description: '', by: 'x', at: now() }, { name: 'a', type: 'avro', source: JSON.stringify(AVRO), description: '', by: 'x', at: now() }], checks: [], counters: new SharedArrayBuffer(8) });
  const bytes = Buffer.from(Reading.encode(Reading.fromObject({ sensor: 'bin\u00ff', temp: 40 })).finish());
  const ctx = (payload: Buffer) => makeContext('PUBLISH', { topic: 't', payload, qos: 0 });
  const rule = compileRule(parseRule(`SELECT schema_decode('r', payload, 'demo.Reading') AS m, m.sensor AS s FROM "#" WHERE m.temp > 30`));
  assert.deepEqual(rule(ctx(bytes))?.s, 'bin\u00ff');
  assert.equal(rule(ctx(Buffer.from(Reading.encode({ temp: 1 }).finish()))), null);
  assert.throws(() => rule(ctx(Buffer.from([0x08, 0xff]))), (err: Error) => err instanceof SqlRuntimeError && /^schema_decode\(.r.\): not a Reading/.test(err.message));
  assert.throws(() => compileRule(parseRule(`SELECT schema_decode('missing', payload) AS m FROM "#"`))(ctx(bytes)), /no schema named missing/);
  const avroRule = compileRule(parseRule(`SELECT schema_decode('a', payload) AS m FROM "#"`));
  assert.equal((avroRule(ctx(avroType.toBuffer({ sensor: 'q', temp: 7 })))!.m as { temp: number }).temp, 7);
  const enc = compileRule(parseRule(`SELECT schema_encode('a', json_decode('{"sensor":"z","temp":2}')) AS b FROM "#"`))(ctx(bytes));
  assert.deepEqual({ ...avroType.fromBuffer(enc!.b as Buffer) }, { sensor: 'z', temp: 2 });
});

test('topic checks: only matching topics are decoded; a bad payload is refused and counted', () => {
  const rt = new SchemaRuntime(createLogger({ level: 'error' } as never));
  const counters = newCheckCounters();
  rt.setState({ schemas: [{ name: 'a', type: 'avro', source: JSON.stringify(AVRO), description: '', by: 'x', at: now() }], checks: [], counters });
  assert.equal(rt.active, false);
  rt.setChecks([{ filter: 'plant/+/r', schema: 'a', messageType: null, by: 'x', at: now() }]);
  assert.equal(rt.active, true);
  assert.equal(rt.verdict('plant/1/r', avroType.toBuffer({ sensor: 's', temp: 1 }), 5), PAYLOAD_PASS);
  assert.equal(rt.verdict('plant/1/r', Buffer.from('junk'), 5), PAYLOAD_REFUSED);
  assert.equal(rt.verdict('plant/1/r', Buffer.from('junk'), 4), PAYLOAD_REFUSED);
  assert.equal(rt.verdict('other/1/r', Buffer.from('junk'), 5), PAYLOAD_PASS);
  assert.deepEqual([...new BigInt64Array(counters)].slice(0, 2), [1n, 1n]);
});
