// src/log: JSON lines with time, level, name, msg and fields; child fields; thresholds; Errors
// serialised with code, stack and cause. (Lives in test/config: the log module is part of the
// configuration-and-operations slice.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';

import { createLogger, type LogLevel } from '../../src/log/index.ts';
import { SpindleError } from '../../src/native/index.ts';

function capture(): { stream: Writable; lines: () => Record<string, any>[]; raw: string[] } {
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      raw.push(chunk.toString());
      done();
    },
  });
  return { stream, raw, lines: () => raw.map((l) => JSON.parse(l)) };
}

test('one JSON object per line, in the documented key order', () => {
  const out = capture();
  const log = createLogger({ level: 'info', name: 'worker-1', stream: out.stream });
  log.info('listening', { port: 1883, host: '::' });
  assert.equal(out.raw.length, 1);
  assert.ok(out.raw[0].endsWith('}\n'));
  const [line] = out.lines();
  assert.deepEqual(Object.keys(line), ['time', 'level', 'name', 'msg', 'port', 'host']);
  assert.equal(line.level, 'info');
  assert.equal(line.name, 'worker-1');
  assert.equal(line.msg, 'listening');
  assert.equal(line.port, 1883);
  assert.match(line.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
});

test('no name key without a name', () => {
  const out = capture();
  createLogger({ level: 'debug', stream: out.stream }).debug('x');
  assert.deepEqual(Object.keys(out.lines()[0]), ['time', 'level', 'msg']);
});

test('lines below the level are not written', () => {
  const out = capture();
  const log = createLogger({ level: 'warn', stream: out.stream });
  log.debug('d');
  log.info('i');
  log.warn('w');
  log.error('e');
  assert.deepEqual(out.lines().map((l) => [l.level, l.msg]), [['warn', 'w'], ['error', 'e']]);
  const enabled = (['debug', 'info', 'warn', 'error'] as LogLevel[]).filter((l) => log.isLevelEnabled(l));
  assert.deepEqual(enabled, ['warn', 'error']);
});

test('fields below the level are never looked at', () => {
  const out = capture();
  const log = createLogger({ level: 'error', stream: out.stream });
  const fields = {
    get expensive(): never {
      throw new Error('read');
    },
  };
  log.info('skipped', fields);
  assert.equal(out.raw.length, 0);
});

test('child loggers add their fields to every line; call fields win', () => {
  const out = capture();
  const root = createLogger({ level: 'info', name: 'broker', stream: out.stream });
  const conn = root.child({ clientId: 'c1', worker: 2 });
  const sub = conn.child({ topic: 'a/b' });
  conn.info('connected');
  sub.warn('dropped', { worker: 3 });
  root.info('plain');
  const [a, b, c] = out.lines();
  assert.deepEqual({ ...a, time: 0 }, { time: 0, level: 'info', name: 'broker', msg: 'connected', clientId: 'c1', worker: 2 });
  assert.deepEqual({ ...b, time: 0 }, { time: 0, level: 'warn', name: 'broker', msg: 'dropped', clientId: 'c1', worker: 3, topic: 'a/b' });
  assert.deepEqual(Object.keys(c), ['time', 'level', 'name', 'msg']);
  assert.equal(conn.level, 'info');
});

test('fields cannot overwrite time, level, name or msg', () => {
  const out = capture();
  createLogger({ level: 'info', name: 'n', stream: out.stream }).info('real', { msg: 'fake', level: 'debug' });
  const [line] = out.lines();
  assert.equal(line.msg, 'real');
  assert.equal(line.level, 'info');
  assert.equal(line._msg, 'fake');
  assert.equal(line._level, 'debug');
});

test('an Error is written as {name, message, code, stack} with its cause', () => {
  const out = capture();
  const root = new Error('socket closed');
  const err = new SpindleError('CONFIG_INVALID', 'bad port', 0x82, { cause: root });
  createLogger({ level: 'info', stream: out.stream }).error('failed', { err, nested: { inner: new TypeError('t') } });
  const [line] = out.lines();
  assert.equal(line.err.name, 'SpindleError');
  assert.equal(line.err.message, 'bad port');
  assert.equal(line.err.code, 'CONFIG_INVALID');
  assert.equal(line.err.reason, 0x82);
  assert.match(line.err.stack, /SpindleError: bad port/);
  assert.equal(line.err.cause.message, 'socket closed');
  assert.match(line.err.cause.stack, /Error: socket closed/);
  assert.equal(line.nested.inner.name, 'TypeError');
});

test('cycles and bigints do not make a log call throw', () => {
  const out = capture();
  const loop: Record<string, unknown> = { a: 1 };
  loop.self = loop;
  const shared = { x: 1 };
  const err = new Error('e') as Error & { cause?: unknown };
  err.cause = err;
  createLogger({ level: 'info', stream: out.stream }).info('odd', { loop, big: 2n ** 70n, pair: [shared, shared], err });
  const [line] = out.lines();
  assert.deepEqual(line.loop, { a: 1, self: '[Circular]' });
  assert.equal(line.big, '1180591620717411303424');
  assert.deepEqual(line.pair, [{ x: 1 }, { x: 1 }], 'a repeated (not circular) object is written twice');
  assert.equal(line.err.cause, '[Circular]');
});

test('an unknown level is refused', () => {
  assert.throws(() => createLogger({ level: 'trace' as LogLevel }), /level must be one of/);
});
