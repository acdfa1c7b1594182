// The relay of a worker's stdout: chunks go on unchanged, lines split across chunks come out
// whole, empty lines are skipped, and a last line without a newline is passed on at the end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough, Writable } from 'node:stream';

import { relayLines } from '../../src/log/line-relay.ts';

test('lines split across chunks come out whole; the output gets every byte; the last partial line at the end', async () => {
  const input = new PassThrough();
  const written: string[] = [];
  const output = new Writable({
    write(chunk, _enc, cb) {
      written.push(String(chunk));
      cb();
    },
  });
  const lines: string[] = [];
  const done = relayLines(input, output, (l) => lines.push(l));
  for (const chunk of ['{"a":', '1}\n{"b":2}\n\n{"c"', ':3}\nno newline é', 'nd']) input.write(chunk);
  input.end();
  await done;
  assert.deepEqual(lines, ['{"a":1}', '{"b":2}', '{"c":3}', 'no newline énd']);
  assert.equal(written.join(''), '{"a":1}\n{"b":2}\n\n{"c":3}\nno newline énd');
});
