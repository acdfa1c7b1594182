// The refusal of a value a schema does not take: 400 INVALID_PARAMETER naming the first bad field
// as the API names fields, with the message the hand checks gave; table-driven, one row per
// fault. And the domain error's placing under a larger request, and its plain form.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { Type, type Static } from '@sinclair/typebox';

import { DomainError, ERROR_CODES, fromPlain, toPlain } from '../../src/errors/domain-error.ts';
import { choice, compileSchema, fieldOf, orNull, PATTERN_MESSAGE, type Checker } from '../../src/schema/check.ts';

const ITEM = Type.Object({ q: Type.Integer({ minimum: 0, maximum: 2 }) }, { additionalProperties: false });
const SCHEMA = Type.Object(
  {
    id: Type.String({ minLength: 1, pattern: '^[a-z]+$', [PATTERN_MESSAGE]: 'letters a-z only' }),
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
    limit: Type.Optional(orNull(Type.Integer({ minimum: 1, maximum: 10 }))),
    mode: Type.Optional(choice(['merge', 'replace'] as const)),
    name: Type.Optional(Type.String({ minLength: 8, maxLength: 12 })),
    items: Type.Optional(Type.Array(ITEM, { maxItems: 2 })),
    page: Type.Optional(Type.Integer({ default: 1 })),
  },
  { additionalProperties: false },
);
const check: Checker<Static<typeof SCHEMA>> = compileSchema(SCHEMA);

const REFUSED: [unknown, string, string][] = [
  [{ port: 1 }, 'id', 'id: is required'],
  [{ id: 'a' }, 'port', 'port: is required'],
  [{ id: 'a', port: 1, colour: 'red' }, 'colour', 'colour: unknown field'],
  [{ id: 'A', port: 1 }, 'id', 'id: letters a-z only'],
  [{ id: '', port: 1 }, 'id', 'id: must not be empty'],
  [{ id: 'a', port: 0 }, 'port', 'port: must be between 1 and 65535, got 0'],
  [{ id: 'a', port: '2' }, 'port', 'port: expected an integer, got a string ("2")'],
  [{ id: 'a', port: 1.5 }, 'port', 'port: expected an integer, got number 1.5'],
  [{ id: 'a', port: 1, limit: 11 }, 'limit', 'limit: must be between 1 and 10, got 11'],
  [{ id: 'a', port: 1, mode: 'x' }, 'mode', 'mode: must be one of merge, replace, got "x"'],
  [{ id: 'a', port: 1, name: 'short' }, 'name', 'name: at least 8 characters'],
  [{ id: 'a', port: 1, name: 'much too long a name' }, 'name', 'name: longer than 12 characters'],
  [{ id: 'a', port: 1, items: [{ q: 0 }, { q: 3 }] }, 'items[1].q', 'items[1].q: must be between 0 and 2, got 3'],
  [{ id: 'a', port: 1, items: [{ q: 0, z: 1 }] }, 'items[0].z', 'items[0].z: unknown field'],
  [{ id: 'a', port: 1, items: [{ q: 0 }, { q: 1 }, { q: 2 }] }, 'items', 'items: must have at most 2 items'],
  [[], 'body', 'body: expected a JSON object, got an array'],
  ['text', 'body', 'body: expected a JSON object, got a string ("text")'],
];

test('a refused value: 400 INVALID_PARAMETER naming the first bad field, with a message naming it', () => {
  for (const [value, field, message] of REFUSED) {
    assert.throws(() => check(value), (err: unknown) => {
      assert.ok(err instanceof DomainError, JSON.stringify(value));
      assert.equal(err.status, 400);
      assert.equal(err.code, 'INVALID_PARAMETER');
      assert.equal(err.field, field, JSON.stringify(value));
      assert.equal(err.message, message, JSON.stringify(value));
      return true;
    });
  }
});

test('a value taken: null where the schema allows it, and the defaults filled in', () => {
  const value: Record<string, unknown> = { id: 'a', port: 1, limit: null };
  check(value);
  assert.deepEqual(value, { id: 'a', port: 1, limit: null, page: 1 });
});

test('query strings: integers and booleans from their text, and text that is neither refused', () => {
  const QUERY = Type.Object({ port: Type.Integer({ minimum: 1 }), gzip: Type.Optional(Type.Boolean()) });
  const q: Checker<Static<typeof QUERY>> = compileSchema(QUERY, { coerce: true });
  const ok: Record<string, unknown> = { port: '5', gzip: 'true' };
  q(ok);
  assert.deepEqual(ok, { port: 5, gzip: true });
  assert.throws(() => q({ port: 'abc' }), { field: 'port' });
  assert.throws(() => q({ port: '5', gzip: 'yes' }), { field: 'gzip' });
});

test("a module's refusal: compileSchema's refuse option makes its own subclass", () => {
  class ThingError extends DomainError {
    constructor(field: string, reason: string) {
      super('INVALID_PARAMETER', `${field}: ${reason}`, { field });
    }
  }
  const thing = compileSchema(Type.Object({ n: Type.Integer() }), { refuse: (field, reason) => new ThingError(field, reason) });
  assert.throws(() => thing({ n: 'x' }), (err: unknown) => err instanceof ThingError && err.field === 'n');
});

test('field names: JSON pointer to the API form', () => {
  assert.equal(fieldOf(''), '');
  assert.equal(fieldOf('', 'id'), 'id');
  assert.equal(fieldOf('/endpoints/1/port'), 'endpoints[1].port');
  assert.equal(fieldOf('/a~1b/0', 'c'), 'a/b[0].c');
});

test('under(): a refusal placed inside a larger request, in the field and the message', () => {
  const err = new DomainError('INVALID_PARAMETER', 'port: is required', { field: 'port' }).under('endpoints[0]');
  assert.equal(err.field, 'endpoints[0].port');
  assert.equal(err.message, 'endpoints[0].port: is required');
  const whole = new DomainError('INVALID_PARAMETER', 'body: expected a JSON object', { field: 'body' }).under('config.dashboards[2]');
  assert.equal(whole.field, 'config.dashboards[2]');
  const conflict = new DomainError('CONFLICT', 'port 1883 is in use', { field: 'port' }).under('endpoints[1]');
  assert.equal(conflict.status, 409);
  assert.equal(conflict.message, 'endpoints[1]: port 1883 is in use');
});

test('across a thread: the plain form rebuilds the same error; an unknown code takes its status', () => {
  const err = new DomainError('NOT_FOUND', 'client c1 not found', { field: 'clientId' });
  const back = fromPlain(structuredClone(toPlain(err)));
  assert.deepEqual([back.code, back.status, back.message, back.field], ['NOT_FOUND', 404, 'client c1 not found', 'clientId']);
  assert.equal(fromPlain({ code: 'SOMETHING_OLD', message: 'x', status: 503 }).code, 'UNAVAILABLE');
  assert.equal(fromPlain({ code: 'SOMETHING_OLD', message: 'x' }).code, 'INTERNAL_ERROR');
});

test('every code has an HTTP error status', () => {
  for (const [code, status] of Object.entries(ERROR_CODES)) assert.ok(status >= 400 && status < 600, code);
});
