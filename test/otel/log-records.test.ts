// A log line of the node as an OpenTelemetry log record (src/features/otel/log-records.ts): the
// logger's own lines (severity, time, message, fields as attributes beside node and thread), the
// level filter, and output that is not the logger's JSON.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';

import { createLogger } from '../../src/log/index.ts';
import { lineRecord } from '../../src/features/otel/log-records.ts';

/** The lines a real logger writes (without their newline). */
function written(fn: (log: ReturnType<typeof createLogger>) => void): string[] {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  fn(createLogger({ level: 'debug', name: 'engine', stream }));
  return lines;
}

test("the logger's line: severity, time, body, and its fields as attributes", () => {
  const [line] = written((log) => log.child({ worker: 1 }).warn('source address locked out', { address: '10.0.0.1', count: 3, ok: false, nested: { a: [1, 'b'] }, time: 'field named time', nothing: null, err: new Error('boom') }));
  const r = lineRecord(line, 'worker-1', 'node-a', 'info');
  assert.ok(r);
  assert.equal(r.severityNumber, 13);
  assert.equal(r.severityText, 'WARN');
  assert.equal(r.body, 'source address locked out');
  assert.ok(Math.abs(r.timestamp - Date.now()) < 5000);
  const { err, ...rest } = r.attributes;
  assert.deepEqual(rest, { node: 'node-a', thread: 'worker-1', logger: 'engine', worker: 1, address: '10.0.0.1', count: 3, ok: false, nested: { a: [1, 'b'] }, _time: 'field named time' });
  assert.equal((err as { message: string }).message, 'boom', 'an error field is a map');
});

test("a field named like a record's own attribute keeps its value under a leading underscore", () => {
  const [line] = written((log) => log.info('a node went down', { node: 'peer-2', thread: 't', logger: 'l' }));
  const r = lineRecord(line, 'main', 'node-a', 'info');
  assert.deepEqual(r?.attributes, { node: 'node-a', thread: 'main', logger: 'engine', _node: 'peer-2', _thread: 't', _logger: 'l' });
});

test('each level has its OpenTelemetry severity; below otel.logs.level nothing', () => {
  const lines = written((log) => {
    log.debug('d');
    log.info('i');
    log.warn('w');
    log.error('e');
  });
  assert.deepEqual(lines.map((l) => lineRecord(l, 'main', 'n', 'debug')).map((r) => [r?.severityNumber, r?.severityText]), [[5, 'DEBUG'], [9, 'INFO'], [13, 'WARN'], [17, 'ERROR']]);
  assert.deepEqual(lines.map((l) => lineRecord(l, 'main', 'n', 'warn')?.body ?? null), [null, null, 'w', 'e']);
  assert.deepEqual(lines.map((l) => lineRecord(l, 'main', 'n', 'error')?.body ?? null), [null, null, null, 'e']);
});

test('output that is not the logger JSON is an INFO record with the whole line; empty lines none', () => {
  for (const line of ['plain text from a library', '{not json', '[1,2]']) {
    const r = lineRecord(line, 'worker-0', 'n', 'info');
    assert.equal(r?.body, line);
    assert.equal(r?.severityText, 'INFO');
    assert.deepEqual(r?.attributes, { node: 'n', thread: 'worker-0' });
  }
  assert.equal(lineRecord('plain', 'main', 'n', 'warn'), null, 'INFO is below warn');
  assert.equal(lineRecord('', 'main', 'n', 'debug'), null);
  assert.equal(lineRecord('   ', 'main', 'n', 'debug'), null);
});

test('a line whose level is unknown counts as INFO; one without a time gets the time it was read', () => {
  const r = lineRecord(JSON.stringify({ level: 'fatal', msg: 'x' }), 'main', 'n', 'info');
  assert.equal(r?.severityText, 'INFO');
  assert.ok(Math.abs(r.timestamp - Date.now()) < 5000);
  assert.equal(lineRecord(JSON.stringify({ level: 'info', msg: { a: 1 } }), 'main', 'n', 'info')?.body, '{"a":1}');
});
