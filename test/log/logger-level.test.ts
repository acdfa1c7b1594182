// The logger's shared state: a level set at run time applies to the root and every child (made
// before or after), sinks get every line of the tree, named children write under another name,
// and force() writes whatever the level.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';

import { addLogSink, createLogger, setLogLevel } from '../../src/log/index.ts';

function capture(): { stream: Writable; lines: () => Record<string, unknown>[] } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      chunks.push(String(chunk));
      cb();
    },
  });
  return { stream, lines: () => chunks.join('').trimEnd().split('\n').filter(Boolean).map((l) => JSON.parse(l)) };
}

test('setLogLevel changes the root and every child', () => {
  const out = capture();
  const root = createLogger({ level: 'info', name: 'main', stream: out.stream });
  const child = root.child({ part: 'x' });
  child.debug('hidden');
  setLogLevel(child, 'debug');
  assert.equal(root.level, 'debug');
  child.debug('shown', { n: 1 });
  root.child({}).debug('also shown');
  setLogLevel(root, 'error');
  child.warn('hidden too');
  assert.equal(child.isLevelEnabled('warn'), false);
  assert.deepEqual(out.lines().map((l) => l.msg), ['shown', 'also shown']);
  assert.throws(() => setLogLevel(root, 'loud' as never), TypeError);
});

test('sinks get every line of the tree until removed; named and force', () => {
  const out = capture();
  const root = createLogger({ level: 'warn', name: 'main', stream: out.stream });
  const other = createLogger({ level: 'warn', name: 'other', stream: out.stream });
  const got: string[] = [];
  const remove = addLogSink(root, (line) => got.push(line));
  root.named('operator').force('debug', 'forced', { user: 'u' });
  root.child({ a: 1 }).error('child line');
  other.error('another tree');
  remove();
  root.error('after removal');
  assert.equal(got.length, 2);
  const [forced, child] = got.map((l) => JSON.parse(l));
  assert.deepEqual([forced.name, forced.level, forced.msg, forced.user], ['operator', 'debug', 'forced', 'u']);
  assert.deepEqual([child.name, child.a], ['main', 1]);
  assert.ok(got.every((l) => l.endsWith('\n')));
  assert.equal(out.lines().length, 4);
});
