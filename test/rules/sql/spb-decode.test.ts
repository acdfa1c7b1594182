// spb_decode(payload) and the Sparkplug B decoder: payloads encoded by protobufjs from a .proto
// the test writes (the Payload message of Eclipse Tahu's sparkplug_b.proto, its field numbers),
// every datatype family read as its datatype says, in SELECT and WHERE, the raw payload passed
// as bytes (a payload that is not UTF-8 decodes whole), an alias named payload taken as the
// alias, and the errors. Then the edge-node state's bounds and stale deaths.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import protobuf from 'protobufjs';

import { compileRule, makeContext, parseRule, SqlRuntimeError } from '../../../src/rules/sql/index.ts';
import { SparkplugState } from '../../../src/features/sparkplug/state.ts';

const root = protobuf.parse(`
syntax = "proto2";
message Payload {
  message PropertyValue {
    optional uint32 type = 1;
    optional bool is_null = 2;
    oneof value { uint32 int_value = 3; uint64 long_value = 4; float float_value = 5; double double_value = 6; bool boolean_value = 7; string string_value = 8; }
  }
  message PropertySet { repeated string keys = 1; repeated PropertyValue values = 2; }
  message DataSet {
    message DataSetValue { oneof value { uint32 int_value = 1; uint64 long_value = 2; float float_value = 3; double double_value = 4; bool boolean_value = 5; string string_value = 6; } }
    message Row { repeated DataSetValue elements = 1; }
    optional uint64 num_of_columns = 1;
    repeated string columns = 2;
    repeated uint32 types = 3;
    repeated Row rows = 4;
  }
  message Metric {
    optional string name = 1;
    optional uint64 alias = 2;
    optional uint64 timestamp = 3;
    optional uint32 datatype = 4;
    optional bool is_null = 7;
    optional PropertySet properties = 9;
    oneof value { uint32 int_value = 10; uint64 long_value = 11; float float_value = 12; double double_value = 13; bool boolean_value = 14; string string_value = 15; bytes bytes_value = 16; DataSet dataset_value = 17; }
  }
  optional uint64 timestamp = 1;
  repeated Metric metrics = 2;
  optional uint64 seq = 3;
  optional string uuid = 4;
  optional bytes body = 5;
}`, { keepCase: true }).root;
const Payload = root.lookupType('Payload');
const enc = (o: Record<string, unknown>) => Buffer.from(Payload.encode(Payload.fromObject(o)).finish());

function run(sql: string, payload: unknown): Record<string, unknown> | null {
  return compileRule(parseRule(sql))(makeContext('PUBLISH', { topic: 'spBv1.0/g/NDATA/n', payload }));
}

const PAYLOAD = enc({
  timestamp: 1700000000000,
  seq: 7,
  uuid: 'u-1',
  body: Buffer.from([0xff, 0x00]),
  metrics: [
    { name: 'i8', datatype: 1, int_value: 0xfe },
    { name: 'i16', datatype: 2, int_value: 0xfffe },
    { name: 'i32', datatype: 3, int_value: 0xfffffffe },
    { name: 'i64', datatype: 4, long_value: '18446744073709551614' },
    { name: 'u32', datatype: 7, int_value: 0xfffffffe },
    { name: 'u64', datatype: 8, long_value: '9007199254740993' },
    { name: 'f', datatype: 9, float_value: 1.5 },
    { name: 'b', datatype: 11, boolean_value: true },
    { name: 's', datatype: 12, string_value: 'x', properties: { keys: ['unit'], values: [{ type: 12, string_value: 'C' }] } },
    { name: 'n', datatype: 10, is_null: true },
    { name: 'bytes', datatype: 17, bytes_value: Buffer.from('hi') },
    { name: 'bools', datatype: 32, bytes_value: Buffer.from([3, 0, 0, 0, 0b10100000]) },
    { name: 'strs', datatype: 33, bytes_value: Buffer.from('ab\0c\0') },
    { name: 'ds', datatype: 16, dataset_value: { num_of_columns: 2, columns: ['a', 'b'], types: [3, 12], rows: [{ elements: [{ int_value: 0xffffffff }, { string_value: 'r1' }] }] } },
  ],
});

test('spb_decode reads every datatype family as its datatype says', () => {
  const out = run('SELECT spb_decode(payload) AS p FROM "#"', PAYLOAD)!;
  const p = out.p as { timestamp: number; seq: number; uuid: string; body: string; metrics: { name: string; value: unknown; type: string; properties?: unknown }[] };
  assert.equal(p.timestamp, 1700000000000);
  assert.equal(p.seq, 7);
  assert.equal(p.uuid, 'u-1');
  assert.equal(p.body, Buffer.from([0xff, 0x00]).toString('base64'), 'bytes that are not UTF-8 come whole: the payload reached the function as bytes');
  const v = Object.fromEntries(p.metrics.map((m) => [m.name, m.value]));
  assert.deepEqual(v, {
    i8: -2, i16: -2, i32: -2, i64: -2, u32: 4294967294, u64: '9007199254740993', f: 1.5, b: true, s: 'x', n: null,
    bytes: Buffer.from('hi').toString('base64'), bools: [true, false, true], strs: ['ab', 'c'],
    ds: { columns: ['a', 'b'], types: ['Int32', 'String'], rows: [[-1, 'r1']] },
  });
  assert.deepEqual(p.metrics.find((m) => m.name === 's')!.properties, { unit: 'C' });
  assert.equal(p.metrics.find((m) => m.name === 'i64')!.type, 'Int64');
});

test('spb_decode in WHERE, directly and through a path of its alias', () => {
  assert.deepEqual(run('SELECT spb_decode(payload) AS p, p.seq AS seq FROM "#" WHERE p.metrics[2].value = -2', PAYLOAD)!.seq, 7);
  assert.equal(run('SELECT spb_decode(payload) AS p FROM "#" WHERE p.metrics[2].value = 5', PAYLOAD), null);
  assert.deepEqual(run('SELECT 1 AS x FROM "#" WHERE map_get(\'seq\', spb_decode(payload)) = 7', PAYLOAD), { x: 1 });
  assert.equal(run('SELECT 1 AS x FROM "#" WHERE map_get(\'seq\', spb_decode(payload)) > 7', PAYLOAD), null);
});

test('an alias named payload is passed as the alias, not the event payload', () => {
  const out = run('SELECT hex_decode(\'\') AS payload, spb_decode(payload) AS p FROM "#"', PAYLOAD);
  assert.deepEqual(out!.p, { metrics: [] }, 'the empty alias decodes as an empty payload');
});

test('spb_decode errors: not a Sparkplug payload, a bad packed array, null', () => {
  const fails = (payload: unknown, re: RegExp) =>
    assert.throws(() => run('SELECT spb_decode(payload) AS p FROM "#"', payload), (e: unknown) => e instanceof SqlRuntimeError && re.test(e.message));
  fails(Buffer.from([0x0a, 0xff, 0xff]), /spb_decode\(\): not a Sparkplug B payload/);
  fails(enc({ metrics: [{ name: 'x', datatype: 23, bytes_value: Buffer.from([1, 2, 3]) }] }), /Int16Array: 3 bytes/);
  fails(enc({ metrics: [{ name: 'x', datatype: 33, bytes_value: Buffer.from('no-nul') }] }), /StringArray/);
  fails(null, /needs a payload/);
});

test('the edge-node state: bounded in edge nodes and devices, stale deaths ignored, decode errors counted', () => {
  const s = new SparkplugState({ maxEdgeNodes: 1, maxDevicesPerNode: 1 }, () => 1000);
  const birth = (bd: number) => enc({ seq: 0, metrics: [{ name: 'bdSeq', datatype: 4, long_value: bd }] });
  s.applyOne('spBv1.0/g/NBIRTH/a', birth(1));
  s.applyOne('spBv1.0/g/NBIRTH/b', birth(1));
  assert.deepEqual(s.list().map((n) => n.node), ['a']);
  assert.equal(s.counters.dropped.edgeNodes, 1);
  s.applyOne('spBv1.0/g/DBIRTH/a/d1', enc({ seq: 1 }));
  s.applyOne('spBv1.0/g/DBIRTH/a/d2', enc({ seq: 2 }));
  assert.deepEqual([...s.get('g', 'a')!.devices.keys()], ['d1']);
  assert.equal(s.counters.dropped.devices, 1);
  s.applyOne('spBv1.0/g/NDEATH/a', enc({ metrics: [{ name: 'bdSeq', datatype: 4, long_value: 0 }] }));
  assert.equal(s.get('g', 'a')!.online, true);
  assert.equal(s.counters.staleDeaths, 1);
  s.applyOne('spBv1.0/g/NDEATH/a', enc({ metrics: [{ name: 'bdSeq', datatype: 4, long_value: 1 }] }));
  assert.equal(s.get('g', 'a')!.online, false);
  assert.equal(s.get('g', 'a')!.devices.get('d1')!.online, false);
  s.applyOne('spBv1.0/g/NDATA/a', Buffer.from([0x0a, 0xff]));
  s.applyOne('spBv1.0/STATE/h', Buffer.from('not json'));
  assert.equal(s.counters.decodeErrors, 2);
  s.applyOne('spBv1.0/g/NBIRTH/a/extra/level', birth(2)); // not a Sparkplug topic: ignored
  assert.equal(s.counters.births.node, 1);
  assert.deepEqual(s.counts(), { online: 0, offline: 1, devicesOnline: 0, devicesOffline: 1 });
});
