// Compiled rules evaluated on events: JSON paths and their output nesting, filtering, aliases in
// WHERE, SELECT *, operator semantics (nulls, numeric strings, LIKE, =~, IN, CASE), runtime
// errors, and explain() for /rule/test.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { compileRule, explain, makeContext, parseRule, SqlRuntimeError, type RuleContext } from '../../../src/rules/sql/index.ts';

function publish(payload: unknown, extra: Record<string, unknown> = {}): RuleContext {
  return makeContext('PUBLISH', {
    topic: 'a/b/c',
    clientId: 'dev-1',
    username: 'alice',
    qos: 1,
    retain: false,
    timestamp: 1700000000000,
    payload: Buffer.from(typeof payload === 'string' ? payload : JSON.stringify(payload)),
    ...extra,
  });
}

function run(sql: string, c: RuleContext): Record<string, unknown> | null {
  return compileRule(parseRule(sql))(c);
}

/** The value of a WHERE condition: true when the rule passes. */
function where(cond: string, c: RuleContext = publish({ t: 31, s: '5', n: null, arr: [1, 2] })): boolean {
  return run(`SELECT 1 AS one FROM "#" WHERE ${cond}`, c) !== null;
}

test('JSON paths: values, arrays, missing paths, nested output without alias', () => {
  const c = publish({ temp: 31, a: { b: { c: 'deep' } }, arr: [10, { x: 'y' }] });
  assert.deepEqual(run('SELECT payload.temp AS t, payload.arr[1].x AS x, payload.arr.0 AS first FROM "a/#"', c), { t: 31, x: 'y', first: 10 });
  assert.deepEqual(run('SELECT payload.a.b.c, payload.temp FROM "a/#"', c), { payload: { a: { b: { c: 'deep' } }, temp: 31 } });
  assert.deepEqual(run('SELECT payload.nope, payload.a.zz.q AS q, clientid FROM "a/#"', c), { clientid: 'dev-1' });
  // Nesting copies: the parsed payload shared with other rules is not written into.
  const out = run('SELECT payload.a, payload.a.b.c FROM "a/#"', c) as { payload: { a: unknown } };
  assert.deepEqual(out, { payload: { a: { b: { c: 'deep' } } } });
  assert.notEqual(out.payload.a, (c.json() as { a: unknown }).a);
});

test('fields: names as written, payload as text, function calls named by their text, null kept', () => {
  const c = publish({ t: 1 });
  assert.deepEqual(run('SELECT clientId, USERNAME, payload, upper(username), qos + 1, payload.nothing IS NULL AS missing, null AS n FROM "#"', c), {
    clientId: 'dev-1',
    USERNAME: 'alice',
    payload: '{"t":1}',
    'upper(username)': 'ALICE',
    'qos + 1': 2,
    missing: true,
    n: null,
  });
});

test('a payload that is not JSON: payload.x is missing, payload is its text', () => {
  const c = publish('not json');
  assert.deepEqual(run('SELECT payload, payload.x AS x FROM "#"', c), { payload: 'not json' });
  assert.equal(run('SELECT payload FROM "#" WHERE payload.x > 1', c), null);
});

test('WHERE filters; null on filtered', () => {
  const sql = 'SELECT payload.temp AS t, clientid FROM "a/#" WHERE payload.temp > 30';
  const rule = compileRule(parseRule(sql));
  assert.deepEqual(rule(publish({ temp: 31 })), { t: 31, clientid: 'dev-1' });
  assert.equal(rule(publish({ temp: 30 })), null);
  assert.equal(rule(publish({})), null);
});

test('aliases in WHERE and in later fields', () => {
  const rule = compileRule(parseRule('SELECT payload.t AS t, t * 2 AS double FROM "a/#" WHERE t > 30 AND DOUBLE < 100'));
  assert.deepEqual(rule(publish({ t: 31 })), { t: 31, double: 62 });
  assert.equal(rule(publish({ t: 20 })), null);
  assert.equal(rule(publish({ t: 60 })), null);
  // An alias shadows the event field of the same name.
  assert.deepEqual(run("SELECT 'x' AS topic FROM \"#\" WHERE topic = 'x'", publish({})), { topic: 'x' });
  // A path into an alias.
  assert.deepEqual(run('SELECT payload.m AS m FROM "#" WHERE m.k = 2', publish({ m: { k: 2 } })), { m: { k: 2 } });
});

test('SELECT *: every event field, payload as text, a fresh object', () => {
  const c = publish({ t: 1 });
  const rule = compileRule(parseRule('SELECT * FROM "a/#" WHERE qos = 1'));
  const out = rule(c);
  assert.deepEqual(out, { topic: 'a/b/c', clientid: 'dev-1', username: 'alice', qos: 1, retain: false, timestamp: 1700000000000, payload: '{"t":1}' });
  out!.qos = 9;
  assert.equal(c.fields.qos, 1);
  assert.notEqual(rule(c), out);
  assert.equal(rule(publish({}, { qos: 0 })), null);
});

test('comparisons: null is never equal, numeric strings compare as numbers', () => {
  assert.equal(where('payload.t = 31'), true);
  assert.equal(where("payload.t = '31'"), true);
  assert.equal(where("payload.s = 5"), true);
  assert.equal(where("payload.s > 4.5"), true);
  assert.equal(where("payload.s = '5'"), true);
  assert.equal(where("'abc' < 'abd'"), true);
  assert.equal(where("payload.t > 'abc'"), false);
  assert.equal(where('payload.n = null'), false);
  assert.equal(where('payload.n != 1'), false);
  assert.equal(where('payload.missing < 1'), false);
  assert.equal(where('payload.missing >= 1'), false);
  assert.equal(where('payload.t <> 30'), true);
  assert.equal(where('payload.t != 31'), false);
  assert.equal(where('payload.t <= 31 AND payload.t >= 31'), true);
  assert.equal(where('true = true'), true);
  assert.equal(where('payload.arr = json_decode(\'[1,2]\')'), true);
});

test('logic: AND, OR, NOT, IS [NOT] NULL', () => {
  assert.equal(where('payload.t > 30 AND qos = 1'), true);
  assert.equal(where('payload.t > 40 OR qos = 1'), true);
  assert.equal(where('payload.t > 40 OR qos = 2'), false);
  assert.equal(where('NOT payload.t > 40'), true);
  assert.equal(where('NOT (payload.t > 30 AND qos = 1)'), false);
  assert.equal(where('payload.n IS NULL AND payload.missing IS NULL AND payload.t IS NOT NULL'), true);
  assert.equal(where('payload.t'), false); // only true passes
});

test('LIKE, =~, IN, CASE', () => {
  assert.equal(where("clientid LIKE 'dev-%'"), true);
  assert.equal(where("clientid LIKE 'dev-_'"), true);
  assert.equal(where("clientid LIKE 'dev'"), false);
  assert.equal(where("clientid NOT LIKE 'x%'"), true);
  assert.equal(where("'a.b' LIKE 'a.b' AND NOT 'axb' LIKE 'a.b'"), true); // regex characters are literal
  assert.equal(where("'50%' LIKE '50\\%'"), true);
  assert.equal(where("clientid LIKE concat('de', '%')"), true);
  assert.equal(where("payload.missing LIKE '%'"), false);
  assert.equal(where("'' LIKE NULL"), false);
  assert.equal(where("topic =~ 'a/+/c'"), true);
  assert.equal(where("topic =~ 'a/#'"), true);
  assert.equal(where("topic =~ 'a/+'"), false);
  assert.equal(where("topic =~ concat('a/', '#')"), true);
  assert.equal(where("topic =~ '#'", publish({}, { topic: '$SYS/x' })), false);
  assert.equal(where("clientid IN ('x', 'dev-1')"), true);
  assert.equal(where('payload.s IN (4, 5)'), true);
  assert.equal(where('qos NOT IN (0, 2)'), true);
  assert.equal(where('payload.missing NOT IN (1)'), false);
  const c = publish({ t: 31 });
  assert.deepEqual(run("SELECT CASE WHEN payload.t > 30 THEN 'hot' ELSE 'ok' END AS s, CASE qos WHEN 0 THEN 'zero' WHEN 1 THEN 'one' END AS q, CASE WHEN false THEN 1 END AS none FROM \"#\"", c), { s: 'hot', q: 'one', none: null });
});

test('arithmetic: + - * / div mod, string concatenation, errors', () => {
  const c = publish({ a: 7, b: 2, s: 'x', n: '3' });
  assert.deepEqual(run('SELECT payload.a + payload.b AS p, payload.a - payload.b AS m, payload.a * payload.b AS t, payload.a / payload.b AS d, payload.a div payload.b AS i, payload.a mod payload.b AS r, -payload.a AS neg FROM "#"', c), {
    p: 9, m: 5, t: 14, d: 3.5, i: 3, r: 1, neg: -7,
  });
  assert.deepEqual(run("SELECT payload.s + 'y' AS s, clientid + '/' + payload.a AS k, payload.n * 2 AS n FROM \"#\"", c), { s: 'xy', k: 'dev-1/7', n: 6 });
  const fails = (expr: string, message: RegExp) =>
    assert.throws(() => run(`SELECT ${expr} AS v FROM "#"`, c), (e: unknown) => e instanceof SqlRuntimeError && message.test(e.message), expr);
  fails('payload.a / 0', /division by zero/);
  fails('payload.a div 0', /division by zero/);
  fails('payload.a mod 0', /division by zero/);
  fails('payload.missing + 1', /cannot add undefined and 1/);
  fails("payload.s * 2", /\* needs a number, got "x"/);
  fails("base64_decode('!!')", /not base64/);
});

test('makeContext: field names in any case, json() memoized, object payloads', () => {
  const c = makeContext('CONNECT', { ClientID: 'c', PeerHost: '1.2.3.4' });
  assert.deepEqual(run('SELECT clientid, peerhost FROM "$EVENT.CONNECT"', c), { clientid: 'c', peerhost: '1.2.3.4' });
  const p = makeContext('PUBLISH', { topic: 't', payload: '{"x":{"y":1}}' });
  assert.equal(p.json(), p.json());
  const o = makeContext('PUBLISH', { topic: 't', payload: { x: 2 } });
  assert.deepEqual(run('SELECT payload.x AS x FROM "t"', o), { x: 2 });
});

test('explain: output, or why the event was filtered', () => {
  const parsed = parseRule('SELECT payload.t AS t FROM "a/#", "$EVENT.CONNECT" WHERE t > 30');
  const rule = compileRule(parsed);
  assert.deepEqual(explain(parsed, rule, publish({ t: 31 })), { output: { t: 31 } });
  assert.deepEqual(explain(parsed, rule, publish({ t: 1 })), { filtered: 'the WHERE condition is not true' });
  assert.match((explain(parsed, rule, publish({ t: 31 }, { topic: 'b/c' })) as { filtered: string }).filtered, /topic "b\/c" matches none of the rule's filters \(a\/#\)/);
  assert.match((explain(parsed, rule, makeContext('DROP', {})) as { filtered: string }).filtered, /event DROP is not a source/);
  const bad = parseRule("SELECT base64_decode('!') AS x FROM \"#\"");
  assert.throws(() => explain(bad, compileRule(bad), publish({})), SqlRuntimeError);
});

test('output: the same key twice (last wins), a leaf then a path under it, __proto__ as a name', () => {
  const c = publish({ a: { b: 1, c: 2 }, t: 5 });
  assert.deepEqual(run('SELECT 1 AS x, 2 AS x FROM "#"', c), { x: 2 });
  const out = run('SELECT payload.a, payload.a.c, payload.t FROM "#"', c) as { payload: { a: unknown } };
  assert.deepEqual(out, { payload: { a: { b: 1, c: 2 }, t: 5 } });
  assert.notEqual(out.payload.a, (c.json() as { a: unknown }).a);
  assert.deepEqual(run("SELECT payload.a.b, 'x' AS payload FROM \"#\"", c), { payload: 'x' });
  const proto = run('SELECT 1 AS `__proto__`, 2 AS y FROM "#"', c)!;
  assert.equal(Object.getPrototypeOf(proto), Object.prototype);
  assert.deepEqual(Object.keys(proto), ['__proto__', 'y']);
  // A missing value leaves its field out, in both the literal and the field-by-field builder.
  assert.deepEqual(run('SELECT payload.zz AS z, payload.t AS t FROM "#"', c), { t: 5 });
});
