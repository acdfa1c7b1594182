// The rule SQL parser: fields and aliases, FROM sources and events, WHERE operators and their
// precedence, CASE, IN, LIKE, =~, comments, and errors with their exact line, column and
// expected tokens.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { parseExpression, parseRule, SqlSyntaxError, type Expr } from '../../../src/rules/sql/index.ts';

const lit = (value: string | number | boolean | null): Expr => ({ type: 'literal', value });
const field = (name: string): Expr => ({ type: 'field', name });

function syntaxError(sql: string): SqlSyntaxError {
  try {
    parseRule(sql);
  } catch (err) {
    assert.ok(err instanceof SqlSyntaxError, `not a SqlSyntaxError: ${err}`);
    return err;
  }
  assert.fail(`parsed without error: ${sql}`);
}

test('fields: *, expressions, aliases and their source text', () => {
  assert.equal(parseRule('SELECT * FROM "t"').fields, '*');
  const r = parseRule('select payload.temp as t, clientId, `my field`, upper( username ) AS "U", 1 + 2 FROM "t"');
  assert.deepEqual(r.fields, [
    { expr: { type: 'path', root: 'payload', path: ['temp'] }, alias: 't', text: 'payload.temp' },
    { expr: field('clientId'), alias: null, text: 'clientId' },
    { expr: field('my field'), alias: null, text: '`my field`' },
    { expr: { type: 'call', name: 'upper', args: [field('username')] }, alias: 'U', text: 'upper( username )' },
    { expr: { type: 'binary', op: '+', left: lit(1), right: lit(2) }, alias: null, text: '1 + 2' },
  ]);
});

test('paths: dotted keys, array indexes, numeric and keyword keys', () => {
  assert.deepEqual(parseExpression('payload.a.b'), { type: 'path', root: 'payload', path: ['a', 'b'] });
  assert.deepEqual(parseExpression('payload.arr[0].x'), { type: 'path', root: 'payload', path: ['arr', 0, 'x'] });
  assert.deepEqual(parseExpression('payload.list.1.2'), { type: 'path', root: 'payload', path: ['list', 1, 2] });
  assert.deepEqual(parseExpression('payload.`a-b`.end'), { type: 'path', root: 'payload', path: ['a-b', 'end'] });
  assert.deepEqual(parseExpression("user_properties['k']"), { type: 'path', root: 'user_properties', path: ['k'] });
});

test('literals: strings in both quotes with escapes, numbers, booleans, null', () => {
  assert.deepEqual(parseExpression("'it''s'"), lit("it's"));
  assert.deepEqual(parseExpression('"say \\"hi\\""'), lit('say "hi"'));
  assert.deepEqual(parseExpression("'a\\nb'"), lit('a\nb'));
  assert.deepEqual(parseExpression('42'), lit(42));
  assert.deepEqual(parseExpression('-3.5'), lit(-3.5));
  assert.deepEqual(parseExpression('1e3'), lit(1000));
  assert.deepEqual(parseExpression('TRUE'), lit(true));
  assert.deepEqual(parseExpression('false'), lit(false));
  assert.deepEqual(parseExpression('Null'), lit(null));
});

test('FROM: several sources, events in any case, EMQX aliases, events and filters listened to', () => {
  const r = parseRule('SELECT * FROM "a/+/c", "$EVENT.connect", "$events/client_disconnected", "b/#"');
  assert.deepEqual(r.sources, [
    { kind: 'topic', filter: 'a/+/c' },
    { kind: 'event', event: 'CONNECT' },
    { kind: 'event', event: 'CLOSE' },
    { kind: 'topic', filter: 'b/#' },
  ]);
  assert.deepEqual(r.events, ['PUBLISH', 'CONNECT', 'CLOSE']);
  assert.deepEqual(r.filters, ['a/+/c', 'b/#']);
  const all = parseRule("SELECT * FROM '$EVENT.PUBLISH', \"$events/message_acked\", \"$EVENT.Drop\"");
  assert.deepEqual(all.events, ['PUBLISH', 'ACK', 'DROP']);
  assert.deepEqual(all.filters, ['#']);
  for (const [name, event] of [['session_subscribed', 'SUBSCRIBE'], ['session_unsubscribed', 'UNSUBSCRIBE'], ['message_delivered', 'DELIVERED'], ['message_dropped', 'DROP']]) {
    assert.deepEqual(parseRule(`SELECT * FROM "$events/${name}"`).sources, [{ kind: 'event', event }]);
  }
  for (const name of ['PUBLISH', 'CONNECT', 'DISCONNECT', 'CLOSE', 'SUBSCRIBE', 'UNSUBSCRIBE', 'ACK', 'DELIVERED', 'DROP', 'FLAPPING']) {
    assert.deepEqual(parseRule(`SELECT * FROM "$EVENT.${name}"`).events, [name]);
  }
});

test('WHERE: comparison operators', () => {
  for (const op of ['=', '!=', '>', '<', '>=', '<=']) {
    assert.deepEqual(parseRule(`SELECT * FROM "t" WHERE qos ${op} 1`).where, { type: 'binary', op, left: field('qos'), right: lit(1) });
  }
  assert.deepEqual(parseExpression('a <> b'), { type: 'binary', op: '!=', left: field('a'), right: field('b') });
});

test('precedence: OR < AND < NOT < comparison < + - < * / div mod < unary -', () => {
  assert.deepEqual(parseExpression('a OR b AND c'), {
    type: 'binary', op: 'OR', left: field('a'), right: { type: 'binary', op: 'AND', left: field('b'), right: field('c') },
  });
  assert.deepEqual(parseExpression('NOT a = 1 AND b'), {
    type: 'binary', op: 'AND',
    left: { type: 'unary', op: 'NOT', operand: { type: 'binary', op: '=', left: field('a'), right: lit(1) } },
    right: field('b'),
  });
  assert.deepEqual(parseExpression('1 + 2 * 3 > x - 1'), {
    type: 'binary', op: '>',
    left: { type: 'binary', op: '+', left: lit(1), right: { type: 'binary', op: '*', left: lit(2), right: lit(3) } },
    right: { type: 'binary', op: '-', left: field('x'), right: lit(1) },
  });
  assert.deepEqual(parseExpression('(a + b) * c'), {
    type: 'binary', op: '*', left: { type: 'binary', op: '+', left: field('a'), right: field('b') }, right: field('c'),
  });
  assert.deepEqual(parseExpression('a - b - c'), {
    type: 'binary', op: '-', left: { type: 'binary', op: '-', left: field('a'), right: field('b') }, right: field('c'),
  });
  assert.deepEqual(parseExpression('a DIV 2 mod 3'), {
    type: 'binary', op: 'mod', left: { type: 'binary', op: 'div', left: field('a'), right: lit(2) }, right: lit(3),
  });
  assert.deepEqual(parseExpression('-x * 2'), {
    type: 'binary', op: '*', left: { type: 'unary', op: '-', operand: field('x') }, right: lit(2),
  });
  assert.deepEqual(parseExpression('mod(a, 2)'), { type: 'call', name: 'mod', args: [field('a'), lit(2)] });
});

test('CASE in both forms', () => {
  assert.deepEqual(parseExpression("CASE WHEN t > 30 THEN 'hot' WHEN t < 0 THEN 'cold' ELSE 'ok' END"), {
    type: 'case',
    subject: null,
    whens: [
      { when: { type: 'binary', op: '>', left: field('t'), right: lit(30) }, then: lit('hot') },
      { when: { type: 'binary', op: '<', left: field('t'), right: lit(0) }, then: lit('cold') },
    ],
    else: lit('ok'),
  });
  assert.deepEqual(parseExpression('case qos when 0 then 1 end'), {
    type: 'case', subject: field('qos'), whens: [{ when: lit(0), then: lit(1) }], else: null,
  });
});

test('IN, NOT IN, LIKE, NOT LIKE, =~, IS [NOT] NULL', () => {
  assert.deepEqual(parseExpression("clientid IN ('a', 'b')"), { type: 'in', negated: false, operand: field('clientid'), list: [lit('a'), lit('b')] });
  assert.deepEqual(parseExpression('qos NOT IN (0)'), { type: 'in', negated: true, operand: field('qos'), list: [lit(0)] });
  assert.deepEqual(parseExpression("clientid LIKE 'dev%'"), { type: 'like', negated: false, operand: field('clientid'), pattern: lit('dev%') });
  assert.deepEqual(parseExpression("clientid NOT LIKE 'a_'"), { type: 'like', negated: true, operand: field('clientid'), pattern: lit('a_') });
  assert.deepEqual(parseExpression("topic =~ 'a/+/#'"), { type: 'match', operand: field('topic'), filter: lit('a/+/#') });
  assert.deepEqual(parseExpression('username IS NULL'), { type: 'is_null', negated: false, operand: field('username') });
  assert.deepEqual(parseExpression('username is not null'), { type: 'is_null', negated: true, operand: field('username') });
});

test('comments, whitespace, case of keywords, a trailing semicolon', () => {
  const r = parseRule(`-- the hot sensors
    sElEcT /* the value */ payload.t AS t
    FROM "s/#" -- all sensors
    wHeRe t > 30;  `);
  assert.deepEqual(r.where, { type: 'binary', op: '>', left: field('t'), right: lit(30) });
  assert.deepEqual(parseRule('SELECT * FROM "t";').sources, [{ kind: 'topic', filter: 't' }]);
});

test('errors: exact line, column, expected and found', () => {
  const cases: [string, number, number, string[], string, string][] = [
    ['SELECT a FORM "t"', 1, 10, ['FROM'], 'FORM', 'line 1, column 10: expected FROM, found "FORM"'],
    ['SELECT a FROM "t" WHER x', 1, 19, ['","', 'WHERE', 'end of input'], 'WHER', 'line 1, column 19: expected ",", WHERE or end of input, found "WHER"'],
    ['SELECT a FROM "t" WHERE', 1, 24, ['an expression'], 'end of input', 'line 1, column 24: expected an expression, found end of input'],
    ['SELECT FROM "t"', 1, 8, ['an expression'], 'FROM', 'line 1, column 8: expected an expression, found "FROM"'],
    ['SELECT a, FROM "t"', 1, 11, ['an expression'], 'FROM', 'line 1, column 11: expected an expression, found "FROM"'],
    ['SELECT a FROM t', 1, 15, ['a quoted topic filter or event'], 't', 'line 1, column 15: expected a quoted topic filter or event, found "t"'],
    ['SELEC a FROM "t"', 1, 1, ['SELECT'], 'SELEC', 'line 1, column 1: expected SELECT, found "SELEC"'],
    ['SELECT a FROM "t" WHERE x IN (1, 2', 1, 35, ['","', '")"'], 'end of input', 'line 1, column 35: expected "," or ")", found end of input'],
    ["SELECT CASE WHEN a THEN 1 FROM \"t\"", 1, 27, ['WHEN', 'ELSE', 'END'], 'FROM', 'line 1, column 27: expected WHEN, ELSE or END, found "FROM"'],
    ['SELECT a AS FROM "t"', 1, 13, ['an alias'], 'FROM', 'line 1, column 13: expected an alias, found "FROM"'],
    ['SELECT a FROM "t" WHERE a = 1 b', 1, 31, ['end of input'], 'b', 'line 1, column 31: expected end of input, found "b"'],
    ['SELECT (a FROM "t"', 1, 11, ['")"'], 'FROM', 'line 1, column 11: expected ")", found "FROM"'],
    ['SELECT a FROM "t" WHERE a IS 1', 1, 30, ['NULL'], '1', 'line 1, column 30: expected NULL, found "1"'],
  ];
  for (const [sql, line, column, expected, found, message] of cases) {
    const e = syntaxError(sql);
    assert.deepEqual({ line: e.line, column: e.column, expected: e.expected, found: e.found, message: e.message }, { line, column, expected, found, message }, sql);
  }
});

test('errors: lexical problems', () => {
  let e = syntaxError("SELECT 'abc FROM \"t\"");
  assert.deepEqual([e.line, e.column, e.found], [1, 8, 'end of input']);
  assert.match(e.message, /unterminated string/);
  e = syntaxError('SELECT a /* open FROM "t"');
  assert.deepEqual([e.line, e.column], [1, 10]);
  e = syntaxError('SELECT a @ b FROM "t"');
  assert.deepEqual([e.line, e.column, e.found], [1, 10, '@']);
});

test('errors: multi-line SQL reports the right line and column', () => {
  let e = syntaxError('SELECT\n  payload.t AS t,\n  clientid\nFROM "a/#"\nWHERE t >\n  AND x');
  assert.deepEqual([e.line, e.column, e.message], [6, 3, 'line 6, column 3: expected an expression, found "AND"']);
  e = syntaxError('SELECT a -- comment\n  /* multi\n line */ FORM "t"');
  assert.deepEqual([e.line, e.column], [3, 10]);
  e = syntaxError("SELECT 'multi\nline' AS s, nope(1)\nFROM \"t\"");
  assert.deepEqual([e.line, e.column, e.found], [2, 13, 'nope']);
});

test('errors: unknown function, arity, literal regex, topic filters, events', () => {
  const cases: [string, number, number, RegExp][] = [
    ['SELECT foo(1) FROM "t"', 1, 8, /unknown function "foo"/],
    ['SELECT lower(a, b) FROM "t"', 1, 8, /function lower\(\) takes 1 argument, found 2/],
    ['SELECT a FROM "t" WHERE substr(a) = 1', 1, 25, /function substr\(\) takes 2 to 3 arguments, found 1/],
    ['SELECT concat(a) FROM "t"', 1, 8, /takes at least 2 arguments, found 1/],
    ['SELECT clientid(1) FROM "t"', 1, 8, /takes 0 arguments, found 1/],
    ["SELECT regex_match(a, '[') FROM \"t\"", 1, 23, /invalid regular expression/],
    ['SELECT * FROM "a/#/b"', 1, 15, /invalid topic filter "a\/#\/b": '#' must be the last level/],
    ['SELECT * FROM "t", "a/b+"', 1, 20, /'\+' must occupy a whole level/],
    ['SELECT * FROM ""', 1, 15, /must not be empty/],
    ['SELECT * FROM "$EVENT.NOPE"', 1, 15, /unknown event "\$EVENT.NOPE"/],
    ['SELECT * FROM "$events/nope"', 1, 15, /unknown event "\$events\/nope"/],
    ["SELECT * FROM \"t\" WHERE topic =~ 'a/#/b'", 1, 34, /invalid topic filter/],
  ];
  for (const [sql, line, column, message] of cases) {
    const e = syntaxError(sql);
    assert.deepEqual([e.line, e.column], [line, column], sql);
    assert.match(e.message, message, sql);
  }
});

test('the parsed rule is plain JSON', () => {
  const r = parseRule("SELECT lower(clientid) AS c, CASE WHEN qos IN (1, 2) THEN 'y' END FROM \"a/#\" WHERE c LIKE 'x%' AND topic =~ 'a/+'");
  assert.deepEqual(JSON.parse(JSON.stringify(r)), r);
});
