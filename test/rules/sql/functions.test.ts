// The rule SQL's built-in functions, one test per family, each evaluated through the parser and
// compiler on a small context, as a rule would call them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';

import { compileRule, makeContext, parseRule, SqlRuntimeError, type RuleContext } from '../../../src/rules/sql/index.ts';

const ctx = makeContext('PUBLISH', {
  topic: 'sensors/room-1/temp',
  clientId: 'Dev-42',
  username: 'alice',
  qos: 1,
  timestamp: 1700000000123,
  payload: Buffer.from('{"t":21.5,"s":"  hi  ","list":[3,4],"m":{"a":{"b":1}},"neg":-2.5}'),
});

/** The value of one expression on `c`. */
function ev(expr: string, c: RuleContext = ctx): unknown {
  const out = compileRule(parseRule(`SELECT ${expr} AS v FROM "#"`))(c);
  assert.ok(out !== null);
  return out.v;
}

function fails(expr: string, message: RegExp): void {
  assert.throws(() => ev(expr), (e: unknown) => e instanceof SqlRuntimeError && message.test(e.message), expr);
}

test('string functions', () => {
  assert.equal(ev("lower('AbC')"), 'abc');
  assert.equal(ev('upper(clientid)'), 'DEV-42');
  assert.equal(ev('trim(payload.s)'), 'hi');
  assert.equal(ev('ltrim(payload.s)'), 'hi  ');
  assert.equal(ev('rtrim(payload.s)'), '  hi');
  assert.equal(ev("concat('a', 1, true, 'b')"), 'a1trueb');
  assert.equal(ev("substr('abcdef', 2)"), 'cdef');
  assert.equal(ev("substr('abcdef', 0, 2)"), 'ab');
  assert.equal(ev("substr('abcdef', 4, 10)"), 'ef');
  assert.equal(ev("replace('a-b-c', '-', '+')"), 'a+b+c');
  assert.deepEqual(ev("split('/a//b/c/', '/')"), ['a', 'b', 'c']);
  assert.deepEqual(ev("split(topic, '/')"), ['sensors', 'room-1', 'temp']);
  assert.deepEqual(ev("tokens('a,b; c', ', ;')"), ['a', 'b', 'c']);
  assert.equal(ev("nth(2, split('x/y/z', '/'))"), 'y');
  assert.equal(ev("nth(5, split('x/y/z', '/'))"), undefined);
  assert.equal(ev("strlen('héllo')"), 5);
  assert.equal(ev('length(payload.list)'), 2);
  assert.equal(ev("reverse('abc')"), 'cba');
  assert.equal(ev("regex_match(clientid, '^dev-\\d+$')"), false);
  assert.equal(ev("regex_match(clientid, '^Dev-\\d+$')"), true);
  assert.equal(ev("regex_replace(topic, '[0-9]+', 'N')"), 'sensors/room-N/temp');
  // A pattern that is not a literal is compiled on the event; a bad one is a runtime error.
  assert.equal(ev("regex_match('abc', concat('^a', 'b'))"), true);
  fails("regex_match('abc', concat('(', ''))", /invalid regular expression/);
  fails('lower(payload.missing)', /lower\(\) needs a string, got undefined/);
});

test('math functions', () => {
  assert.equal(ev('abs(payload.neg)'), 2.5);
  assert.equal(ev('ceil(1.2)'), 2);
  assert.equal(ev('floor(-1.2)'), -2);
  assert.equal(ev('round(2.5)'), 3);
  assert.equal(ev('sqrt(16)'), 4);
  assert.equal(ev('power(2, 10)'), 1024);
  assert.equal(ev('pow(9, 0.5)'), 3);
  assert.equal(ev('exp(0)'), 1);
  assert.equal(ev('ln(1)'), 0);
  assert.equal(ev('log10(1000)'), 3);
  assert.equal(ev('log2(8)'), 3);
  assert.equal(ev('sin(0)'), 0);
  assert.equal(ev('cos(0)'), 1);
  assert.equal(ev('tan(0)'), 0);
  assert.equal(ev('mod(7, 3)'), 1);
  assert.equal(ev("abs('-3')"), 3);
  const r = ev('random()') as number;
  assert.ok(r >= 0 && r < 1);
  fails('sqrt(-1)', /sqrt\(\) has no finite result/);
  fails('mod(1, 0)', /division by zero/);
  fails("abs('x')", /abs\(\) needs a number, got "x"/);
});

test('type functions', () => {
  assert.equal(ev('str(12.5)'), '12.5');
  assert.equal(ev('str(payload.list)'), '[3,4]');
  assert.equal(ev('str(null)'), '');
  assert.equal(ev("int('42.9')"), 42);
  assert.equal(ev('int(-2.7)'), -2);
  assert.equal(ev('int(true)'), 1);
  assert.equal(ev("float('1.5e1')"), 15);
  assert.equal(ev("bool('true')"), true);
  assert.equal(ev('bool(0)'), false);
  fails("int('x')", /int\(\) needs a number/);
  fails("bool('yes')", /bool\(\) needs/);
  assert.equal(ev('is_null(payload.missing)'), true);
  assert.equal(ev('is_not_null(payload.t)'), true);
  assert.equal(ev('is_num(payload.t)'), true);
  assert.equal(ev("is_num('1')"), false);
  assert.equal(ev('is_str(clientid)'), true);
  assert.equal(ev('is_bool(false)'), true);
  assert.equal(ev('is_array(payload.list)'), true);
  assert.equal(ev('is_map(payload.m)'), true);
  assert.equal(ev("coalesce(payload.missing, null, 'x', 'y')"), 'x');
  assert.equal(ev('coalesce(payload.missing, null)'), null);
});

test('JSON and map functions', () => {
  assert.deepEqual(ev('json_decode(\'{"a":[1,2]}\')'), { a: [1, 2] });
  assert.equal(ev('json_encode(payload.m)'), '{"a":{"b":1}}');
  assert.equal(ev("json_encode('x')"), '"x"');
  fails("json_decode('{nope')", /json_decode\(\): not JSON/);
  assert.equal(ev("map_get('a.b', payload.m)"), 1);
  assert.equal(ev("map_get('t', payload)"), 21.5); // a JSON string is read as a map
  assert.equal(ev("map_get('zz', payload.m, 'dflt')"), 'dflt');
  assert.equal(ev("map_get('zz', payload.m)"), undefined);
  assert.deepEqual(ev("map_put('a.c', 2, payload.m)"), { a: { b: 1, c: 2 } });
  assert.deepEqual(ev("map_put('x', 1, json_decode('{}'))"), { x: 1 });
  // map_put copies: the payload's parsed JSON is unchanged.
  assert.deepEqual(ctx.json(), { t: 21.5, s: '  hi  ', list: [3, 4], m: { a: { b: 1 } }, neg: -2.5 });
  fails("map_get('a', 3)", /map_get\(\) needs a map, got 3/);
});

test('time functions', () => {
  const before = Date.now();
  const ms = ev('now_timestamp()') as number;
  assert.ok(ms >= before && ms <= Date.now());
  const s = ev("now_timestamp('second')") as number;
  assert.ok(Math.abs(s - before / 1000) < 2);
  const us = ev("now_timestamp('microsecond')") as number;
  assert.ok(Math.abs(us / 1000 - before) < 1000);
  const ns = ev("now_timestamp('nanosecond')") as number;
  assert.ok(Math.abs(ns / 1e6 - before) < 1000);
  assert.match(ev('now_rfc3339()') as string, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
  assert.match(ev("now_rfc3339('millisecond')") as string, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  assert.equal(ev('unix_ts_to_rfc3339(1700000000)'), '2023-11-14T22:13:20Z');
  assert.equal(ev("unix_ts_to_rfc3339(timestamp, 'millisecond')"), '2023-11-14T22:13:20.123Z');
  assert.equal(ev("unix_ts_to_rfc3339(1700000000000042, 'microsecond')"), '2023-11-14T22:13:20.000042Z');
  assert.equal(ev("rfc3339_to_unix_ts('2023-11-14T22:13:20Z')"), 1700000000);
  assert.equal(ev("rfc3339_to_unix_ts('2023-11-14T23:13:20.123+01:00', 'millisecond')"), 1700000000123);
  assert.equal(ev("rfc3339_to_unix_ts('2023-11-14T22:13:20.000042Z', 'microsecond')"), 1700000000000042);
  fails("rfc3339_to_unix_ts('yesterday')", /not an RFC 3339 time/);
  fails("now_timestamp('fortnight')", /unknown time unit/);
});

test('encoding functions', () => {
  assert.equal(ev("base64_encode('hello')"), 'aGVsbG8=');
  assert.equal(ev("base64_decode('aGVsbG8=')"), 'hello');
  fails("base64_decode('***')", /base64_decode\(\): not base64/);
  assert.equal(ev("hex_encode('AB')"), '4142');
  assert.equal(ev("bin2hexstr('AB')"), '4142');
  assert.equal(ev("hex_decode('4142')"), 'AB');
  fails("hex_decode('41x')", /not hexadecimal/);
  assert.equal(ev("md5('abc')"), createHash('md5').update('abc').digest('hex'));
  assert.equal(ev("sha('abc')"), createHash('sha1').update('abc').digest('hex'));
  assert.equal(ev("sha256('abc')"), createHash('sha256').update('abc').digest('hex'));
  assert.equal(ev('md5(payload)'), createHash('md5').update(ctx.fields.payload as Buffer).digest('hex'));
});

test('event functions: topic(n), clientid(), username(), qos(), timestamp(), payload()', () => {
  assert.equal(ev('topic()'), 'sensors/room-1/temp');
  assert.equal(ev('topic(1)'), 'sensors');
  assert.equal(ev('topic(3)'), 'temp');
  assert.equal(ev('topic(4)'), undefined);
  assert.equal(ev('clientid()'), 'Dev-42');
  assert.equal(ev('username()'), 'alice');
  assert.equal(ev('qos()'), 1);
  assert.equal(ev('timestamp()'), 1700000000123);
  assert.equal(typeof ev('payload()'), 'string');
  assert.equal(ev('CLIENTID()'), 'Dev-42'); // function names in any case
});
